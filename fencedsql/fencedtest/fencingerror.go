// The fencing error each dialect's database raises, for rejection expectations.

package fencedtest

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"strings"
	"sync"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// fencingError finds the token column by asking the wrapper: the dialect's NOT NULL
// error on the default token column, then on each quoted identifier of the statement,
// until the wrapper maps one to ErrFenced. The wrapper maps a NOT NULL only where it is
// of the guarded table (an error naming another table is that table's, not the
// fence's), so each column is probed on an error naming no table, then naming each
// word of the statement (SQLite's error always names one). The error is then rebuilt
// with the guarded table's name.
func (m *Mock) fencingError(ctx context.Context, query bool, userSQL string, args []driver.Value, sent string) (error, error) {
	candidates := append([]string{schema.DefaultTokenColumn}, quotedIdents(m.d, sent)...)
	tables := append([]string{""}, identWords(userSQL)...)
	seen := map[string]bool{}
	var lastErr error
	for _, col := range candidates {
		if seen[col] {
			continue
		}
		seen[col] = true
		for _, tbl := range tables {
			probe, err := FencingError(m.d, tbl, col)
			if err != nil {
				lastErr = err
				continue
			}
			_, err = m.rec.run(ctx, m.txOpen(), query, userSQL, args, probe)
			var fe *fencedsql.FencedError
			if errors.As(err, &fe) {
				table := fe.Table
				if i := strings.LastIndexByte(table, '.'); i >= 0 {
					table = table[i+1:]
				}
				return FencingError(m.d, table, col)
			}
		}
	}
	if lastErr != nil && !errors.Is(lastErr, errProbeTable) {
		return nil, lastErr
	}
	return nil, fmt.Errorf("no NOT NULL error of dialect %q makes the wrapper report ErrFenced for %q", m.d.Name(), userSQL)
}

// errProbeTable marks a probe table name SQLite cannot create (fencingError goes on).
var errProbeTable = errors.New("fencedtest: probe table")

// identWords lists the distinct words of sql that may name a table (letters, digits,
// underscores, not starting with a digit), in order.
func identWords(sql string) []string {
	var out []string
	seen := map[string]bool{}
	for _, w := range strings.FieldsFunc(sql, func(r rune) bool {
		return !(r == '_' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z' || r >= '0' && r <= '9')
	}) {
		if w[0] >= '0' && w[0] <= '9' || seen[w] {
			continue
		}
		seen[w] = true
		out = append(out, w)
	}
	return out
}

// quotedIdents lists the identifiers quoted in the dialect's style in sql.
func quotedIdents(d dialect.Dialect, sql string) []string {
	q := d.QuoteIdent("x")
	if len(q) < 3 {
		return nil
	}
	open, close := q[0], q[len(q)-1]
	var out []string
	for i := 0; i < len(sql); i++ {
		if sql[i] != open {
			continue
		}
		j := strings.IndexByte(sql[i+1:], close)
		if j < 0 {
			break
		}
		out = append(out, sql[i+1:i+1+j])
		i += j + 1
	}
	return out
}

// FencingError returns the error dialect d's database raises when a fenced write meets
// a newer token: a NOT NULL violation on the token column col of table. It knows the
// dialects this module ships, by d.Name(): "postgres" (*pgconn.PgError 23502), "mysql"
// (*mysql.MySQLError 1048) and "sqlite" (a real *sqlite.Error from the embedded SQLite,
// which needs the "fenced-sqlite" driver that importing dialects/sqlite registers).
// It returns that error (give it to WillReturnError; the wrapper maps it to
// fencedsql.ErrFenced), or a second, non-nil error when it cannot produce one: an
// unknown dialect, or SQLite without the fenced-sqlite driver.
func FencingError(d dialect.Dialect, table, col string) (error, error) {
	switch d.Name() {
	case "postgres":
		return &pgconn.PgError{
			Severity: "ERROR", Code: "23502",
			Message:    fmt.Sprintf("null value in column %q of relation %q violates not-null constraint", col, table),
			TableName:  table,
			ColumnName: col,
		}, nil
	case "mysql":
		return &mysql.MySQLError{Number: 1048, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: fmt.Sprintf("Column '%s' cannot be null", col)}, nil
	case "sqlite":
		return sqliteNotNull(table, col)
	}
	return nil, fmt.Errorf("fencedtest knows no fencing error for dialect %q", d.Name())
}

var sqliteErrs sync.Map // table + "\x00" + col → error

// sqliteNotNull produces SQLite's own NOT NULL violation on table.col by running one on
// an in-memory database (a *sqlite.Error cannot be built from outside its package).
func sqliteNotNull(table, col string) (error, error) {
	key := table + "\x00" + col
	if e, ok := sqliteErrs.Load(key); ok {
		return e.(error), nil
	}
	if !driverRegistered("fenced-sqlite") {
		return nil, errors.New(`the SQLite fencing error needs the "fenced-sqlite" driver: import _ "github.com/fencedsql/fencedsql/dialects/sqlite"`)
	}
	db, err := sql.Open("fenced-sqlite", ":memory:")
	if err != nil {
		return nil, err
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	q := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	if _, err := db.Exec(`CREATE TABLE ` + q(table) + ` (` + q(col) + ` INTEGER NOT NULL)`); err != nil {
		return nil, fmt.Errorf("producing the SQLite NOT NULL error: %w: %w", errProbeTable, err)
	}
	_, err = db.Exec(`INSERT INTO ` + q(table) + ` (` + q(col) + `) VALUES (NULL)`)
	if err == nil {
		return nil, errors.New("producing the SQLite NOT NULL error: the insert succeeded")
	}
	sqliteErrs.Store(key, err)
	return err, nil
}

func driverRegistered(name string) bool {
	for _, n := range sql.Drivers() {
		if n == name {
			return true
		}
	}
	return false
}
