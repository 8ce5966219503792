package postgres_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRaiseWaitsForMoreWriteKinds (red-team rt58d, held): G14 "a raise returns when
// no older write can still commit" for guarded writes TestRaiseWaitsForOpenWriter does
// not make — an upsert, an UPDATE under SERIALIZABLE — with
// raiseDuringOpenTx's oracle.
func TestRaiseWaitsForMoreWriteKinds(t *testing.T) {
	for _, c := range []struct {
		name string
		iso  sql.IsolationLevel
		q    string
	}{
		{"upsert", sql.LevelReadCommitted, "INSERT INTO accounts (id, balance) VALUES (1, 42) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance"},
		{"serializable-update", sql.LevelSerializable, "UPDATE accounts SET balance = 99 WHERE id = 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raisedFirst, commitErr, token := raiseDuringOpenTx(t, c.iso, c.q)
			if raisedFirst && commitErr == nil && token == 8 {
				t.Errorf("RaiseTokenFloor(10) returned while a %s transaction under token 8 was open (%s), and that transaction then committed its write below the floor", c.iso, c.q)
			}
		})
	}
}

// TestRaiseWaitsWhateverTheTableIsCalled (red-team rt58d, held): the settle's wait
// (OpenTransactionsQuery) finds the guarded tables by their guard trigger and its
// function's name: a table whose 63-byte name makes its guard objects' names hashed,
// and a partitioned table written through its parent, each with a holder of token 8
// paused between its write and COMMIT. Oracle: the raise does not return before the
// holder ends, or the holder's write is gone.
func TestRaiseWaitsWhateverTheTableIsCalled(t *testing.T) {
	long := strings.Repeat("a", 40) + "_" + strings.Repeat("b", 22)
	shapes := []struct{ name, create, ins, upd string }{ // a hashed guard name; a partitioned table written through its parent
		{"long", `CREATE TABLE "` + long + `" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`, long, long},
		{"partitioned", `CREATE TABLE pacc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) PARTITION BY RANGE (id);
			CREATE TABLE pacc_1 PARTITION OF pacc FOR VALUES FROM (0) TO (100)`, "pacc", "pacc"},
	}
	for _, c := range []struct {
		shape int
		op    string
	}{{0, "insert"}, {1, "update"}} {
		sh, op := shapes[c.shape], c.op
		{
			t.Run(sh.name+"/"+op, func(t *testing.T) {
				dsn := testdb.Postgres(t)
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				raw := testdb.Open(t, "pgx", dsn)
				for _, s := range strings.Split(sh.create, ";") {
					testdb.Exec(t, raw, s)
				}
				g := postgres.Dialect.(dialect.Guarder)
				testdb.Exec(t, raw, g.GuardDDL(dialect.CatalogName("public", sh.ins), "fence_token", "version")...)
				q := quotePG(sh.ins)
				testdb.Exec(t, raw, "INSERT INTO "+q+" (id, balance, fence_token, version) VALUES (1, 0, 5, 1), (2, 0, 5, 1)")
				db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables="+sh.ins))
				if err != nil {
					t.Fatal(err)
				}
				defer db.Close()
				tx, err := db.BeginTx(fencedsql.WithToken(ctx, 8), nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck
				w := map[string]string{
					"update": "UPDATE " + q + " SET balance = 99 WHERE id = 1",
					"insert": "INSERT INTO " + q + " (id, balance) VALUES (7, 1)",
					"delete": "DELETE FROM " + q + " WHERE id = 1",
				}[op]
				if _, err := tx.ExecContext(ctx, w); err != nil {
					t.Fatalf("%s under 8 before any floor: %v", w, err)
				}
				done := make(chan error, 1)
				go func() { done <- schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 10) }()
				raisedFirst := false
				select {
				case err := <-done:
					raisedFirst = err == nil
					if err != nil {
						t.Logf("raise: %v", err)
					}
				case <-time.After(1200 * time.Millisecond):
				}
				commitErr := tx.Commit()
				if !raisedFirst {
					<-done
				}
				var effect bool
				if err := raw.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM `+q+` WHERE id = 1 AND fence_token = 8)
					OR EXISTS (SELECT 1 FROM `+q+` WHERE id = 7 AND fence_token = 8) OR NOT EXISTS (SELECT 1 FROM `+q+` WHERE id = 1)`).Scan(&effect); err != nil {
					t.Fatal(err)
				}
				if raisedFirst && commitErr == nil && effect {
					t.Errorf("RaiseTokenFloor(10) returned nil while a transaction under 8 that had written %s (%s) was open; it then committed its write below the floor", q, w)
				}
			})
		}
	}
}

// TestRaiseWaitsForPreparedWriter (red-team rt58d, held; needs a server with
// max_prepared_transactions > 0, as scripts/servers.sh configures it, else skipped).
// A writer that commits in two phases (a transaction manager: PREPARE TRANSACTION,
// then COMMIT PREPARED) writes row 1 under token 8 through the guard (a raw session
// stamping the token as the wrapper does: accepted, no floor yet), and prepares before
// the raise, or while the raise is settling (its session's transaction then ends, its
// locks passing to the prepared transaction). Oracle: RaiseTokenFloor(10) does not
// return nil before COMMIT PREPARED, or the write under 8 is not left.
func TestRaiseWaitsForPreparedWriter(t *testing.T) {
	for _, when := range []string{"prepare-before", "prepare-during-settle"} {
		t.Run(when, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			raw := testdb.Open(t, "pgx", dsn,
				"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			var mpt int
			if err := raw.QueryRowContext(ctx, "SELECT current_setting('max_prepared_transactions')::int").Scan(&mpt); err != nil || mpt == 0 {
				t.Skipf("max_prepared_transactions = %d (%v): needs a server that allows PREPARE TRANSACTION", mpt, err)
			}
			g := postgres.Dialect.(dialect.Guarder)
			testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
			testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1), (2, 0, 5, 1)")
			gid := "fencedsql_test_" + strings.ReplaceAll(when, "-", "_")
			defer raw.ExecContext(context.Background(), "ROLLBACK PREPARED '"+gid+"'") //nolint:errcheck
			writer, err := raw.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer writer.Close()
			for _, q := range []string{"BEGIN", "UPDATE accounts SET balance = 99, fence_token = 8, version = version + 1 WHERE id = 1"} {
				if _, err := writer.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			prepare := func() {
				if _, err := writer.ExecContext(ctx, "PREPARE TRANSACTION '"+gid+"'"); err != nil {
					t.Fatal(err)
				}
			}
			if when == "prepare-before" {
				prepare()
			}
			done := make(chan error, 1)
			go func() { done <- schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 10) }()
			if when == "prepare-during-settle" {
				// Wait until the raise is committed (the copy moved) and settling.
				for i := 0; ; i++ {
					var f int64
					if err := raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&f); err != nil {
						t.Fatal(err)
					}
					if f == 10 {
						break
					}
					if i > 200 {
						t.Fatal("the raise never committed")
					}
					time.Sleep(10 * time.Millisecond)
				}
				time.Sleep(300 * time.Millisecond)
				select {
				case err := <-done:
					t.Fatalf("RaiseTokenFloor returned (%v) while the writer under 8 was still open", err)
				default:
				}
				prepare()
			}
			raisedFirst := false
			select {
			case err := <-done:
				if err != nil {
					t.Fatalf("RaiseTokenFloor: %v", err)
				}
				raisedFirst = true
			case <-time.After(1500 * time.Millisecond):
			}
			_, commitErr := raw.ExecContext(ctx, "COMMIT PREPARED '"+gid+"'")
			if !raisedFirst {
				if err := <-done; err != nil {
					t.Fatalf("RaiseTokenFloor: %v", err)
				}
			}
			var tok int64
			if err := raw.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tok); err != nil {
				t.Fatal(err)
			}
			t.Logf("raise returned before COMMIT PREPARED: %v; commit: %v; row 1 token %d", raisedFirst, commitErr, tok)
			if raisedFirst && commitErr == nil && tok == 8 {
				t.Errorf("RaiseTokenFloor(10) returned nil while a transaction that wrote row 1 under token 8 was prepared (%s) and not yet committed; COMMIT PREPARED then stored token 8 below the floor 10", when)
			}
		})
	}
}
