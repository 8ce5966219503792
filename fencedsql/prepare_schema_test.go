// An explicitly prepared guarded write runs the table's lazy check before its rewrite
// is sent to be prepared (red-team rt48g F1).

package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"testing"

	"github.com/XSAM/otelsql"
	"github.com/jmoiron/sqlx"
	moderncsqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A guarded table without its fencing columns: every way of preparing a guarded write
// on it (db.Prepare with and without a context, tx.Prepare, a *sql.Conn's
// PrepareContext, sqlx's Preparex; UPDATE, INSERT and the two-statement DELETE), on
// the fenced driver alone and composed with otelsql in both orders, fails with the
// *SchemaError the Exec path returns, not the driver's "no such column".
func TestPrepareUnfitTableSchemaErrorSQLite(t *testing.T) {
	for _, layering := range []string{"fenced", "otelsql outside", "fenced outside"} {
		t.Run(layering, func(t *testing.T) {
			dsn := testdb.SQLite(t)
			var db *sql.DB
			var err error
			switch layering {
			case "fenced":
				db, err = sql.Open(sqlite.DriverName, dsn+"&fenced_tables=accounts&fenced_allow=ddl")
			case "otelsql outside":
				db, err = otelsql.Open(sqlite.DriverName, dsn+"&fenced_tables=accounts&fenced_allow=ddl")
			default:
				name := fmt.Sprintf("fenced-otel-sqlite-%d", otelDrivers.Add(1))
				fencedsql.Register(name, otelsql.WrapDriver(&moderncsqlite.Driver{}),
					fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"), fencedsql.WithDDL(true))
				db, err = sql.Open(name, dsn)
			}
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			if _, err := db.Exec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0)`); err != nil {
				t.Fatal(err)
			}
			prepareUnfit(t, db)
		})
	}
}

func prepareUnfit(t *testing.T, db *sql.DB) {
	ctx := fencedsql.WithToken(context.Background(), 7)
	texts := []string{
		`UPDATE accounts SET balance = 1 WHERE id = 1`,
		`INSERT INTO accounts (id, balance) VALUES (2, 3)`,
		`DELETE FROM accounts WHERE id = 1`,
	}
	prepares := map[string]func(q string) (*sql.Stmt, error){
		"db.PrepareContext": func(q string) (*sql.Stmt, error) { return db.PrepareContext(ctx, q) },
		"db.Prepare":        db.Prepare,
		"tx.PrepareContext": func(q string) (*sql.Stmt, error) {
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				return nil, err
			}
			defer tx.Rollback()
			return tx.PrepareContext(ctx, q)
		},
		"conn.PrepareContext": func(q string) (*sql.Stmt, error) {
			c, err := db.Conn(ctx)
			if err != nil {
				return nil, err
			}
			defer c.Close()
			return c.PrepareContext(ctx, q)
		},
		"sqlx.Preparex": func(q string) (*sql.Stmt, error) {
			st, err := sqlx.NewDb(db, "sqlite").PreparexContext(ctx, q)
			if err != nil {
				return nil, err
			}
			return st.Stmt, nil
		},
	}
	for _, q := range texts {
		if _, err := db.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrSchema) {
			t.Errorf("Exec %q: %v; want ErrSchema", q, err)
		}
		for name, prepare := range prepares {
			st, err := prepare(q)
			if err == nil {
				st.Close()
			}
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || se.Table != "accounts" || se.Fix == "" {
				t.Errorf("%s %q: %v; want the *SchemaError of the Exec path", name, q, err)
			}
		}
	}
}

// Prepare sends the table's column check before the rewrite, and nothing when the
// table lacks a fencing column; once the table's verdict is cached, it sends only the
// prepare (no new round trip). Under go-sqlmock, which fails any statement it does not
// expect.
func TestPrepareChecksTableBeforeSending(t *testing.T) {
	cases := map[string]struct {
		colsArgs []driver.Value
		in, out  string
	}{
		"postgres": {[]driver.Value{"accounts"}, `UPDATE accounts SET x = $1`,
			`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`},
		"mysql": {[]driver.Value{"", "accounts"}, `UPDATE accounts SET x = ?`,
			"UPDATE accounts SET x = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"},
		"sqlite": {[]driver.Value{"accounts"}, `UPDATE accounts SET x = ?`,
			`UPDATE accounts SET x = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`},
	}
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			c := cases[dc.name]
			db, mock := newMockDB(t, dc.d, fencedsql.WithSchemaCheck(true))
			cols := columnsQuery(dc.d)
			expectOpen(mock, dc.d, c.colsArgs)
			expectNamePath(mock, dc.d)
			mock.ExpectQuery(cols).WithArgs(c.colsArgs...).WillReturnRows(columnRows("id:1", "x:1", "fence_token:1"))
			_, err := db.PrepareContext(context.Background(), c.in)
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || se.Table != "accounts" {
				t.Fatalf("Prepare on a table without version: %v; want *SchemaError", err)
			}
			mockMet(t, mock)

			// Fixed: checked, then prepared; the second Prepare sends the prepare only.
			mock.ExpectQuery(cols).WithArgs(c.colsArgs...).WillReturnRows(columnRows(goodColumns...))
			expectLint(t, mock, dc.d, "accounts")
			for range 2 {
				mock.ExpectPrepare(c.out).WillBeClosed()
			}
			for range 2 {
				st, err := db.PrepareContext(context.Background(), c.in)
				if err != nil {
					t.Fatal(err)
				}
				st.Close()
			}
			mockMet(t, mock)
		})
	}
}
