package sqlite_test

import (
	"testing"

	_ "github.com/fencedsql/fencedsql/dialects/sqlite/sqlitesqlx"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

func TestConformance(t *testing.T) { fencetest.Run(t, fencetest.SQLite()) }
