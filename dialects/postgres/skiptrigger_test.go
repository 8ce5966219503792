package postgres_test

// Red-team skipTrig: several locks per transaction, and claims under contention.

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const skipTrigTable = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`

func skipTrigOpen(t *testing.T, setup ...string) (raw, fenced *sql.DB) {
	dsn := testdb.Postgres(t)
	raw = testdb.Open(t, "pgx", dsn, append([]string{skipTrigTable}, setup...)...)
	fenced = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	return raw, fenced
}

func skipTrigTok(t *testing.T, raw *sql.DB, id int) int64 {
	t.Helper()
	var tok int64
	if err := raw.QueryRow(`SELECT fence_token FROM accounts WHERE id = $1`, id).Scan(&tok); err != nil {
		t.Fatal(err)
	}
	return tok
}

// skipTrigFrozen is a BEFORE UPDATE trigger that keeps "frozen" rows (balance 13) as they
// are by skipping their update (RETURN NULL), a common PostgreSQL idiom. It names no
// fencing column and writes no table, so it is no side door (G11: the lazy check
// passes, the one-statement claim's verdict is yes); a plain locking read still
// returns and locks those rows.
const skipTrigFrozen = `CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF OLD.balance = 13 THEN RETURN NULL; END IF; RETURN NEW; END $$;
CREATE TRIGGER frozen BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION frozen()`

// skipTrigClaim runs q in a transaction of db under token tok and returns the ids read,
// the transaction still open (the caller rolls it back).
func skipTrigClaim(t *testing.T, db *sql.DB, tok uint64, q string) (*sql.Tx, []int64, error) {
	t.Helper()
	ctx := context.Background()
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, tok), nil)
	if err != nil {
		t.Fatal(err)
	}
	rows, err := tx.QueryContext(ctx, q)
	if err != nil {
		return tx, nil, err
	}
	defer rows.Close()
	var ids []int64
	for rows.Next() {
		cols, _ := rows.Columns()
		var id int64
		dst := []any{&id}
		for range cols[1:] {
			dst = append(dst, new(any))
		}
		if err := rows.Scan(dst...); err != nil {
			t.Fatal(err)
		}
		ids = append(ids, id)
	}
	return tx, ids, rows.Err()
}

// TestSkipTriggerClaimDoesNotDropRows (wrong rows returned, unclaimed lock): a
// claim selected by its WHERE alone (the one-statement form, and the two-statement
// form a subquery in the select list forces) over a table whose BEFORE UPDATE trigger
// skips some rows (RETURN NULL) returns only the rows its UPDATE stamped: the plain
// locking read returns ids 1 and 2, the claim returns 2 alone, with no error, and
// (FOR UPDATE) still holds row 1's lock, neither stamped nor returned. The located
// form (ORDER BY, LIMIT) compares the rows stamped with the rows locked and fails
// whole (ErrClaimConflict, whose doc names this very trigger); the WHERE-only forms
// do not compare. Right behaviour: the claim returns, stamps and holds exactly the
// rows the plain locking read returns (1 and 2), or fails whole with a typed error
// (ErrClaimConflict or ErrUnsupported) and holds nothing.
// Now: skipDoor makes the trigger a door, so the lazy check refuses the table with
// ErrSchema before anything is sent.
func TestSkipTriggerClaimDoesNotDropRows(t *testing.T) {
	for name, q := range map[string]string{
		"OneStatementForUpdate": `SELECT id FROM accounts WHERE id IN (1, 2) FOR UPDATE`,
		"OneStatementForShare":  `SELECT id FROM accounts WHERE id IN (1, 2) FOR SHARE`,
		"TwoStatements":         `SELECT id, (SELECT 1) FROM accounts WHERE id IN (1, 2) FOR UPDATE`,
	} {
		t.Run(name, func(t *testing.T) {
			raw, db := skipTrigOpen(t, `INSERT INTO accounts VALUES (1, 13, 0, 0), (2, 20, 0, 0)`, skipTrigFrozen)
			rtx, want, err := skipTrigClaim(t, raw, 7, q)
			rtx.Rollback()
			if err != nil || len(want) != 2 {
				t.Fatalf("plain locking read: %v, %v", want, err)
			}
			tx, got, err := skipTrigClaim(t, db, 7, q)
			defer tx.Rollback()
			if err != nil {
				if errors.Is(err, fencedsql.ErrClaimConflict) || errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrSchema) {
					return // failed whole, typed: right
				}
				t.Fatalf("claim failed untyped: %v", err)
			}
			if len(got) != len(want) {
				t.Errorf("claim returned %v with no error; the plain locking read returns %v (row 1's update was skipped by the trigger, so it was neither stamped nor returned)", got, want)
			}
		})
	}
}

// TestSkipTriggerStaleClaimNotSilent (older holder not fenced, wrong rows):
// row 1 carries token 9 (a newer holder claimed it) and a BEFORE UPDATE trigger skips
// its updates (skipTrigFrozen). The older holder (token 7) claims rows 1 and 2 with a
// WHERE-only FOR UPDATE: instead of ErrFenced it gets row 2 alone, no error, and holds
// row 1's lock unclaimed (a NOWAIT read of it from another session fails). Its later
// write to row 1 then "succeeds" with 0 rows, no ErrFenced either. Right behaviour:
// the claim fails with ErrFenced (row 1 is owned by a newer token) and nothing is
// returned or stamped; at least it must fail whole with a typed error.
// Now: skipDoor makes the trigger a door, so the lazy check refuses the table with
// ErrSchema before anything is sent.
func TestSkipTriggerStaleClaimNotSilent(t *testing.T) {
	raw, db := skipTrigOpen(t, `INSERT INTO accounts VALUES (1, 13, 9, 1), (2, 20, 0, 0)`, skipTrigFrozen)
	tx, got, err := skipTrigClaim(t, db, 7, `SELECT id FROM accounts WHERE id IN (1, 2) FOR UPDATE`)
	defer tx.Rollback()
	if errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrSchema) {
		return
	}
	_, nowait := raw.Exec(`SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE NOWAIT`)
	t.Errorf("older holder's claim of a row stamped by token 9: rows %v, err %v; want ErrFenced (row 1 locked by it meanwhile: NOWAIT from another session: %v)", got, err, nowait)
	if err == nil {
		res, werr := tx.Exec(`UPDATE accounts SET balance = 14 WHERE id = 1`)
		if werr == nil {
			n, _ := res.RowsAffected()
			t.Errorf("older holder's later write to row 1: no ErrFenced (%d rows)", n)
		}
	}
}

// TestSkipTriggerDeleteNotShort (wrong rows changed, success reported): the
// two-statement DELETE of a table without the guard stamps the rows first with its
// fencing UPDATE, then deletes the rows stamped. A BEFORE UPDATE trigger that skips
// some rows (skipTrigFrozen: RETURN NULL for balance 13, no fencing column named, no
// side door) makes the UPDATE skip row 1, and the DELETE then deletes row 2 alone
// and reports 1 row affected, no error; the plain DELETE (which fires no UPDATE
// trigger) deletes both. The stale holder's DELETE of a row a newer token owns is
// not refused with ErrFenced either. Right behaviour: the fenced DELETE deletes the
// rows the DELETE selects (1 and 2), or fails whole with a typed error (the stamp
// count against the rows the DELETE selects) and deletes nothing.
// Now: skipDoor makes the trigger a door, so the lazy check refuses the table with
// ErrSchema before anything is sent.
func TestSkipTriggerDeleteNotShort(t *testing.T) {
	raw, db := skipTrigOpen(t, `INSERT INTO accounts VALUES (1, 13, 0, 0), (2, 20, 0, 0)`, skipTrigFrozen)
	ctx := context.Background()
	res, err := db.ExecContext(fencedsql.WithToken(ctx, 7), `DELETE FROM accounts WHERE id IN (1, 2)`)
	if err != nil {
		if errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrSchema) {
			return
		}
		t.Fatalf("DELETE: %v", err)
	}
	n, _ := res.RowsAffected()
	var left int
	if err := raw.QueryRow(`SELECT count(*) FROM accounts`).Scan(&left); err != nil {
		t.Fatal(err)
	}
	if left != 0 {
		t.Errorf("DELETE ... WHERE id IN (1, 2) reported %d rows and no error, but %d row(s) remain (row 1's fencing UPDATE was skipped by the trigger); a plain DELETE deletes both", n, left)
	}
}

const skipTrigFrozenOld = `CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF OLD.balance = 13 THEN RETURN OLD; END IF; RETURN NEW; END $$;
CREATE TRIGGER frozen BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION frozen()`

// skipTrigFreezeOld is a BEFORE UPDATE trigger that keeps rows listed in a "freeze" table
// as they are by returning OLD (the update "happens", with the old values): an
// ordinary maintenance idiom. It names no fencing column and writes no table, so
// neither the lazy check nor schema.Check reports it as a side door (G11's "patch"
// door covers a trigger that names a fencing column in its WHEN clause or writes the
// table, and SQLite's RAISE(IGNORE)).
const skipTrigFreezeOld = `CREATE TABLE frozen_ids (id bigint PRIMARY KEY);
CREATE FUNCTION frozen() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF EXISTS (SELECT 1 FROM frozen_ids f WHERE f.id = OLD.id) THEN RETURN OLD; END IF; RETURN NEW; END $$;
CREATE TRIGGER frozen BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION frozen()`

// TestKeepOldTriggerClaimNotUnstamped (fail-open): holder 7's claim of row 1,
// which a BEFORE UPDATE trigger keeps as it is (RETURN OLD, skipTrigFreezeOld), returns
// row 1 with no error — the one-statement claim returns what its UPDATE RETURNs, and
// takes that for the rows stamped — but the row still carries token 0: the trigger
// replaced the fencing assignments with the old row. Holder 7 commits believing row 1
// claimed. Once the freeze is lifted, the older holder 5's UPDATE of row 1 is
// accepted and stored (G10: "A late write by an older holder to those rows then
// fails, even if the newer holder only read them"). With the guard installed
// (schema.Check's fix applied), the older holder's DELETE of the claimed row goes
// through while it is still frozen. Right behaviour: the claim verifies that the rows
// it returns carry its token (RETURNING the token column, or comparing it in the
// outer SELECT) and fails whole with a typed error otherwise; or such a trigger is a
// side door; and the older holder's write then fails with ErrFenced.
// Now: skipDoor makes the trigger a door, so the lazy check refuses the table with
// ErrSchema before anything is sent.
func TestKeepOldTriggerClaimNotUnstamped(t *testing.T) {
	for _, c := range []struct {
		name  string
		guard bool
		q     string
	}{
		{"NoGuard", false, `SELECT id FROM accounts WHERE id = 1 FOR UPDATE`},
		{"NoGuardLocated", false, `SELECT id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{"Guard", true, `SELECT id FROM accounts WHERE id = 1 FOR UPDATE`},
	} {
		guard := c.guard
		t.Run(c.name, func(t *testing.T) {
			raw, db := skipTrigOpen(t, `INSERT INTO accounts VALUES (1, 10, 0, 0), (2, 20, 0, 0)`, skipTrigFreezeOld, `INSERT INTO frozen_ids VALUES (1)`)
			ctx := context.Background()
			if guard {
				fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			}
			tx, ids, err := skipTrigClaim(t, db, 7, c.q)
			if err != nil {
				tx.Rollback()
				if errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrClaimConflict) || errors.Is(err, fencedsql.ErrSchema) {
					return // refused whole, typed: right
				}
				t.Fatalf("claim: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			tok := skipTrigTok(t, raw, 1)
			if guard {
				res, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `DELETE FROM accounts WHERE id = 1`)
				if err == nil {
					n, _ := res.RowsAffected()
					t.Errorf("holder 7's claim returned %v (row 1 left at token %d); the older holder 5's DELETE of row 1 then deleted %d row(s), want ErrFenced", ids, tok, n)
				}
				return
			}
			if _, err := raw.Exec(`DELETE FROM frozen_ids`); err != nil {
				t.Fatal(err)
			}
			res, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE accounts SET balance = 99 WHERE id = 1`)
			if err == nil {
				n, _ := res.RowsAffected()
				var bal int64
				raw.QueryRow(`SELECT balance FROM accounts WHERE id = 1`).Scan(&bal)
				t.Errorf("holder 7's claim returned %v (row 1 left at token %d); the older holder 5's later UPDATE of row 1 then wrote %d row(s) (balance now %d), want ErrFenced", ids, tok, n, bal)
			}
		})
	}
}

// skipTrigDoors returns the own-trigger doors schema.Check reports on accounts.
func skipTrigDoors(t *testing.T, raw *sql.DB) []dialect.SideDoor {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	var doors []dialect.SideDoor
	for _, sd := range reps[0].SideDoors {
		if sd.Kind == dialect.SideDoorOwnTrigger {
			doors = append(doors, sd)
		}
	}
	return doors
}

// TestSkipTriggerReported: schema.Check reports a BEFORE UPDATE row trigger whose
// function may return something other than NEW — RETURN OLD, RETURN NULL, NEW assigned
// whole, a function in a language the check cannot read (the built-in
// suppress_redundant_updates_trigger skips a row whose update changes nothing: a
// re-claim under the same token) — with the problem explained and no Fix (the trigger
// is the user's), and the lazy check refuses the table (ErrSchema) before anything is
// sent. Ordinary triggers are no door: a BEFORE UPDATE trigger that sets a column and
// returns NEW (or COALESCE(NEW, OLD)), the built-in tsvector_update_trigger, an AFTER
// UPDATE trigger returning NULL, a BEFORE INSERT or DELETE trigger returning NULL.
func TestSkipTriggerReported(t *testing.T) {
	const fine = `ALTER TABLE accounts ADD COLUMN updated_at timestamptz, ADD COLUMN note text, ADD COLUMN tsv tsvector;
CREATE FUNCTION touch() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF NEW IS DISTINCT FROM OLD THEN NEW.updated_at := now(); END IF; RETURN NEW; END $$;
CREATE TRIGGER a_touch BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION touch();
CREATE FUNCTION any_op() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN COALESCE(NEW, OLD); END $$;
CREATE TRIGGER b_any BEFORE INSERT OR UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION any_op();
CREATE TRIGGER c_tsv BEFORE INSERT OR UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION tsvector_update_trigger(tsv, 'pg_catalog.english', note);
CREATE FUNCTION nothing() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN RETURN NULL; END $$;
CREATE TRIGGER d_after AFTER UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION nothing();
CREATE TRIGGER e_ins BEFORE INSERT ON accounts FOR EACH ROW EXECUTE FUNCTION nothing();
CREATE TRIGGER f_del BEFORE DELETE ON accounts FOR EACH ROW EXECUTE FUNCTION nothing()`
	for name, c := range map[string]struct {
		setup   string
		trigger string
	}{
		"None":       {},
		"ReturnOld":  {skipTrigFreezeOld, "frozen"},
		"ReturnNull": {skipTrigFrozen, "frozen"},
		"AssignNew": {`CREATE FUNCTION keep() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN IF OLD.balance = 13 THEN NEW := OLD; END IF; RETURN NEW; END $$;
CREATE TRIGGER keep BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION keep()`, "keep"},
		"Unreadable": {`CREATE TRIGGER same BEFORE UPDATE ON accounts FOR EACH ROW EXECUTE FUNCTION suppress_redundant_updates_trigger()`, "same"},
	} {
		t.Run(name, func(t *testing.T) {
			setup := []string{`INSERT INTO accounts (id, balance) VALUES (1, 10)`, fine}
			if c.setup != "" {
				setup = append(setup, c.setup)
			}
			raw, db := skipTrigOpen(t, setup...)
			doors := skipTrigDoors(t, raw)
			_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 7), `UPDATE accounts SET balance = 11 WHERE id = 1`)
			if c.trigger == "" {
				if len(doors) != 0 || err != nil {
					t.Fatalf("ordinary triggers: doors %+v, UPDATE %v; want none and success", doors, err)
				}
				return
			}
			if len(doors) != 1 || !strings.HasPrefix(doors[0].Object, c.trigger+" on ") || len(doors[0].Fix) != 0 ||
				!strings.Contains(doors[0].Problem, "BEFORE UPDATE row trigger") || !strings.Contains(doors[0].Problem, "other than NEW") {
				t.Fatalf("doors %+v; want the one for %s, explained, no Fix", doors, c.trigger)
			}
			if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), c.trigger) {
				t.Fatalf("fenced UPDATE: %v, want ErrSchema naming %s", err, c.trigger)
			}
			if skipTrigTok(t, raw, 1) != 0 {
				t.Fatal("the refused UPDATE changed the row")
			}
		})
	}
}
