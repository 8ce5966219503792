package postgres_test

// The lock a claim by row locator holds (plan.claimLockClause): the read's strength,
// never weaker than FOR NO KEY UPDATE, the claim's own UPDATE's lock (red-team rt37d F1).

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// lockStrengthEnv creates accounts (rows 1 and 2, token 0) and a child table
// referencing it, and returns the plain and the fenced pool.
func lockStrengthEnv(t *testing.T) (raw, db *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts VALUES (1, 5, 0, 0), (2, 7, 0, 0)`,
		`CREATE TABLE lock_child (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL REFERENCES accounts (id))`)
	db = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	return raw, db
}

// tokensOf returns the fence tokens of accounts rows 1 and 2.
func tokensOf(t *testing.T, raw *sql.DB) [2]int64 {
	t.Helper()
	var got [2]int64
	for i := range got {
		if err := raw.QueryRow(`SELECT fence_token FROM accounts WHERE id = $1`, i+1).Scan(&got[i]); err != nil {
			t.Fatal(err)
		}
	}
	return got
}

// A claim by row locator of a read FOR NO KEY UPDATE NOWAIT, while another transaction
// inserts a row referencing the read row (its foreign-key check holds FOR KEY SHARE,
// which FOR NO KEY UPDATE does not conflict with), claims and returns the row, as the
// plain driver returns it. It locked FOR UPDATE NOWAIT and failed with the server's
// raw 55P03, aborting the caller's transaction (red-team rt37d F1). A read FOR UPDATE
// NOWAIT still fails there, as the plain read does.
func TestClaimByLocatorNowaitBesideReferencingInsert(t *testing.T) {
	for _, c := range []struct {
		q       string
		blocked bool
	}{
		{`SELECT id, balance FROM accounts WHERE id = 1 FOR NO KEY UPDATE NOWAIT`, false},
		{`SELECT id, balance FROM accounts WHERE id = 1 FOR SHARE NOWAIT`, false},
		{`SELECT id, balance FROM accounts WHERE id = 1 FOR KEY SHARE NOWAIT`, false},
		// The two-statement form (a subquery in the select list keeps it).
		{`SELECT id, (SELECT balance) FROM accounts WHERE id = 1 FOR NO KEY UPDATE NOWAIT`, false},
		{`SELECT id, balance FROM accounts WHERE id = 1 FOR UPDATE NOWAIT`, true},
	} {
		t.Run(c.q, func(t *testing.T) {
			t.Parallel() // a database of its own (lockStrengthEnv)
			raw, db := lockStrengthEnv(t)
			h, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			defer h.Rollback()
			if _, err := h.Exec(`INSERT INTO lock_child VALUES (1, 1)`); err != nil {
				t.Fatal(err)
			}
			ptx, err := raw.Begin()
			if err != nil {
				t.Fatal(err)
			}
			var pid, pb int64
			perr := ptx.QueryRow(c.q).Scan(&pid, &pb)
			_ = ptx.Rollback()
			if plainBlocked := perr != nil; plainBlocked != c.blocked {
				t.Fatalf("set-up: the plain driver's read: %v; want blocked %v", perr, c.blocked)
			}
			ctx, cancel := context.WithTimeout(fencedsql.WithToken(context.Background(), 8), 5*time.Second)
			defer cancel()
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			var id, b int64
			err = tx.QueryRowContext(ctx, c.q).Scan(&id, &b)
			if c.blocked {
				if err == nil || !strings.Contains(err.Error(), "55P03") {
					t.Fatalf("%s beside a referencing insert: %v; want the server's 55P03, as the plain read", c.q, err)
				}
				return
			}
			if err != nil {
				t.Fatalf("%s beside a referencing insert: %v; the plain driver returns row %d", c.q, err, pid)
			}
			if id != 1 {
				t.Fatalf("claim returned row %d, want 1", id)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if got := tokensOf(t, raw); got != [2]int64{8, 0} {
				t.Fatalf("tokens after the claim %v, want [8 0]: the row returned, and only it, is claimed", got)
			}
		})
	}
}

// A claim by row locator (ORDER BY … LIMIT, OFFSET) of a read FOR NO KEY UPDATE, FOR
// SHARE or FOR KEY SHARE lets a concurrent insert of a row referencing the claimed row
// through (its foreign-key check takes FOR KEY SHARE), as the plain read does: it held
// FOR UPDATE to the end of the transaction and every such insert waited (red-team
// rt37d F1). A read FOR UPDATE still blocks it, as the plain read does.
func TestClaimByLocatorWindowAndReferencingInsert(t *testing.T) {
	for _, c := range []struct {
		q       string
		blocked bool
	}{
		{`SELECT id, balance FROM accounts WHERE id >= 1 ORDER BY id LIMIT 1 FOR NO KEY UPDATE`, false},
		{`SELECT id, balance FROM accounts WHERE id >= 1 ORDER BY id LIMIT 1 FOR SHARE`, false},
		{`SELECT id, balance FROM accounts WHERE id >= 1 ORDER BY id LIMIT 1 FOR KEY SHARE`, false},
		{`SELECT id, balance FROM accounts WHERE id >= 1 ORDER BY id LIMIT 1 OFFSET 0 FOR NO KEY UPDATE`, false},
		// The two-statement form (a subquery in the select list keeps it).
		{`SELECT id, (SELECT balance) FROM accounts WHERE id >= 1 ORDER BY id LIMIT 1 FOR SHARE`, false},
		{`SELECT id, balance FROM accounts WHERE id >= 1 ORDER BY id LIMIT 1 FOR UPDATE`, true},
		{`SELECT id, balance FROM accounts WHERE id >= 1 ORDER BY id LIMIT 1 OFFSET 0 FOR UPDATE`, true},
	} {
		t.Run(c.q, func(t *testing.T) {
			t.Parallel() // databases of its own (lockStrengthEnv)
			for _, fenced := range []bool{false, true} {
				raw, db := lockStrengthEnv(t)
				pool, ctx := raw, context.Background()
				if fenced {
					pool, ctx = db, fencedsql.WithToken(ctx, 8)
				}
				ctx, cancel := context.WithTimeout(ctx, 5*time.Second)
				defer cancel()
				tx, err := pool.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				var id, b int64
				if err := tx.QueryRowContext(ctx, c.q).Scan(&id, &b); err != nil {
					t.Fatal(err)
				}
				if id != 1 {
					t.Fatalf("read row %d, want 1", id)
				}
				conn, err := raw.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer conn.Close()
				if _, err := conn.ExecContext(ctx, "SET lock_timeout = '300ms'"); err != nil {
					t.Fatal(err)
				}
				_, err = conn.ExecContext(ctx, `INSERT INTO lock_child VALUES (1, 1)`)
				blocked := err != nil && strings.Contains(err.Error(), "lock timeout")
				if err != nil && !blocked {
					t.Fatal(err)
				}
				if blocked != c.blocked {
					t.Fatalf("fenced %v: a referencing insert beside the read: %v; want blocked %v", fenced, err, c.blocked)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				want := [2]int64{0, 0}
				if fenced {
					want[0] = 8
				}
				if got := tokensOf(t, raw); got != want {
					t.Fatalf("fenced %v: tokens after the read %v, want %v: the row returned, and only it, is claimed", fenced, got, want)
				}
			}
		})
	}
}
