package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestSkipDoorStockTriggers: stock BEFORE UPDATE row triggers of ordinary schemas
// (red-team rt36b F8). contrib's moddatetime(updated_at), the usual "updated_at"
// trigger, is a C function that returns the new row always, with one timestamp column
// replaced: it is no skip door (known by its C symbol and library), and the fenced
// UPDATE goes through, stamped. A PL/pgSQL function that merely calls itself
// moddatetime and returns OLD is read like any other and refused. Still refused, by
// design (docs/design.md, Known open findings):
//
//   - the built-in suppress_redundant_updates_trigger(): it returns NULL for an UPDATE
//     that leaves the row identical, and a claim's fencing UPDATE by the token the row
//     already carries (a re-claim) can be one — the row would be silently skipped.
//   - the shared BEFORE UPDATE OR DELETE PL/pgSQL shape `IF TG_OP = 'DELETE' THEN
//     RETURN OLD; END IF; …; RETURN NEW;`: the reader does not follow control flow, so
//     the RETURN OLD counts (fail closed).
func TestSkipDoorStockTriggers(t *testing.T) {
	for name, tc := range map[string]struct {
		setup   []string
		refused bool
	}{
		"moddatetime": {setup: []string{
			`CREATE EXTENSION IF NOT EXISTS moddatetime`,
			`CREATE TRIGGER accounts_mdt BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION moddatetime(updated_at)`,
		}},
		"plpgsql_named_moddatetime": {refused: true, setup: []string{
			`CREATE SCHEMA x`,
			`CREATE FUNCTION x.moddatetime() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN OLD; END $$`,
			`CREATE TRIGGER accounts_mdt BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION x.moddatetime()`,
		}},
		"tg_op_delete_branch": {refused: true, setup: []string{
			`CREATE FUNCTION audit_touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF TG_OP = 'DELETE' THEN RETURN OLD; END IF; NEW.updated_at := now(); RETURN NEW; END $$`,
			`CREATE TRIGGER accounts_touch BEFORE UPDATE OR DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION audit_touch()`,
		}},
		"suppress_redundant": {refused: true, setup: []string{
			`CREATE TRIGGER accounts_sru BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()`,
		}},
	} {
		t.Run(name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw := testdb.Open(t, "pgx", dsn, append([]string{`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at timestamptz NOT NULL DEFAULT '2000-01-01')`,
				`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 3)`}, tc.setup...)...)
			ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
			defer cancel()
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 1")
			var bal, tok int64
			var touched bool
			if qerr := raw.QueryRowContext(ctx, "SELECT balance, fence_token, updated_at > '2000-01-01' FROM accounts WHERE id = 1").Scan(&bal, &tok, &touched); qerr != nil {
				t.Fatal(qerr)
			}
			if tc.refused {
				if !errors.Is(err, fencedsql.ErrSchema) || bal != 100 || tok != 5 {
					t.Errorf("%s: err=%v, row balance=%d fence_token=%d; want ErrSchema (a skip door) and the row unchanged", name, err, bal, tok)
				}
				return
			}
			if err != nil || bal != 1 || tok != 10 || !touched {
				t.Errorf("OVER-REFUSAL: fresh-token UPDATE with the stock %s BEFORE UPDATE trigger: err=%v, row balance=%d fence_token=%d updated_at touched=%v; want success, stamped, touched", name, err, bal, tok, touched)
			}
		})
	}
}

// TestSkipTriggerQualifiedNewRefused: the end-to-end form of
// TestPlpgsqlKeepsNewReplacedWhole's first case (red-team rt36b F3). accounts carries a BEFORE UPDATE
// trigger whose function assigns trg36.new := OLD and returns NEW: every UPDATE keeps
// the old row while reporting it changed. A fresh-token fenced UPDATE is not refused
// (the skip door is not seen): it reports one row and the row stays unstamped
// (fence_token 5, balance 100). Right behaviour: ErrSchema (a skip door), nothing sent.
func TestSkipTriggerQualifiedNewRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 3)`,
		`CREATE FUNCTION trg36() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN trg36.new := OLD; RETURN NEW; END $$`,
		`CREATE TRIGGER keep_old BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION trg36()`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	res, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 1")
	var bal, tok int64
	if qerr := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) {
		n := int64(-1)
		if res != nil {
			n, _ = res.RowsAffected()
		}
		t.Errorf("FAIL-OPEN: fenced UPDATE with a BEFORE UPDATE trigger that keeps OLD (trg36.new := OLD): err=%v, rows=%d, row now balance=%d fence_token=%d; want ErrSchema (skip door)", err, n, bal, tok)
	}
}
