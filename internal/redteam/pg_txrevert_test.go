package redteam

// PostgreSQL reverts SET, SET LOCAL and SET ROLE when the transaction or savepoint they
// ran in ends (COMMIT for SET LOCAL, ROLLBACK, ROLLBACK TO), and RESET ALL / DISCARD ALL
// bring back the connection's defaults: the per-connection table checks and the kept
// synchronous_commit verdict must not outlive such a revert.

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestSearchPathRevertRechecksTables: the session's search_path is s2, whose accounts
// has a REAL token column (refused by the lint). A transaction moves the path to public
// (SET LOCAL, or SET inside a savepoint, or SET rolled back), writes public.accounts
// (checked there, fine) and ends; the server reverts the path to s2. The same stale
// write afterwards must still be refused with ErrSchema, not accepted on the check made
// under the transaction's path.
func TestSearchPathRevertRechecksTables(t *testing.T) {
	for _, end := range []string{"commit_set_local", "rollback_to_savepoint", "rollback_set", "rollback_set_role"} {
		t.Run(end, func(t *testing.T) {
			b := postgresBackend()
			d := freshDB(t, b, entry{setup: []string{
				"CREATE SCHEMA s2",
				"CREATE TABLE s2.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token REAL NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
				"INSERT INTO s2.accounts VALUES (1, 100, 16777217, 0)", // stored as 16777216
				"DROP ROLE IF EXISTS s2", "CREATE ROLE s2", "GRANT s2 TO CURRENT_USER",
			}})
			t.Cleanup(func() { _, _ = d.raw.Exec("DROP OWNED BY s2"); _, _ = d.raw.Exec("DROP ROLE IF EXISTS s2") })
			w, _ := d.open(true, nil)
			conn, err := w.Conn(d.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			stale := fencedsql.WithToken(d.ctx, 16777216)
			const write = "UPDATE accounts SET balance = 999 WHERE id = 1"
			path := "SET search_path = s2"
			if end == "rollback_set_role" {
				path = `SET search_path = "$user", public` // s2 while the role is s2
				if _, err := conn.ExecContext(d.ctx, "SET ROLE s2"); err != nil {
					t.Fatal(err)
				}
				for _, g := range []string{"GRANT USAGE ON SCHEMA s2 TO s2", "GRANT ALL ON ALL TABLES IN SCHEMA s2 TO s2", "GRANT ALL ON ALL TABLES IN SCHEMA public TO s2", "GRANT USAGE ON SCHEMA public TO s2"} {
					d.must(g)
				}
			}
			if _, err := conn.ExecContext(d.ctx, path); err != nil {
				t.Fatal(err)
			}
			if _, err := conn.ExecContext(stale, write); !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("control: the write to s2.accounts (REAL token column): %v, want ErrSchema", err)
			}
			tx, err := conn.BeginTx(fencedsql.WithToken(d.ctx, 60), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			set := map[string]string{
				"commit_set_local":      "SET LOCAL search_path = public",
				"rollback_to_savepoint": "SET search_path = public",
				"rollback_set":          "SET search_path = public",
				"rollback_set_role":     "RESET ROLE", // "$user" no longer names s2
			}[end]
			if end == "rollback_to_savepoint" {
				if _, err := tx.ExecContext(d.ctx, "SAVEPOINT a"); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := tx.ExecContext(d.ctx, set); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(d.ctx, "UPDATE accounts SET balance = balance WHERE id = 2"); err != nil {
				t.Fatalf("write to public.accounts in the transaction: %v", err)
			}
			switch end {
			case "rollback_to_savepoint":
				if _, err := tx.ExecContext(d.ctx, "ROLLBACK TO SAVEPOINT a"); err != nil {
					t.Fatal(err)
				}
				_, err = tx.ExecContext(d.ctx, write) // under the transaction's token
				if !errors.Is(err, fencedsql.ErrSchema) {
					t.Errorf("the write inside the transaction after ROLLBACK TO: %v, want ErrSchema", err)
				}
				err = tx.Rollback()
			case "commit_set_local":
				err = tx.Commit()
			default:
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			_, err = conn.ExecContext(stale, write)
			var bal int64
			if qerr := d.raw.QueryRowContext(d.ctx, "SELECT balance FROM s2.accounts WHERE id = 1").Scan(&bal); qerr != nil {
				t.Fatal(qerr)
			}
			if bal == 999 || !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("the write after the path reverted to s2: %v (s2.accounts balance %d), want ErrSchema and nothing written", err, bal)
			}
		})
	}
}

// TestSyncCommitRevertIsCheckedAgain: under pgx the dialect reads synchronous_commit
// once per connection and keeps it. The DSN sets it off (refused). A SET to on lets
// a write through; when COMMIT (SET LOCAL), ROLLBACK, RESET ALL or DISCARD ALL brings
// the DSN's off back, the next guarded write must be refused again.
func TestSyncCommitRevertIsCheckedAgain(t *testing.T) {
	for _, form := range []string{"set_local_commit", "set_rollback", "reset_all", "discard_all"} {
		t.Run(form, func(t *testing.T) {
			b := postgresBackend()
			d := freshDB(t, b, entry{dsn: "options=-c%20synchronous_commit%3Doff"})
			pc, err := b.connector(d.dsn) // pgx's own connector: the dialect tracks the session
			if err != nil {
				t.Fatal(err)
			}
			w := fencedsql.OpenDB(pc, fencedsql.WithDialect(b.dialect), fencedsql.Guard("accounts"))
			defer w.Close()
			const write = "UPDATE accounts SET balance = balance + 1 WHERE id = 1"
			ctx := fencedsql.WithToken(d.ctx, 60)
			conn, err := w.Conn(d.ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, write); !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("control: synchronous_commit=off from the DSN: %v, want ErrSchema", err)
			}
			switch form {
			case "reset_all", "discard_all":
				if _, err := conn.ExecContext(ctx, "SET synchronous_commit = on"); err != nil {
					t.Fatal(err)
				}
				if _, err := conn.ExecContext(ctx, write); err != nil {
					t.Fatalf("write with synchronous_commit on: %v", err)
				}
				reset := map[string]string{"reset_all": "RESET ALL", "discard_all": "DISCARD ALL"}[form]
				if _, err := conn.ExecContext(ctx, reset); err != nil {
					t.Fatalf("%s: %v", reset, err)
				}
			default:
				tx, err := conn.BeginTx(ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback()
				set := map[string]string{"set_local_commit": "SET LOCAL synchronous_commit = on", "set_rollback": "SET synchronous_commit = on"}[form]
				if _, err := tx.ExecContext(ctx, set); err != nil {
					t.Fatalf("%s: %v", set, err)
				}
				if _, err := tx.ExecContext(ctx, write); err != nil {
					t.Fatalf("write with synchronous_commit on: %v", err)
				}
				if form == "set_rollback" {
					err = tx.Rollback()
				} else {
					err = tx.Commit()
				}
				if err != nil {
					t.Fatal(err)
				}
			}
			// DISCARD ALL drops the server's prepared statements too: pgx's statement
			// cache may fail (26000) a few times first; what matters is that no write is
			// accepted while synchronous_commit is off again.
			for i := 0; i < 15; i++ {
				_, err = conn.ExecContext(ctx, write)
				if err == nil || errors.Is(err, fencedsql.ErrSchema) {
					break
				}
			}
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("a guarded write once synchronous_commit is off again: %v, want ErrSchema", err)
			}
		})
	}
}
