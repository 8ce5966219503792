// A TEMP table of a guarded name created through a WithDDL pool on SQLite (red-team
// rt37b F5): it re-arms the connection's name checks.

package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"path/filepath"
	"reflect"
	"slices"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestTempTableShadowThroughDDLPoolSQLiteRechecked (fail-open, same class as the fixed
// session-5 finding TestCfgRaw*: a TEMP table of the guarded name made on Raw). A pool
// allowed to run DDL (fenced_allow=ddl, a migration-capable pool) writes the guarded
// table once, so the lazy check's verdict on `accounts` (main.accounts: fit) is cached
// for the pool. Then `CREATE TEMP TABLE accounts AS SELECT …` (whose columns carry no NOT NULL)
// goes through the same pool. SQLite resolves the unqualified name to temp.accounts
// from then on, but CREATE TEMP is not a statement the planner counts as changing
// name resolution (ResolvesNames knows only ATTACH/DETACH on SQLite), so the cached
// verdict now covers temp.accounts: a stale UPDATE (token 10 over a row at 50) is
// sent, its fencing CASE yields NULL, the nullable column takes it, and the write
// "succeeds" with the row's fence token erased.
//
// Now: DDL naming a guarded table that says TEMP re-arms the name checks of its
// connection as ATTACH does (plan.ShadowsNames), so the next guarded write re-runs the
// lazy check on the name as now resolved and refuses it with ErrSchema (nullable
// fencing columns), nothing written.
func TestTempTableShadowThroughDDLPoolSQLiteRechecked(t *testing.T) {
	ctx := context.Background()
	p, raw := accountsAt10SQLite(t)
	db, err := sql.Open("fenced-sqlite", "file:"+p+"?fenced_tables=accounts&fenced_allow=ddl")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatal(err) // the verdict on accounts is now cached for the pool
	}
	// CREATE TABLE AS: the copy's columns carry no NOT NULL; its row is at token 50.
	if _, err := db.ExecContext(ctx, `CREATE TEMP TABLE accounts AS SELECT id, balance, 50 AS fence_token, version FROM main.accounts`); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1")
	var bal, tok sql.NullInt64
	_ = db.QueryRowContext(ctx, "SELECT balance, fence_token FROM temp.accounts WHERE id = 1").Scan(&bal, &tok)
	if err == nil {
		var mainBal int64
		_ = raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&mainBal)
		t.Fatalf("stale UPDATE (token 10) after CREATE TEMP TABLE accounts through the pool: accepted; temp.accounts row now balance %v fence_token %v; want ErrSchema (nullable fencing columns of the table the name now resolves to) or ErrFenced (main.accounts balance %d)", bal, tok, mainBal)
	}
	if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale UPDATE: %v", err)
	}
}

// shadowRawExec runs stmts on the fenced pool's one driver connection, unfenced (temp
// tables and temp triggers live on that connection).
func shadowRawExec(t *testing.T, db *sql.DB, stmts ...string) {
	t.Helper()
	c, err := db.Conn(context.Background())
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	err = c.Raw(func(dc any) error {
		ex := fencedsql.Unwrap(dc).(driver.ExecerContext)
		for _, s := range stmts {
			if _, err := ex.ExecContext(context.Background(), s, nil); err != nil {
				return errors.New(s + ": " + err.Error())
			}
		}
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
}

const shadowMainTable = `CREATE TABLE accounts (id INTEGER PRIMARY KEY, rnk INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`

// TestTempShadowRowidColumnDeletesOnlyStampedRow: a TEMP table named accounts shadows main.accounts
// on the connection (unqualified names resolve temp first; the lazy column check,
// pragma_table_info(?), judges the temp table). LocatorQuery, asked with schema ""
// → 'main', judges main.accounts, an ordinary rowid table, and says yes; but the
// temp table has a column called rowid, so `RETURNING rowid` and `accounts.rowid IN
// (…)` name that user column, not the row. With a selection that reads differently
// the second time (an aggregate over a column the UPDATE's trigger changes, which
// the keyed form is supposed to make exact), the DELETE deletes a row the holder
// stamped before (id 2, sharing the user "rowid" value 7) instead of the row its
// fencing UPDATE stamped (id 1), and the counts match (1 = 1).
//
// Right behaviour: LocatorQuery must judge the table the unqualified name resolves to
// (temp first, then main, then attached databases, as ColumnsQuery and the lint do),
// so the DELETE gets the token-only form (and fails its count) or refuses; never
// deletes id 2.
func TestTempShadowRowidColumnDeletesOnlyStampedRow(t *testing.T) {
	_, db := sqlitePair(t, shadowMainTable, `INSERT INTO accounts (id, rnk) VALUES (100, 100)`)
	shadowRawExec(t, db,
		`CREATE TEMP TABLE accounts (id INTEGER PRIMARY KEY, rowid INTEGER NOT NULL, rnk INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO temp.accounts (id, rowid, rnk, fence_token, version) VALUES (1, 7, 1, 0, 0), (2, 7, 2, 10, 1), (3, 9, 3, 10, 1)`,
		`CREATE TEMP TRIGGER rerank AFTER UPDATE OF fence_token ON temp.accounts BEGIN UPDATE temp.accounts SET rnk = rnk + 10 WHERE id = NEW.id; END`,
	)
	ctx := fencedsql.WithToken(context.Background(), 10)
	_, err := db.ExecContext(ctx, `DELETE FROM accounts WHERE rnk = (SELECT min(rnk) FROM accounts)`)
	left := fencetest.TableIDs(t, db, "temp.accounts")
	if !slices.Contains(left, 2) {
		t.Fatalf("DELETE (its fencing UPDATE stamps id 1 only) returned err=%v and left ids %v: it deleted id 2, a row its fencing UPDATE did not stamp (accounts.rowid named the temp table's user column \"rowid\")", err, left)
	}
	if err != nil && !reflect.DeepEqual(left, []int64{1, 2, 3}) {
		t.Fatalf("DELETE failed (%v) but changed data: ids left %v", err, left)
	}
}

// TestTempShadowWithoutRowidDeletes: a TEMP table named accounts, WITHOUT ROWID, shadows an
// ordinary main.accounts. LocatorQuery judges main ('main' for an unqualified name)
// and says yes, so every DELETE runs keyed and its fencing UPDATE `… RETURNING rowid`
// fails with the driver's raw "no such column: rowid" — an untyped error (neither
// ErrUnsupported nor ErrSchema), for an ordinary DELETE by key that the token-only form
// runs. Right behaviour: LocatorQuery judges the table the name resolves to (temp
// first) and the DELETE runs token-only (it deletes id 1). Over-refusal, unclear error.
func TestTempShadowWithoutRowidDeletes(t *testing.T) {
	_, db := sqlitePair(t, shadowMainTable)
	shadowRawExec(t, db,
		`CREATE TEMP TABLE accounts (id INTEGER PRIMARY KEY, rnk INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) WITHOUT ROWID`,
		`INSERT INTO temp.accounts (id, rnk) VALUES (1, 1), (2, 2)`,
	)
	ctx := fencedsql.WithToken(context.Background(), 10)
	_, err := db.ExecContext(ctx, `DELETE FROM accounts WHERE id = 1`)
	left := fencetest.TableIDs(t, db, "temp.accounts")
	if err != nil || !reflect.DeepEqual(left, []int64{2}) {
		t.Fatalf("DELETE FROM accounts WHERE id = 1 on a WITHOUT ROWID temp table: err=%v (ErrUnsupported=%v ErrSchema=%v), ids left %v; want id 1 deleted by the token-only form",
			err, errors.Is(err, fencedsql.ErrUnsupported), errors.Is(err, fencedsql.ErrSchema), left)
	}
}

// TestJSONEachShadowedDeletes: the keyed DELETE restricts to `accounts.rowid IN (SELECT
// value FROM json_each(?))`. A table or view the user named json_each (main or temp)
// shadows SQLite's table-valued function, and the DELETE (after its fencing UPDATE
// stamped the row) fails with the driver's raw "'json_each' is not a function" —
// neither ErrUnsupported nor ErrSchema — for every DELETE on every guarded rowid table
// of the pool, forever (the locator verdict is never doubted). The token-only form
// ran these DELETEs. Right behaviour: an ordinary DELETE by key runs (LocatorQuery says
// no when an object named json_each is visible, or the list is bound without naming a
// shadowable function); at the very least a typed error. Over-refusal, unclear error.
func TestJSONEachShadowedDeletes(t *testing.T) {
	for name, setup := range map[string][]string{
		"table": {shadowMainTable, `CREATE TABLE json_each (value INTEGER)`},
		"view":  {shadowMainTable, `CREATE VIEW json_each AS SELECT 1 AS value`},
	} {
		t.Run(name, func(t *testing.T) {
			raw, db := sqlitePair(t, append(setup, `INSERT INTO accounts (id, rnk) VALUES (1, 1), (2, 2)`)...)
			ctx := fencedsql.WithToken(context.Background(), 10)
			_, err := db.ExecContext(ctx, `DELETE FROM accounts WHERE id = 1`)
			left := fencetest.TableIDs(t, raw, "accounts")
			if err != nil || !reflect.DeepEqual(left, []int64{2}) {
				t.Fatalf("DELETE FROM accounts WHERE id = 1 with a %s named json_each: err=%v (ErrUnsupported=%v), ids left %v; want id 1 deleted",
					name, err, errors.Is(err, fencedsql.ErrUnsupported), left)
			}
		})
	}
}

// TestStampFailureInCallerTxNotCommitted: in the caller's transaction, the fencing UPDATE of a
// DELETE fails part-way with a conflict resolution of FAIL (a BEFORE UPDATE trigger's
// RAISE(FAIL, …), which the lint does not see): SQLite keeps the changes the statement
// made before the failing row. The wrapper returns the driver's raw error (not typed)
// and, unlike a failure of the DELETE statement (stampKept), does not mark the
// transaction: the caller commits, and row 1 keeps the DELETE's stamp (fence_token 10,
// version bumped) though the DELETE reported an error and deleted nothing. Right
// behaviour: a failed fencing UPDATE in the caller's transaction leaves it able only to
// roll back (stampKept: Commit fails and nothing is kept), or the wrapper undoes it
// (a SAVEPOINT around the two statements). Data change on error (pre-existing: the
// token-only form's Exec path does the same).
func TestStampFailureInCallerTxNotCommitted(t *testing.T) {
	ctx := fencedsql.WithToken(context.Background(), 10)
	raw, db := sqlitePair(t, shadowMainTable, `INSERT INTO accounts (id, rnk) VALUES (1, 1), (2, 2)`,
		`CREATE TRIGGER f BEFORE UPDATE ON accounts WHEN OLD.id = 2 BEGIN SELECT RAISE(FAIL, 'refused by trigger'); END`)
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(ctx, `DELETE FROM accounts WHERE id IN (1, 2)`)
	if err == nil {
		t.Fatal("DELETE ran; the trigger refuses row 2")
	}
	cerr := tx.Commit()
	var tok, ver int64
	if err := raw.QueryRow(`SELECT fence_token, version FROM accounts WHERE id = 1`).Scan(&tok, &ver); err != nil {
		t.Fatal(err)
	}
	if tok != 0 || ver != 0 {
		t.Fatalf("DELETE failed (%v), Commit=%v, and row 1 kept the fencing UPDATE's stamp (fence_token=%d version=%d); want Commit refused or row 1 unchanged", err, cerr, tok, ver)
	}
}

// TestTempShadowThroughPoolDeletesOnlyStampedRow is F1 reached through the fenced pool alone
// (fenced_allow=ddl, no raw connection, no trigger): `CREATE TEMP TABLE accounts` with
// a column called rowid passes through the pool, the locator verdict is main.accounts'
// (yes), and a DELETE whose condition reads a temp view over the version column (which
// the text checks cannot see) selects id 1 first and id 2 — a row the holder inserted
// earlier, carrying its token, with the same user "rowid" 7 — the second time. On
// main.accounts (real rowids) the same DELETE fails its count with ErrUnsupported and
// changes nothing; here it deletes id 2 and reports success. Right behaviour: only row
// 1 deleted, or an error with nothing changed (LocatorQuery judging the temp table).
func TestTempShadowThroughPoolDeletesOnlyStampedRow(t *testing.T) {
	path := filepath.Join(t.TempDir(), "t.db")
	raw, err := sql.Open("sqlite", "file:"+path)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(shadowMainTable); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("fenced-sqlite", "file:"+path+"?fenced_tables=accounts&fenced_allow=ddl")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	db.SetMaxIdleConns(1)
	ctx := fencedsql.WithToken(context.Background(), 10)
	for _, s := range []string{
		`CREATE TEMP TABLE accounts (id INTEGER PRIMARY KEY, rowid INTEGER NOT NULL, rnk INTEGER NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TEMP VIEW fresh AS SELECT id FROM accounts WHERE version = (SELECT min(version) FROM accounts)`,
	} {
		if _, err := db.ExecContext(context.Background(), s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), `INSERT INTO accounts (id, rowid, rnk) VALUES (1, 7, 1)`); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `INSERT INTO accounts (id, rowid, rnk) VALUES (2, 7, 2)`); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(ctx, `DELETE FROM accounts WHERE id = (SELECT min(id) FROM fresh)`)
	left := fencetest.TableIDs(t, db, "temp.accounts")
	if !slices.Contains(left, 2) {
		t.Fatalf("DELETE (its fencing UPDATE stamps id 1 only) returned err=%v and left ids %v: it deleted id 2, which it never stamped", err, left)
	}
	if err != nil && !reflect.DeepEqual(left, []int64{1, 2}) {
		t.Fatalf("DELETE failed (%v) but changed data: ids left %v", err, left)
	}
}
