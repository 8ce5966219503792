package postgres_test

// Red-team rt15c: PostgreSQL's claim by row locator at e10017f (every test here failed
// there). A window the claim cannot apply exactly (a LIMIT after the locking clause,
// FETCH FIRST, an ORDER BY naming an output) is refused before sending; otherwise the
// claim returns, stamps and locks what the plain read does.

import (
	"context"
	"errors"
	"fmt"
	"sort"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// windowClaimRun runs stmt (select list id, balance, fence_token or any three BIGINT
// columns whose first is the id) on a fresh table with the given balances (ids 1..n,
// token 1), through the plain driver (tok 0) or the fenced one with token tok, no
// concurrency. It returns the ids returned, the ids stamped with tok, the ids the
// transaction holds locked, and the error.
func windowClaimRun(t *testing.T, balances []int64, stmt string, tok uint64) (got, stamped, locked []int64, err error) {
	t.Helper()
	raw, fenced := accountsDB(t, balances)
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	db, bctx := raw, ctx
	if tok != 0 {
		db, bctx = fenced, fencedsql.WithToken(ctx, tok)
	}
	tx, err := db.BeginTx(bctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	rs, err := tx.QueryContext(ctx, stmt)
	if err != nil {
		return nil, nil, nil, err
	}
	for rs.Next() {
		var a, b, c int64
		if err := rs.Scan(&a, &b, &c); err != nil {
			rs.Close()
			return got, nil, nil, err
		}
		got = append(got, a)
	}
	if err := rs.Err(); err != nil {
		rs.Close()
		return got, nil, nil, err
	}
	rs.Close()
	sort.Slice(got, func(i, j int) bool { return got[i] < got[j] })
	if tok != 0 {
		rs, err := tx.QueryContext(ctx, `SELECT id FROM accounts WHERE fence_token = $1`, int64(tok))
		stamped = ids(t, rs, err)
	}
	for id := range balances {
		if _, err := raw.ExecContext(ctx, `SELECT 1 FROM accounts WHERE id = $1 FOR UPDATE NOWAIT`, id+1); err != nil {
			locked = append(locked, int64(id+1))
		}
	}
	return got, stamped, locked, nil
}

// windowClaimExact: the claim with token 10 returns what the plain read returns, stamps
// exactly that, and locks what the plain read locks (no ties, no concurrency: the
// answer is determined).
func windowClaimExact(t *testing.T, balances []int64, stmt string) {
	t.Helper()
	pg, _, pl, perr := windowClaimRun(t, balances, stmt, 0)
	if perr != nil {
		t.Fatalf("plain read: %v", perr)
	}
	got, stamped, locked, err := windowClaimRun(t, balances, stmt, 10)
	t.Logf("%s\n claim: returned %v stamped %v locked %v err %v; plain: returned %v locked %v", stmt, got, stamped, locked, err, pg, pl)
	if errors.Is(err, fencedsql.ErrUnsupported) {
		// Refused before sending (a form the claim cannot window exactly): nothing stamped.
		if len(got) != 0 || len(stamped) != 0 {
			t.Errorf("refused claim returned %v and stamped %v", got, stamped)
		}
		return
	}
	if err != nil {
		t.Errorf("claim failed without any concurrency: %v (the plain read returns %v)", err, pg)
		return
	}
	if fmt.Sprint(got) != fmt.Sprint(pg) || fmt.Sprint(stamped) != fmt.Sprint(pg) || fmt.Sprint(locked) != fmt.Sprint(pl) {
		t.Errorf("claim returned %v, stamped %v, locked %v; the plain read returns %v and locks %v", got, stamped, locked, pg, pl)
	}
}

// F1: a LIMIT/OFFSET written after the locking clause (PostgreSQL's grammar takes
// `… FOR UPDATE LIMIT 1`) is not seen by the planner: readClauses stops at FOR, and
// the claim drops the window — it stamps, locks and (one-statement form) returns every
// matching row.
func TestClaimLimitAfterLockingClauseKeepsWindow(t *testing.T) {
	bal := []int64{1, 5, 7}
	for _, stmt := range []string{
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY balance FOR UPDATE LIMIT 1`,
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY id FOR UPDATE OFFSET 2`,
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 FOR UPDATE LIMIT 1`,
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY balance FOR UPDATE NOWAIT LIMIT 1`,
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY balance FOR UPDATE OF accounts LIMIT 1`,
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY balance FOR UPDATE FETCH FIRST 1 ROW ONLY`,
		// two-statement form (a subquery in the select list)
		`SELECT id, balance, (SELECT fence_token) FROM accounts WHERE balance < 50 ORDER BY balance FOR UPDATE LIMIT 1`,
	} {
		t.Run("", func(t *testing.T) { windowClaimExact(t, bal, stmt) })
	}
}

// F2: FETCH FIRST n ROWS ONLY (the SQL-standard LIMIT) is read as part of the ORDER BY
// clause: the claim neither sees a window (no ctid tie-break, rt14c F1 again) nor
// checks the ORDER BY for select-list positions and output names (orderByOutput), so
// `ORDER BY 1` orders the claim's `SELECT ctid` by ctid.
func TestClaimFetchFirstOrderByOutputExact(t *testing.T) {
	bal := []int64{9, 1, 5}
	for _, stmt := range []string{
		// plain: the row with the highest balance (id 1); the claim: the highest ctid (id 3)
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY 2 DESC FETCH FIRST 1 ROW ONLY FOR UPDATE`,
		// an output name: plain orders by balance, the claim by the column id
		`SELECT id AS k, balance AS id, fence_token FROM accounts WHERE balance < 50 ORDER BY id FETCH FIRST 1 ROW ONLY FOR UPDATE`,
	} {
		t.Run("", func(t *testing.T) { windowClaimExact(t, bal, stmt) })
	}
}

// F2 (ties): FETCH FIRST over tied keys has no ctid tie-break: the locking and the
// unlocked list break the tie differently — ErrClaimConflict every time without
// concurrency, as rt14c F1 before e10017f.
func TestClaimFetchFirstTiesNoConflict(t *testing.T) {
	for _, rc := range []claimRace{
		{name: "FetchFirst1", balances: tieBalances(), tail: "ORDER BY balance FETCH FIRST 1 ROW ONLY"},
		{name: "FetchFirst3", balances: tieBalances(), tail: "ORDER BY balance FETCH FIRST 3 ROWS ONLY"},
		{name: "FetchFirstTieChangedStays", balances: tieBalances(), changes: map[int64]int64{20: 5}, tail: "ORDER BY balance FETCH FIRST 1 ROW ONLY"},
	} {
		t.Run(rc.name, func(t *testing.T) {
			// FETCH FIRST is refused before sending (the claim would read it as part of the
			// ORDER BY, without the tie-break): write LIMIT n.
			o := runClaimRace(t, rc, "id, balance, fence_token", 10)
			if !errors.Is(o.err, fencedsql.ErrUnsupported) || len(o.got) != 0 {
				t.Errorf("claim with FETCH FIRST: returned %v, err %v; want ErrUnsupported", o.got, o.err)
			}
		})
	}
}

// F3: OFFSET … ROWS FETCH …, or FETCH … then OFFSET: the claim's SQL is malformed (the
// FETCH is copied into COALESCE((…)), or ", ctid" is appended after FETCH …): a
// syntax error for a statement the plain read runs.
func TestClaimOffsetFetchSyntaxRuns(t *testing.T) {
	bal := []int64{1, 5, 7}
	for _, stmt := range []string{
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY balance OFFSET 1 ROWS FETCH FIRST 1 ROW ONLY FOR UPDATE`,
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY balance FETCH FIRST 1 ROW ONLY OFFSET 1 FOR UPDATE`,
	} {
		t.Run("", func(t *testing.T) {
			windowClaimExact(t, bal, stmt)
			_, _, _, err := windowClaimRun(t, bal, stmt, 10)
			if err != nil && !errors.Is(err, fencedsql.ErrClaimConflict) && !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Logf("error is neither ErrClaimConflict nor ErrUnsupported: %v", err)
			}
		})
	}
}

// F4: a parenthesized ORDER BY item is still a select-list position or output name to
// PostgreSQL (`(x)` parses to the bare column reference, `(1)` to the bare constant;
// findTargetlistEntrySQL92 sees no parentheses), but orderByOutput looks only at a
// bare word or number: `ORDER BY (id) LIMIT 1` with an output named id orders the
// claim's rows by the column id; `ORDER BY (1)` orders the claim's `SELECT ctid` by
// ctid (or, `(2)`, fails with 42P10).
func TestClaimParenthesizedOrderByOutputExact(t *testing.T) {
	bal := []int64{9, 1, 5}
	for _, stmt := range []string{
		// plain: ordered by the output id (= balance): id 2; the claim: by the column id: id 1
		`SELECT id AS k, balance AS id, fence_token FROM accounts WHERE balance < 50 ORDER BY (id) LIMIT 1 FOR UPDATE`,
		// plain: by the second output (balance): id 2; the claim's `SELECT ctid … ORDER BY
		// (2)`: 42P10, a raw error for a statement the plain read runs
		`SELECT id, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY (2) LIMIT 1 FOR UPDATE`,
		`SELECT id AS k, balance AS id, fence_token FROM accounts WHERE balance < 50 ORDER BY (id) DESC LIMIT 1 OFFSET 1 FOR UPDATE`,
	} {
		t.Run("", func(t *testing.T) { windowClaimExact(t, bal, stmt) })
	}
}

// F4b: PostgreSQL names an output column implicitly after the column a cast (or a
// subscript, or a CAST) reads: `SELECT id::text` yields a column named id, and a bare
// `ORDER BY id` orders by that output (text order), as an explicit alias would.
// outputNames collects only AS/bare aliases, so orderByOutput lets it through and the
// claim orders by the column id (numeric order).
func TestClaimImplicitOutputNameOrderByExact(t *testing.T) {
	bal := []int64{1, 1, 1, 1, 1, 1, 1, 1, 1, 1} // ids 1..10
	for _, stmt := range []string{
		// plain: '9' (text order); the claim: 10
		`SELECT id::text, balance, fence_token FROM accounts WHERE balance < 50 ORDER BY id DESC LIMIT 1 FOR UPDATE`,
		`SELECT CAST(id AS text), balance, fence_token FROM accounts WHERE balance < 50 ORDER BY id DESC LIMIT 1 FOR UPDATE`,
	} {
		t.Run("", func(t *testing.T) { windowClaimExact(t, bal, stmt) })
	}
}
