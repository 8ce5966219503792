// A fresh database per entry, and running an entry's steps on it.

package redteam

import (
	"context"
	"database/sql"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// ---------------------------------------------------------------- databases

// dbs is one fresh database: a raw pool (setup, snapshots) and how to open pools on it.
type dbs struct {
	t   *testing.T
	b   backend
	dsn string
	raw *sql.DB
	ctx context.Context
}

func freshDB(t *testing.T, b backend, e entry) *dbs {
	t.Helper()
	dsn := b.freshDSN(t)
	if e.dsn != "" {
		dsn = b.withParam(dsn, e.dsn)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	t.Cleanup(cancel)
	d := &dbs{t: t, b: b, dsn: dsn, ctx: ctx}
	d.raw, _ = d.open(false, nil)
	for _, stmt := range b.schema {
		d.must(stmt)
	}
	for _, stmt := range e.setup {
		d.must(stmt)
	}
	return d
}

// open returns a pool on the database, fenced or raw, recording through rec when set.
func (d *dbs) open(fenced bool, rec *recorder) (*sql.DB, *recorder) {
	d.t.Helper()
	c, err := d.b.connector(d.dsn)
	if err != nil {
		d.t.Fatalf("%s connector: %v", d.b.name, err)
	}
	if rec == nil {
		rec = &recorder{}
	}
	rc := recConnector{raw: c, rec: rec}
	var db *sql.DB
	if fenced {
		db = fencedsql.OpenDB(rc, fencedsql.WithDialect(d.b.dialect), fencedsql.Guard("accounts"))
	} else {
		db = sql.OpenDB(rc)
	}
	d.t.Cleanup(func() { db.Close() })
	return db, rec
}

func (d *dbs) must(stmt string) {
	d.t.Helper()
	if _, err := d.raw.ExecContext(d.ctx, stmt); err != nil {
		d.t.Fatalf("setup on the raw driver: %s\n  %v", stmt, err)
	}
}

// ---------------------------------------------------------------- running

// result is what a run returned: one line per step.
type result struct {
	lines []string
	err   error // the first error; the steps after it did not run
	at    int   // index of the failing step
}

// run executes the steps in order on one connection (or in one BeginTx transaction)
// and stops at the first error.
func run(ctx context.Context, db *sql.DB, e entry) result {
	var r result
	type execQuerier interface {
		ExecContext(context.Context, string, ...any) (sql.Result, error)
		QueryContext(context.Context, string, ...any) (*sql.Rows, error)
	}
	var on execQuerier
	var tx *sql.Tx
	if e.tx || e.want == Claim { // a claim belongs in a transaction
		var err error
		if tx, err = db.BeginTx(ctx, nil); err != nil {
			return result{err: fmt.Errorf("BeginTx: %w", err)}
		}
		on = tx
	} else {
		conn, err := db.Conn(ctx)
		if err != nil {
			return result{err: fmt.Errorf("Conn: %w", err)}
		}
		defer conn.Close()
		on = conn
	}
	for i, st := range e.steps {
		line, err := runStep(ctx, on, st)
		if err != nil {
			r.err, r.at = err, i
			if tx != nil {
				_ = tx.Rollback()
			}
			return r
		}
		r.lines = append(r.lines, line)
	}
	if tx != nil {
		if err := tx.Commit(); err != nil {
			r.err, r.at = fmt.Errorf("Commit: %w", err), len(e.steps)
		}
	}
	return r
}

func runStep(ctx context.Context, on interface {
	ExecContext(context.Context, string, ...any) (sql.Result, error)
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, st step) (string, error) {
	if !st.query {
		res, err := on.ExecContext(ctx, st.sql, st.args...)
		if err != nil {
			return "", err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return "affected: " + err.Error(), nil
		}
		return fmt.Sprintf("affected %d", n), nil
	}
	rows, err := on.QueryContext(ctx, st.sql, st.args...)
	if err != nil {
		return "", err
	}
	defer rows.Close()
	out, err := readRows(rows)
	if err != nil {
		return "", err
	}
	return strings.Join(out, "\n"), nil
}

// readRows renders every row as "col=value|…" (columns included, so a changed column
// list shows).
func readRows(rows *sql.Rows) ([]string, error) {
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return nil, err
		}
		parts := make([]string, len(cols))
		for i, v := range vals {
			parts[i] = cols[i] + "=" + render(v)
		}
		out = append(out, strings.Join(parts, "|"))
	}
	return out, rows.Err()
}

func render(v any) string {
	switch v := v.(type) {
	case nil:
		return "NULL"
	case []byte:
		return string(v)
	case time.Time:
		return v.UTC().Format(time.RFC3339Nano)
	default:
		return fmt.Sprint(v)
	}
}

// runThen runs the entry's follow-up statements on the raw driver.
func (d *dbs) runThen(e entry, mustWork bool) {
	d.t.Helper()
	for _, stmt := range e.then {
		if _, err := d.raw.ExecContext(d.ctx, stmt); err != nil && mustWork {
			d.t.Fatalf("follow-up on the raw driver: %s\n  %v", stmt, err)
		}
	}
}
