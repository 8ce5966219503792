package redteam

import (
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Tokens: rows are seeded with seedToken; a stale writer carries staleToken, a newer one
// freshToken.
const (
	seedToken  = 50
	staleToken = 10
	freshToken = 100
)

// expect is what the fenced driver must do with an entry.
type expect int

const (
	// Refused: ErrUnsupported with a stale and with a fresh token, nothing changed.
	Refused expect = iota
	// Fenced: ErrFenced with a stale token, nothing changed; with a fresh token it does
	// what the raw driver did (fencing columns aside) and stamps the rows it changed.
	Fenced
	// Exact (DELETE exactness): with a stale token ErrUnsupported or ErrFenced, nothing
	// changed; if it is not refused, with a fresh token it leaves exactly the rows the
	// raw driver left.
	Exact
	// NoToken: without a token ErrNoToken, nothing changed.
	NoToken
	// Claim: a locking read of a guarded table (no change on the raw driver); with a
	// stale token ErrFenced and nothing changed, with a fresh one it stamps the rows.
	Claim
	// Harmless: results, resulting database and the text reaching the driver are
	// those of the raw driver.
	Harmless
)

func (e expect) String() string {
	return [...]string{"Refused", "Fenced", "Exact", "NoToken", "Claim", "Harmless"}[e]
}

// step is one statement of an entry; the steps run in order on one connection.
type step struct {
	sql   string
	args  []any
	query bool // QueryContext (rows are read); otherwise ExecContext
}

// entry is one line of the catalogue.
type entry struct {
	class string // "1 not a write", "2 dynamic SQL", …
	name  string
	setup []string // plain SQL on the raw driver before the statements (after the seed)
	steps []step
	then  []string // plain SQL on the raw driver after the statements (fires a trigger, calls a function, …)
	want  expect
	tx    bool   // Harmless: run the steps inside BeginTx
	noTok bool   // Harmless: run without a token
	dsn   string // extra DSN parameter ("default_query_exec_mode=simple_protocol")
}

// s builds a step; statements that return rows (SELECT, VALUES, SHOW, EXPLAIN, WITH …
// SELECT, RETURNING) are run with QueryContext.
func s(sql string, args ...any) step {
	return step{sql: sql, args: args, query: returnsRows(sql)}
}

// x builds a step run with ExecContext whatever it is.
func x(sql string, args ...any) step { return step{sql: sql, args: args} }

// q builds a step run with QueryContext whatever it is.
func q(sql string, args ...any) step { return step{sql: sql, args: args, query: true} }

func returnsRows(sql string) bool {
	u := strings.ToUpper(stripLeading(sql))
	for _, h := range []string{"SELECT", "VALUES", "SHOW", "EXPLAIN", "TABLE", "PRAGMA", "DESC"} {
		if strings.HasPrefix(u, h) {
			return true
		}
	}
	if strings.HasPrefix(u, "WITH") && !strings.Contains(u, "RETURNING") {
		// WITH … SELECT reads; WITH … UPDATE/INSERT without RETURNING does not
		i := strings.LastIndex(u, ")")
		return i >= 0 && strings.Contains(u[i:], "SELECT")
	}
	return strings.Contains(u, "RETURNING")
}

// stripLeading drops leading blanks and comments.
func stripLeading(sql string) string {
	for {
		sql = strings.TrimLeft(sql, " \t\r\n(")
		switch {
		case strings.HasPrefix(sql, "--"):
			i := strings.IndexByte(sql, '\n')
			if i < 0 {
				return ""
			}
			sql = sql[i+1:]
		case strings.HasPrefix(sql, "/*") && !strings.HasPrefix(sql, "/*!"):
			i := strings.Index(sql, "*/")
			if i < 0 {
				return ""
			}
			sql = sql[i+2:]
		default:
			return sql
		}
	}
}

// backend is one database for the catalogue.
type backend struct {
	name      string
	dialect   dialect.Dialect
	freshDSN  func(testing.TB) string
	connector func(dsn string) (driver.Connector, error) // the raw driver's connector
	withParam func(dsn, kv string) string
	schema    []string // accounts, ledger and their rows
	catalog   []string // queries of one text column describing the schema
	tables    string   // query of the base tables' names
	quote     func(string) string
	only      string // "ONLY " on PostgreSQL: rows of a parent table without its children
}
