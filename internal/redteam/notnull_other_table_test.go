package redteam

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestNotNullOfOtherTableInGuardedStatement (red-team rt56d F1, generator): a guarded
// table with an ordinary audit trigger (or, on PostgreSQL, a data-modifying CTE, which
// the planner refuses) that writes an unguarded audit table whose NOT NULL column
// happens to be named like a fencing column (version — the usual optimistic-locking
// column — or fence_token). The write itself is fresh (token 100 > 50); the only error
// is the audit table's own NOT NULL. Oracle: the caller gets the driver's NOT NULL
// error, not ErrFenced, not a *VersionConflictError (which tells an ORM to reload and
// retry), not a *GuardError. With the same trigger in place (but a BEFORE UPDATE one,
// which fails it first), a stale UPDATE (token 10) is still the guard's refusal:
// ErrFenced.
func TestNotNullOfOtherTableInGuardedStatement(t *testing.T) {
	seed := time.Now().UnixNano()
	if testing.Short() {
		seed = 1
	}
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	for _, b := range []backend{postgresBackend(), mysqlBackend()} {
		b := b
		t.Run(b.name, func(t *testing.T) {
			d := freshDB(t, b, entry{})
			ctx0, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			d.ctx = ctx0
			d.must("CREATE TABLE audit (id BIGINT NOT NULL, account_id BIGINT, version BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0)")
			w := plainGuardPool(t, d)
			trials, bad := 0, 0
			for i := 0; i < 24; i++ {
				col := []string{"version", "fence_token"}[rng.Intn(2)]
				event := []string{"UPDATE", "INSERT", "DELETE"}[rng.Intn(3)]
				when := []string{"AFTER", "BEFORE"}[rng.Intn(2)]
				vehicle := "trigger"
				if b.name == "postgres" && rng.Intn(3) == 0 {
					vehicle = "cte"
				}
				row := "NEW"
				if event == "DELETE" {
					row = "OLD"
				}
				// reset the triggers, seed the row, then install this trial's trigger
				if b.name == "postgres" {
					d.must("DROP TRIGGER IF EXISTS rt56d_audit ON accounts")
				} else {
					d.must("DROP TRIGGER IF EXISTS rt56d_audit")
				}
				key := 10 + i
				d.must(fmt.Sprintf("INSERT INTO accounts (id, balance, fence_token, version) VALUES (%d, 1, 50, 3)", key))
				if b.name == "postgres" {
					d.must("DROP TRIGGER IF EXISTS rt56d_audit ON accounts")
					if vehicle == "trigger" {
						d.must(fmt.Sprintf("CREATE OR REPLACE FUNCTION rt56d_audit_fn() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO audit (id, account_id, %s) VALUES (%d, %s.id, NULL); IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; RETURN NEW; END$$", col, i, row))
						d.must(fmt.Sprintf("CREATE TRIGGER rt56d_audit %s %s ON accounts FOR EACH ROW EXECUTE FUNCTION rt56d_audit_fn()", when, event))
					}
				} else {
					d.must("DROP TRIGGER IF EXISTS rt56d_audit")
					d.must(fmt.Sprintf("CREATE TRIGGER rt56d_audit %s %s ON accounts FOR EACH ROW INSERT INTO audit (id, account_id, %s) VALUES (%d, %s.id, NULL)", when, event, col, i, row))
				}
				var q string
				switch event {
				case "UPDATE":
					q = fmt.Sprintf("UPDATE accounts SET balance = balance + 1 WHERE id = %d", key)
				case "INSERT":
					q = fmt.Sprintf("INSERT INTO accounts (id, balance) VALUES (%d, 5)", 1000+i)
				case "DELETE":
					q = fmt.Sprintf("DELETE FROM accounts WHERE id = %d", key)
				}
				if vehicle == "cte" {
					q = fmt.Sprintf("WITH a AS (INSERT INTO audit (id, account_id, %s) VALUES (%d, %d, NULL) RETURNING id) ", col, i, key) + q
				}
				_, err := w.ExecContext(tokenCtx(ctx0, freshToken), q)
				trials++
				var ge *fencedsql.GuardError
				var ve *fencedsql.VersionConflictError
				desc := fmt.Sprintf("[%s %s %s %s audit.%s] %s", vehicle, when, event, b.name, col, q)
				switch {
				case err == nil:
					t.Errorf("%s: no error (the audit NULL was accepted?)", desc)
					bad++
				case errors.Is(err, fencedsql.ErrFenced), errors.As(err, &ge), errors.As(err, &ve):
					t.Errorf("WRONG-ERROR %s: the audit table's own NOT NULL came back as %T: %v", desc, err, err)
					bad++
				default:
					t.Logf("ok %s: %v", desc, err)
				}
				// the guard's real refusal, the audit trigger in place: ErrFenced (a BEFORE
				// UPDATE audit trigger fails the stale UPDATE first, on its own table)
				if event == "UPDATE" && when == "BEFORE" {
					continue
				}
				_, err = w.ExecContext(tokenCtx(ctx0, staleToken), fmt.Sprintf("UPDATE accounts SET balance = 0 WHERE id = %d", key))
				// (or, where the lazy check re-ran, its refusal of a MariaDB trigger whose
				// text names a fencing column's name: ErrSchema, closed too)
				if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
					t.Errorf("[%s %s %s audit.%s] a stale UPDATE: %v (%T), want ErrFenced", when, event, b.name, col, err, err)
				}
			}
			t.Logf("%s: %d trials, %d wrong", b.name, trials, bad)
		})
	}
}
