package plan

import (
	"errors"
	"strings"
	"testing"
)

// A MySQL/MariaDB DELETE has keyed two statements: the fencing UPDATE records the
// primary key of each row it stamps under the statement's nonce, and the DELETE is
// restricted to the recorded keys. Exact SQL and arguments, for an aliased table.
func TestKeyedDeleteSQL(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest)
	in := "DELETE FROM accounts a WHERE a.owner = ? ORDER BY a.updated_at LIMIT ?"
	p, err := rw.Rewrite(in, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Keyed == nil || p.Pre == nil || p.Pre.Keyed == nil {
		t.Fatalf("DELETE %q: no keyed statements (%v, pre %v)", in, p.Keyed, p.Pre)
	}
	if p.TwoStepErr == nil || p.Keyed.TwoStepErr != nil {
		t.Errorf("ORDER BY … LIMIT: unkeyed refusal %v (want one), keyed %v (want none)", p.TwoStepErr, p.Keyed.TwoStepErr)
	}
	cols := []KeyColumn{{"tenant", "varchar(10)"}, {"id", "bigint(20)"}}
	key := "CONCAT_WS(':', HEX(QUOTE(a.`tenant`)), a.`id`)"
	const N = ArgNonce
	pre, err := p.Pre.Keyed.WithRowKey(cols, mysqlTest.QuoteIdent)
	if err != nil {
		t.Fatal(err)
	}
	wantPre := "UPDATE accounts a SET `version` = `version` + 1 + 0 * (@fencedsql_claim := (? + 0 * LENGTH(@fencedsql_claimed := CONCAT(IF(@fencedsql_claim <=> ?, @fencedsql_claimed, ','), " + key +
		", ',')))), `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE a.owner = ? ORDER BY a.updated_at LIMIT ?"
	if pre.SQL != wantPre || !equalRefs(pre.Args, refs(N, N, TOK, TOK, 0, 1)) {
		t.Errorf("keyed fencing UPDATE:\n got  %s %v\n want %s", pre.SQL, pre.Args, wantPre)
	}
	del, err := p.Keyed.WithRowKey(cols, mysqlTest.QuoteIdent)
	if err != nil {
		t.Fatal(err)
	}
	wantDel := "DELETE FROM accounts a WHERE (a.owner = ?) AND @fencedsql_claim <=> ? AND LOCATE(CONCAT(',', " + key +
		", ','), @fencedsql_claimed) > 0 AND `fence_token` = ? ORDER BY a.updated_at LIMIT ?"
	if del.SQL != wantDel || !equalRefs(del.Args, refs(0, N, TOK, 1)) {
		t.Errorf("keyed DELETE:\n got  %s %v\n want %s", del.SQL, del.Args, wantDel)
	}
}

// Which two-statement DELETEs the keyed form runs: it drops the refusals a keyed
// DELETE makes needless (the statement's clock, ORDER BY … LIMIT) and keeps those of a
// selection reading the fencing columns or a non-deterministic function; a DELETE
// naming a user variable has no keyed form and refuses its two statements;
// PostgreSQL's is keyed by row locator, except where the DELETE names the name its
// first statement gives its WITH query; SQLite's by rowid.
func TestKeyedDeleteRefusals(t *testing.T) {
	for _, c := range []struct {
		d                testDialect
		in               string
		keyed            bool
		unkeyedOK, keyOK bool
	}{
		{mysqlTest, "DELETE FROM accounts WHERE id = ?", true, true, true},
		{mysqlTest, "DELETE FROM accounts", true, true, true},
		{mysqlTest, "DELETE FROM accounts WHERE expires_at < NOW()", true, false, true},
		{mysqlTest, "DELETE FROM accounts ORDER BY id LIMIT 3", true, false, true},
		{mysqlTest, "DELETE FROM accounts WHERE version = 3", true, false, false},
		{mysqlTest, "DELETE FROM accounts WHERE id = FLOOR(RAND() * 3)", true, false, false},
		{mysqlTest, "DELETE FROM accounts WHERE id < NOW() AND `version` = 3", true, false, false},
		{mysqlTest, "DELETE FROM accounts WHERE id = @x", false, false, false},
		{mysqlTest, "DELETE FROM accounts WHERE email = 'a@b'", true, true, true},
		{pgTest, "DELETE FROM accounts WHERE id = $1", true, true, true},
		{pgTest, "DELETE FROM accounts WHERE id = random()", true, false, false},
		{sqliteTest, "DELETE FROM accounts WHERE id = ?", true, true, true},
		{sqliteTest, "DELETE FROM accounts WHERE expires < CURRENT_TIMESTAMP", true, false, true},
		{sqliteTest, "DELETE FROM accounts WHERE id = random()", true, false, false},
	} {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil {
			t.Errorf("%s: %v", c.in, err)
			continue
		}
		if (p.Keyed != nil) != c.keyed || (p.Pre.Keyed != nil) != c.keyed {
			t.Errorf("%s: keyed form %v, pre %v; want keyed %v", c.in, p.Keyed != nil, p.Pre.Keyed != nil, c.keyed)
			continue
		}
		if (p.TwoStepErr == nil) != c.unkeyedOK {
			t.Errorf("%s: unkeyed refusal %v, want refused %v", c.in, p.TwoStepErr, !c.unkeyedOK)
		}
		var r *Refusal
		if p.TwoStepErr != nil && !errors.As(p.TwoStepErr, &r) {
			t.Errorf("%s: refusal of type %T", c.in, p.TwoStepErr)
		}
		if c.keyed && (p.Keyed.TwoStepErr == nil) != c.keyOK {
			t.Errorf("%s: keyed refusal %v, want refused %v", c.in, p.Keyed.TwoStepErr, !c.keyOK)
		}
	}
}

// PostgreSQL's DELETE keyed by row locator: the fencing UPDATE in a WITH query that
// records the new versions' ctids, the DELETE restricted to them. Exact SQL.
func TestLocatedDeleteSQL(t *testing.T) {
	p, err := newTestRewriter(t, pgTest).Rewrite("DELETE FROM ONLY accounts AS a WHERE a.owner = $1 -- who\n", false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Keyed == nil || p.Pre.Keyed == nil || !p.Keyed.ClaimLocator {
		t.Fatalf("no located form: %+v", p.Keyed)
	}
	wantPre := `WITH fencedsql_claimed AS (UPDATE ONLY accounts AS a SET "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE a.owner = $1 RETURNING ctid) SELECT FROM fencedsql_claimed WHERE (SELECT set_config('fencedsql.claimed', COALESCE(array_agg(ctid), '{}')::text, true) IS NOT NULL FROM fencedsql_claimed)`
	if p.Pre.Keyed.SQL != wantPre || !equalRefs(p.Pre.Keyed.Args, p.Pre.Args) {
		t.Errorf("located fencing UPDATE:\n got  %s %v\n want %s", p.Pre.Keyed.SQL, p.Pre.Keyed.Args, wantPre)
	}
	wantDel := "DELETE FROM ONLY accounts AS a WHERE (a.owner = $1) AND a.ctid = ANY(NULLIF(current_setting('fencedsql.claimed', true), '')::tid[]) AND \"fence_token\" = $2 -- who\n"
	if p.Keyed.SQL != wantDel || !equalRefs(p.Keyed.Args, p.Args) {
		t.Errorf("located DELETE:\n got  %q %v\n want %q", p.Keyed.SQL, p.Keyed.Args, wantDel)
	}
}

// SQLite's DELETE keyed by rowid: the fencing UPDATE returns the stamped rowids, which
// the wrapper binds to the DELETE as a JSON array. Exact SQL and arguments.
func TestRowidDeleteSQL(t *testing.T) {
	p, err := newTestRewriter(t, sqliteTest).Rewrite("DELETE FROM accounts AS a WHERE a.owner = ? /* who */", false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Keyed == nil || p.Pre.Keyed == nil || !p.Keyed.ClaimLocator || !p.Pre.Keyed.Locators {
		t.Fatalf("no rowid form: %+v", p.Keyed)
	}
	wantPre := `UPDATE accounts AS a SET "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE a.owner = ? RETURNING _rowid_`
	if p.Pre.Keyed.SQL != wantPre || !equalRefs(p.Pre.Keyed.Args, refs(TOK, TOK, 0)) {
		t.Errorf("rowid fencing UPDATE:\n got  %s %v\n want %s", p.Pre.Keyed.SQL, p.Pre.Keyed.Args, wantPre)
	}
	wantDel := `DELETE FROM accounts AS a WHERE (a.owner = ?) AND a._rowid_ IN (SELECT value FROM json_each(?)) AND "fence_token" = ? /* who */`
	if p.Keyed.SQL != wantDel || !equalRefs(p.Keyed.Args, refs(0, ArgStamped, TOK)) {
		t.Errorf("rowid DELETE:\n got  %s %v\n want %s", p.Keyed.SQL, p.Keyed.Args, wantDel)
	}
	for _, in := range []string{"DELETE FROM accounts ORDER BY id LIMIT 1", "DELETE FROM accounts LIMIT 1"} {
		if p, err := newTestRewriter(t, sqliteTest).Rewrite(in, false); err != nil || p.Keyed != nil {
			t.Errorf("%s: keyed %v, %v; want the token-only form (RETURNING stands before ORDER BY/LIMIT)", in, p != nil && p.Keyed != nil, err)
		}
	}
}

// The listed form of a keyed DELETE: the same DELETE restricted to the keys bound as
// arguments. Exact SQL and arguments, completed with a key and a list of three.
func TestListedDeleteSQL(t *testing.T) {
	p, err := newTestRewriter(t, mysqlTest).Rewrite("DELETE FROM accounts a WHERE a.owner = ? ORDER BY a.id LIMIT ?", false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Keyed == nil || p.Keyed.Listed == nil {
		t.Fatalf("no listed form")
	}
	keyed, err := p.Keyed.Listed.WithRowKey([]KeyColumn{{"tenant", "varchar(10)"}, {"id", "int"}}, mysqlTest.QuoteIdent)
	if err != nil {
		t.Fatal(err)
	}
	listed := keyed.WithKeyList(3)
	want := "DELETE FROM accounts a WHERE (a.owner = ?) AND CONCAT_WS(':', HEX(QUOTE(a.`tenant`)), a.`id`) IN (?, ?, ?) AND `fence_token` = ? ORDER BY a.id LIMIT ?"
	K := ArgKeyItem
	if listed.SQL != want || !equalRefs(listed.Args, refs(0, K, K, K, TOK, 1)) {
		t.Errorf("listed DELETE:\n got  %s %v\n want %s", listed.SQL, listed.Args, want)
	}
	if again := keyed.WithKeyList(1); !strings.Contains(again.SQL, "IN (?) AND") || len(again.Args) != 4 {
		t.Errorf("list of one: %s %v", again.SQL, again.Args)
	}
	// One integer key column: the column itself (its index serves the list), the keys
	// bound as integers.
	byInt, err := p.Keyed.Listed.WithRowKey([]KeyColumn{{"id", "bigint(20) unsigned"}}, mysqlTest.QuoteIdent)
	if err != nil || !byInt.ListInts || !strings.Contains(byInt.WithKeyList(2).SQL, "AND a.`id` IN (?, ?) AND") {
		t.Errorf("listed by one integer column: %v %v", byInt, err)
	}
	if keyed.ListInts {
		t.Errorf("a composite key listed as integers")
	}
}
