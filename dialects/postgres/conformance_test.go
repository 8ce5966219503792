package postgres_test

import (
	"testing"

	_ "github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

func TestConformance(t *testing.T) { fencetest.Run(t, fencetest.Postgres()) }
