package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt65a F4: a locking read under a token with text after its locking clause
// that the claim cannot carry (a set operation's other branch, words PostgreSQL
// rejects) returned the claim's rows and no error: the claim rebuilds the read up to
// the clause, so the text was dropped and the statement run was not the caller's.
// Now it is refused (ErrUnsupported) before anything is sent: no row stamped, while the
// raw driver gives PostgreSQL's syntax error for the same text.
func TestLockingReadTailAfterClauseRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)",
		"INSERT INTO acc (id, balance, fence_token, version) VALUES (1, 5, 30, 1), (2, 5, 30, 1)")
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=acc"))
	for _, q := range []string{
		"SELECT id FROM acc WHERE id = 1 FOR UPDATE UNION ALL SELECT id FROM acc WHERE id = 2",
		"SELECT id FROM acc WHERE id = 1 FOR UPDATE UNION ALL SELECT 2",
		"SELECT id FROM acc WHERE id = 1 FOR UPDATE garbage words",
		"SELECT id FROM acc WHERE id = 1 FOR SHARE NOWAIT garbage",
	} {
		if _, err := raw.Exec(q); err == nil {
			t.Fatalf("the raw driver accepted %q", q)
		}
		ctx := fencedsql.WithToken(context.Background(), 50)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, qerr := tx.QueryContext(ctx, q)
		n := 0
		if qerr == nil {
			for rows.Next() {
				n++
			}
			qerr = rows.Err()
			rows.Close()
		}
		if cerr := tx.Commit(); qerr == nil && cerr != nil {
			qerr = cerr
		}
		if !errors.Is(qerr, fencedsql.ErrUnsupported) {
			t.Errorf("%q under token 50: %d row(s), %v; want ErrUnsupported (the text after the locking clause is not dropped)", q, n, qerr)
		}
		var stamped int
		if err := raw.QueryRow("SELECT count(*) FROM acc WHERE fence_token <> 30").Scan(&stamped); err != nil || stamped != 0 {
			t.Fatalf("after %q: %d row(s) stamped, %v; want none", q, stamped, err)
		}
	}
	// The clause alone is claimed as before.
	ctx := fencedsql.WithToken(context.Background(), 50)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	if err := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = 1 FOR UPDATE;").Scan(&id); err != nil || id != 1 {
		t.Fatalf("a plain locking read: %d, %v", id, err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var tok int64
	if err := raw.QueryRow("SELECT fence_token FROM acc WHERE id = 1").Scan(&tok); err != nil || tok != 50 {
		t.Fatalf("row 1 after the claim: token %d, %v; want 50", tok, err)
	}
}
