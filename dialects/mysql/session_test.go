package mysql_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// The session suite (docs/design.md G11): sql_mode and character_set_client are
// verified before the first guarded write and after anything that may change them.
func TestSessionSettings(t *testing.T) {
	fencetest.RunSession(t, fencetest.MySQL(), mysql.Dialect, fencetest.MySQLSessionSetup, fencetest.MySQLSessionCases())
}
