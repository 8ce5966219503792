package postgres

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ConnectionLost implements dialect.ConnLossJudge: pgx's closed connection
// (pgconn.ErrConnClosed), and a server error that ends the session — severity FATAL
// or PANIC (57P01 admin_shutdown of a fast shutdown, a restart, pg_terminate_backend
// or a failover's fencing of the old primary; 57P02 crash_shutdown; 57P03
// cannot_connect_now; an idle-session timeout …) or class 08 (connection exception).
// An ERROR the session survives (a constraint, a serialization failure, 57014
// query_canceled by a statement timeout) is not one.
func (dialectImpl) ConnectionLost(err error) bool {
	if errors.Is(err, pgconn.ErrConnClosed) {
		return true
	}
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return false
	}
	severity := pe.SeverityUnlocalized
	if severity == "" {
		severity = pe.Severity
	}
	switch {
	case severity == "FATAL", severity == "PANIC":
		return true
	case strings.HasPrefix(pe.Code, "08"):
		return true
	}
	switch pe.Code {
	case "57P01", "57P02", "57P03":
		return true
	}
	return false
}

var _ dialect.ConnLossJudge = dialectImpl{}
