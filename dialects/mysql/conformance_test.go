package mysql_test

import (
	"testing"

	_ "github.com/fencedsql/fencedsql/dialects/mysql/mysqlsqlx"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

func TestConformance(t *testing.T) { fencetest.Run(t, fencetest.MySQL()) }
