package postgres_test

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestSearchPathMovedWithoutItsWord (red-team rt57a, held): spellings that move search_path
// without the word search_path or set_config in the text (U&"…" escapes, a bound
// parameter naming the setting, pg_settings) on a one-connection pool: either the
// statement is refused (typed) or the next stale write through the name does not land
// on the other schema's unguarded namesake with nullable fencing columns.
func TestSearchPathMovedWithoutItsWord(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := testdb.Postgres(t)
	admin := testdb.Open(t, "pgx", dsn, "CREATE SCHEMA pathword_x", "CREATE SCHEMA pathword_y",
		"CREATE TABLE pathword_x.accounts (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"CREATE TABLE pathword_y.accounts (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint, version bigint)")
	fencetest.Guard(t, ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "pathword_x.accounts"})
	moves := []struct {
		text string
		args []any
	}{
		{`SET U&"search\005fpath" = pathword_y, public`, nil},
		{`SET U&"search!005fpath" UESCAPE '!' TO pathword_y, public`, nil},
		{`SELECT U&"set\005fconfig"('search' || '_path', 'pathword_y, public', false)`, nil},
		{`UPDATE pg_settings SET setting = $1 WHERE name = $2`, []any{"pathword_y, public", "search_path"}},
		{`SELECT pg_catalog.set_config($1, $2, false)`, []any{"search_path", "pathword_y, public"}},
		{`SELECT * FROM pg_catalog.set_config(E'search\137path', 'pathword_y, public', false)`, nil},
		{`BEGIN; SET LOCAL search_path = pathword_y, public; COMMIT`, nil},
	}
	for i, m := range moves {
		testdb.Exec(t, admin, "DELETE FROM pathword_y.accounts",
			fmt.Sprintf("INSERT INTO pathword_x.accounts (id, balance, fence_token) VALUES (%d, 10, 100)", i+1),
			fmt.Sprintf("INSERT INTO pathword_y.accounts (id, balance) VALUES (%d, 10)", i+1))
		id := i + 1
		db := testdb.Open(t, "fenced-pgx", dsn+"&search_path=pathword_x,public&fenced_tables=accounts")
		db.SetMaxOpenConns(1)
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "UPDATE accounts SET balance = balance WHERE id = $1", id); err != nil {
			t.Fatalf("%d: warm: %v", i, err)
		}
		if _, err := db.ExecContext(ctx, m.text, m.args...); err != nil {
			t.Logf("%d %q: refused: %v", i, m.text, err)
			if !searchPathTyped(err) {
				t.Errorf("%d %q: untyped refusal %T %v", i, m.text, err, err)
			}
			_ = db.Close()
			continue
		}
		var cur string
		_ = db.QueryRowContext(ctx, "SHOW search_path").Scan(&cur)
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE accounts SET balance = 999 WHERE id = $1", id)
		var bx, by int64
		_ = admin.QueryRowContext(ctx, "SELECT balance FROM pathword_x.accounts WHERE id = $1", id).Scan(&bx)
		_ = admin.QueryRowContext(ctx, "SELECT balance FROM pathword_y.accounts WHERE id = $1", id).Scan(&by)
		t.Logf("%d %q: path now %s, stale write err %v, x %d y %d", i, m.text, cur, err, bx, by)
		if bx != 10 || by != 10 {
			t.Errorf("%d %q: stale write landed (path %s): x %d y %d (err %v)", i, m.text, cur, bx, by, err)
		}
		if err != nil && !searchPathTyped(err) {
			t.Errorf("%d: untyped %v", i, fmt.Sprint(err))
		}
		_ = db.Close()
	}
}
