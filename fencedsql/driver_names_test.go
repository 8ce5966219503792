// The fenced driver names: registered even when registered twice, and what sqlx makes of them.

package fencedsql_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"slices"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"
	"github.com/jmoiron/sqlx"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"

	// The dialects register the fenced driver names and their sqlx bind styles.
	_ "github.com/fencedsql/fencedsql/dialects/mysql"
	_ "github.com/fencedsql/fencedsql/dialects/postgres"
	_ "github.com/fencedsql/fencedsql/dialects/sqlite"
)

// Registering the same driver with the same options again does nothing; anything else
// under a name already registered panics instead of being lost without a word: a name
// another driver holds (its connections would fence nothing), another driver, or other
// options (Guard options that would guard nothing).
func TestRegisterTwice(t *testing.T) {
	rec := newFakeRec()
	name := registerFake(t, &fakeDriver{rec: rec})
	again := []fencedsql.Option{fencedsql.WithDialect(postgres.Dialect)}
	fencedsql.Register(name, &fakeDriver{rec: rec}, again...) // the same again: no panic
	for _, n := range []string{"fenced-pgx", "fenced-mysql", "fenced-sqlite", name} {
		if !slices.Contains(sql.Drivers(), n) {
			t.Errorf("%s is not registered", n)
		}
	}
	sql.Register("fenced-plain-"+name, &fakeDriver{rec: rec})
	for what, register := range map[string]func(){
		"a name another driver holds": func() { fencedsql.Register("fenced-plain-"+name, &fakeDriver{rec: rec}) },
		"another driver":              func() { fencedsql.Register(postgres.DriverName, &fakeDriver{rec: rec}) },
		"Guard options":               func() { fencedsql.Register(name, &fakeDriver{rec: rec}, append(again, fencedsql.Guard("accounts"))...) },
		"strict mode":                 func() { fencedsql.Register(name, &fakeDriver{rec: rec}, append(again, fencedsql.WithStrict(true))...) },
		"the dialect's own options": func() {
			fencedsql.Register(postgres.DriverName, stdlib.GetDefaultDriver(), fencedsql.Guard("accounts"))
		},
	} {
		t.Run(what, func(t *testing.T) {
			defer func() {
				if recover() == nil {
					t.Fatal("no panic")
				}
			}()
			register()
		})
	}
	// The dialect's registration again, as a second package would make it.
	fencedsql.Register(postgres.DriverName, stdlib.GetDefaultDriver(), fencedsql.WithDialect(postgres.Dialect))
}

func TestSqlxBindTypes(t *testing.T) {
	for name, want := range map[string]int{
		"fenced-pgx":    sqlx.DOLLAR,
		"fenced-mysql":  sqlx.QUESTION,
		"fenced-sqlite": sqlx.QUESTION,
	} {
		if got := sqlx.BindType(name); got != want {
			t.Errorf("sqlx.BindType(%q) = %d, want %d", name, got, want)
		}
	}
	if got := sqlx.Rebind(sqlx.BindType("fenced-pgx"), "UPDATE accounts SET x = ? WHERE id = ?"); got != "UPDATE accounts SET x = $1 WHERE id = $2" {
		t.Errorf("Rebind = %q", got)
	}
}

// sqlx over the embedded SQLite: named queries, rebinding and Get work through the
// wrapper.
func TestSqlxOverFencedSQLite(t *testing.T) {
	dsn := "file:" + filepath.Join(t.TempDir(), "x.db") + "?fenced_tables=accounts&fenced_allow=ddl"
	db, err := sqlx.Open("fenced-sqlite", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.MustExec(`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	ctx := fencedsql.WithToken(context.Background(), 3)
	if _, err := db.NamedExecContext(ctx, `INSERT INTO accounts (id, balance) VALUES (:id, :balance)`, map[string]any{"id": 1, "balance": 10}); err != nil {
		t.Fatal(err)
	}
	var row struct {
		Balance int64  `db:"balance"`
		Token   uint64 `db:"fence_token"`
		Version int64  `db:"version"`
	}
	if err := db.GetContext(ctx, &row, db.Rebind(`SELECT balance, fence_token, version FROM accounts WHERE id = ?`), 1); err != nil {
		t.Fatal(err)
	}
	if row.Balance != 10 || row.Token != 3 || row.Version != 1 {
		t.Errorf("row = %+v", row)
	}
}
