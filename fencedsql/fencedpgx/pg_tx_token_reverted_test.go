package fencedpgx_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// Red-team rt60a F1–F3 through fencedpgx: the transaction's recorded token
// (fencedsql_guard.tx_token) reverted by a ROLLBACK TO SAVEPOINT (or RESET ALL) that
// the engine does not see as reverting it before the deletion runs.
// Schedule: par/kid ON DELETE CASCADE, kid guarded with tombstones; tx under l1;
// UPDATE kid (stamp l1); SAVEPOINT s; SELECT 1 under l3 (recorded l3); the attack;
// DELETE FROM par (cascade) under l3; COMMIT. Oracle: kid's tombstone >= l3 and an
// INSERT of kid under l2 (between) is ErrFenced.

// pgxExec is fencetest.RaisedTombstone's exec through c.
func pgxExec(c *fencedpgx.Conn) func(ctx context.Context, query string) error {
	return func(ctx context.Context, query string) error {
		_, err := c.Exec(ctx, query)
		return err
	}
}

// txTokPgxSetup makes par and kid (fencetest.ParKidTables) and runs extra, guards kid
// with tombstones and par too when guardPar, and returns a raw pool and a fenced pgx
// connection whose pgx config carries tracer (nil: none).
func txTokPgxSetup(t *testing.T, ctx context.Context, guardPar bool, tracer pgx.QueryTracer, extra ...string) (*sql.DB, *fencedpgx.Conn) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, q := range append(fencetest.ParKidTables(), extra...) {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	tables := []string{"kid"}
	if guardPar {
		tables = append(tables, "par")
	}
	for _, tb := range tables {
		reps, err := fschema.Check(ctx, raw, postgres.Dialect, fschema.GuardSpec{Table: tb})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reps {
			for _, q := range r.Fix {
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
		}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Tracer = tracer
	pc, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	opts := []fencedsql.Option{}
	for _, tb := range tables {
		opts = append(opts, fencedsql.Guard(tb))
	}
	c, err := fencedpgx.NewConn(pc, opts...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close(context.Background()) })
	return raw, c
}

func TestTxTokenPgxSavepointRevertForms(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	type form struct {
		name string
		// attack runs after the raising statement, under l3 (ctx3), and must include
		// the deletion of par key k.
		attack func(tx pgx.Tx, c *fencedpgx.Conn, ctx3 context.Context, k int) error
	}
	del := func(k int) string { return fmt.Sprintf("DELETE FROM par WHERE id = %d", k) }
	forms := []form{
		{"text", func(tx pgx.Tx, c *fencedpgx.Conn, ctx3 context.Context, k int) error {
			if _, err := tx.Exec(ctx3, "ROLLBACK TO SAVEPOINT s"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx3, del(k))
			return err
		}},
		{"prepared", func(tx pgx.Tx, c *fencedpgx.Conn, ctx3 context.Context, k int) error {
			name := fmt.Sprintf("rb%d", k)
			if _, err := c.Prepare(ctx3, name, "ROLLBACK TO SAVEPOINT s"); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx3, name); err != nil {
				return err
			}
			_, err := tx.Exec(ctx3, del(k))
			return err
		}},
		{"batch", func(tx pgx.Tx, c *fencedpgx.Conn, ctx3 context.Context, k int) error {
			b := &pgx.Batch{}
			b.Queue("ROLLBACK TO SAVEPOINT s")
			b.Queue(del(k))
			return tx.SendBatch(ctx3, b).Close()
		}},
		{"batch-reset-all", func(tx pgx.Tx, c *fencedpgx.Conn, ctx3 context.Context, k int) error {
			b := &pgx.Batch{}
			b.Queue("RESET ALL")
			b.Queue(del(k))
			return tx.SendBatch(ctx3, b).Close()
		}},
		{"reset-all", func(tx pgx.Tx, c *fencedpgx.Conn, ctx3 context.Context, k int) error {
			if _, err := tx.Exec(ctx3, "RESET ALL"); err != nil {
				return err
			}
			_, err := tx.Exec(ctx3, del(k))
			return err
		}},
	}
	for _, guardPar := range []bool{true, false} {
		t.Run(fmt.Sprintf("guardedParent=%v", guardPar), func(t *testing.T) {
			raw, c := txTokPgxSetup(t, ctx, guardPar, nil)
			svc := memlock.New()
			for i, f := range forms {
				k := 10 + i
				t.Run(f.name, func(t *testing.T) {
					if _, err := raw.ExecContext(ctx, fmt.Sprintf("INSERT INTO par (id) VALUES (%d); INSERT INTO kid (id, pid) VALUES (%d, %d)", k, k, k)); err != nil {
						t.Fatal(err)
					}
					l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("pgx%d", k))
					ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
					tx, err := c.Begin(ctx1)
					if err != nil {
						t.Fatal(err)
					}
					defer tx.Rollback(ctx) //nolint:errcheck
					for _, q := range []string{fmt.Sprintf("UPDATE kid SET balance = balance WHERE id = %d", k), "SAVEPOINT s"} {
						if _, err := tx.Exec(ctx1, q); err != nil {
							t.Fatalf("%s: %v", q, err)
						}
					}
					if _, err := tx.Exec(ctx3, "SELECT 1"); err != nil {
						t.Fatal(err)
					}
					if err := f.attack(tx, c, ctx3, k); err != nil {
						if errors.Is(err, fencedsql.ErrUnsupported) {
							t.Logf("held: refused: %v", err)
							return
						}
						t.Fatalf("attack: %v", err)
					}
					if err := tx.Commit(ctx3); err != nil {
						t.Fatalf("commit: %v", err)
					}
					if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", pgxExec(c), k, l2, l3); err != nil {
						t.Errorf("%s: %v", f.name, err)
					}
				})
			}
		})
	}
}

// TestTxTokenPgxNestedSavepoints: the raise made inside pgx nested transactions
// (savepoints), rolled back in several shapes, then the cascade under l3. Oracle as
// above. Expected to hold (SavepointRolledBack re-arms the recording).
func TestTxTokenPgxNestedSavepoints(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	raw, c := txTokPgxSetup(t, ctx, true, nil)
	svc := memlock.New()
	shapes := []struct {
		name string
		run  func(tx pgx.Tx, ctx1, ctx3 context.Context) error
	}{
		{"raise-in-sp-rollback", func(tx pgx.Tx, ctx1, ctx3 context.Context) error {
			sp, err := tx.Begin(ctx1)
			if err != nil {
				return err
			}
			if _, err := sp.Exec(ctx3, "SELECT 1"); err != nil {
				return err
			}
			return sp.Rollback(ctx3)
		}},
		{"raise-in-sp2-commit-sp1-rollback", func(tx pgx.Tx, ctx1, ctx3 context.Context) error {
			sp1, err := tx.Begin(ctx1)
			if err != nil {
				return err
			}
			sp2, err := sp1.Begin(ctx1)
			if err != nil {
				return err
			}
			if _, err := sp2.Exec(ctx3, "SELECT 1"); err != nil {
				return err
			}
			if err := sp2.Commit(ctx3); err != nil {
				return err
			}
			return sp1.Rollback(ctx3)
		}},
		{"raise-by-begin-sp", func(tx pgx.Tx, ctx1, ctx3 context.Context) error {
			sp, err := tx.Begin(ctx3) // the savepoint itself carries l3
			if err != nil {
				return err
			}
			if _, err := sp.Exec(ctx3, "SELECT 1"); err != nil {
				return err
			}
			return sp.Rollback(ctx3)
		}},
		{"raise-in-sp-parent-rollback-of-open-child", func(tx pgx.Tx, ctx1, ctx3 context.Context) error {
			sp1, err := tx.Begin(ctx1)
			if err != nil {
				return err
			}
			sp2, err := sp1.Begin(ctx1)
			if err != nil {
				return err
			}
			if _, err := sp2.Exec(ctx3, "SELECT 1"); err != nil {
				return err
			}
			return sp1.Rollback(ctx3) // child still open
		}},
	}
	for i, s := range shapes {
		k := 100 + i
		t.Run(s.name, func(t *testing.T) {
			if _, err := raw.ExecContext(ctx, fmt.Sprintf("INSERT INTO par (id) VALUES (%d); INSERT INTO kid (id, pid) VALUES (%d, %d)", k, k, k)); err != nil {
				t.Fatal(err)
			}
			l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("nest%d", k))
			ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
			tx, err := c.Begin(ctx1)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback(ctx) //nolint:errcheck
			if _, err := tx.Exec(ctx1, fmt.Sprintf("UPDATE kid SET balance = balance WHERE id = %d", k)); err != nil {
				t.Fatal(err)
			}
			if err := s.run(tx, ctx1, ctx3); err != nil {
				t.Fatalf("shape: %v", err)
			}
			if _, err := tx.Exec(ctx3, fmt.Sprintf("DELETE FROM par WHERE id = %d", k)); err != nil {
				t.Fatalf("delete: %v", err)
			}
			if err := tx.Commit(ctx3); err != nil {
				t.Fatal(err)
			}
			if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", pgxExec(c), k, l2, l3); err != nil {
				t.Errorf("%s: %v", s.name, err)
			}
		})
	}
}
