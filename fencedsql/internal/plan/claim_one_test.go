package plan

import (
	"regexp"
	"slices"
	"strconv"
	"testing"
)

// The claim's fencing assignments as the test planner writes them, qualified by q, with
// the token at placeholder $n.
func claimSet(q string, n int) string {
	t := "$" + strconv.Itoa(n)
	return `"version" = ` + q + `."version" + 1, "fence_token" = CASE WHEN ` + q + `."fence_token" <= ` + t + ` THEN ` + t + `::bigint ELSE NULL END`
}

// located is claimByLocator's two WITH queries for the query FROM from (its ORDER BY,
// LIMIT and OFFSET included) with the locking clause lock (" FOR UPDATE", " FOR NO KEY
// UPDATE NOWAIT", …), over table with the SET items set and RETURNING ret; prefix is
// FROM with its LIMIT and OFFSET replaced by a LIMIT of the offset ("" without an
// OFFSET).
func located(table, from, lock, set, ret, prefix string) string {
	unlocked := "ARRAY(SELECT ctid FROM " + from + ")"
	if prefix != "" {
		unlocked = "ARRAY(SELECT fencedsql_u FROM unnest(" + unlocked + ") AS fencedsql_u WHERE fencedsql_u <> ALL(ARRAY(SELECT ctid FROM " + prefix + lock + ")))"
	}
	m := "ctid = ANY((SELECT l || u FROM fencedsql_locked)::tid[])"
	return "fencedsql_locked AS (SELECT ARRAY(SELECT ctid FROM " + from + lock + ") AS l, " + unlocked + " AS u), " +
		"fencedsql_claimed AS (UPDATE " + table + " SET " + set + " WHERE " + m + " AND (" + m + ") IS TRUE RETURNING " + ret + ")"
}

// lockedFirst is the selection of a read FOR UPDATE without ORDER BY, LIMIT, OFFSET or
// NOWAIT: its WHERE, after a subquery that locks the same rows FOR UPDATE.
func lockedFirst(table, cond string) string {
	return "WHERE (" + cond + ") AND (SELECT count(*) FROM (SELECT FROM " + table + " WHERE " + cond + " FOR UPDATE) AS fencedsql_locked) >= 0"
}

// On PostgreSQL a claimable locking read also has its one-statement form: the fencing
// UPDATE as a WITH query returning the rows, the caller's select list and ORDER BY
// over them.
func TestClaimOneShapes(t *testing.T) {
	cases := []struct {
		in, one string
		args    []ArgRef
	}{
		// FOR NO KEY UPDATE (and FOR SHARE, FOR KEY SHARE): the UPDATE's own row lock
		// is at least as strong; the caller's WHERE selects.
		{`SELECT balance FROM accounts a WHERE a.owner = $2 AND a.id > $1 FOR NO KEY UPDATE`,
			`WITH fencedsql_claimed AS (UPDATE accounts a SET ` + claimSet("a", 3) + ` WHERE a.owner = $2 AND a.id > $1 RETURNING a.*) SELECT balance FROM fencedsql_claimed AS a`,
			refs(0, 1, TOK)},
		{`SELECT $1::int, id FROM accounts WHERE id = $2 FOR KEY SHARE`,
			`WITH fencedsql_claimed AS (UPDATE accounts SET ` + claimSet("accounts", 3) + ` WHERE id = $2 RETURNING accounts.*) SELECT $1::int, id FROM fencedsql_claimed AS accounts`,
			refs(0, 1, TOK)},
		{`SELECT id, lower(owner) AS o, CASE WHEN balance > 0 THEN balance::numeric(10, 2) END FROM accounts WHERE id IN ($1, $2) FOR SHARE`,
			`WITH fencedsql_claimed AS (UPDATE accounts SET ` + claimSet("accounts", 3) + ` WHERE id IN ($1, $2) RETURNING accounts.*) SELECT id, lower(owner) AS o, CASE WHEN balance > 0 THEN balance::numeric(10, 2) END FROM fencedsql_claimed AS accounts`,
			refs(0, 1, TOK)},
		// FOR UPDATE also blocks FOR KEY SHARE: a subquery locks the rows FOR UPDATE first.
		{`SELECT * FROM accounts WHERE id = $1 OR id = $1 + 1 FOR UPDATE`,
			`WITH fencedsql_claimed AS (UPDATE accounts SET ` + claimSet("accounts", 2) + ` ` + lockedFirst("accounts", "id = $1 OR id = $1 + 1") + ` RETURNING accounts.*) SELECT * FROM fencedsql_claimed AS accounts`,
			refs(0, TOK)},
		{`SELECT id FROM accounts a FOR UPDATE OF a`,
			`WITH fencedsql_claimed AS (UPDATE accounts a SET ` + claimSet("a", 1) + ` WHERE (SELECT count(*) FROM (SELECT FROM accounts a FOR UPDATE) AS fencedsql_locked) >= 0 RETURNING a.*) SELECT id FROM fencedsql_claimed AS a`,
			refs(TOK)},
		// ORDER BY, LIMIT, OFFSET: the locator applies the limit, the outer SELECT only
		// the order. Its locking queries take FOR NO KEY UPDATE for a read FOR SHARE
		// (the UPDATE's own lock), FOR UPDATE only for a read FOR UPDATE.
		{`SELECT a.id, balance * 2 AS b FROM accounts AS a WHERE a.id > $1 ORDER BY a.id DESC LIMIT $2 OFFSET 1 FOR SHARE`,
			`WITH ` + located("accounts AS a", "accounts AS a WHERE a.id > $1 ORDER BY a.id DESC, ctid LIMIT $2 OFFSET 1", " FOR NO KEY UPDATE", claimSet("a", 3), "a.*", "accounts AS a WHERE a.id > $1 ORDER BY a.id DESC, ctid LIMIT COALESCE((1), 0::bigint)") + ` SELECT a.id, balance * 2 AS b FROM fencedsql_claimed AS a WHERE ` + claimConflictCheck + ` ORDER BY a.id DESC`,
			refs(0, 1, TOK)},
		// The caller's WITH list (RECURSIVE kept) comes first; NOWAIT stays in the locator.
		{`WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < $1) SELECT id FROM accounts WHERE id IN (SELECT n FROM r) ORDER BY id FOR NO KEY UPDATE NOWAIT`,
			`WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n+1 FROM r WHERE n < $1), ` + located("accounts", "accounts WHERE id IN (SELECT n FROM r) ORDER BY id", " FOR NO KEY UPDATE NOWAIT", claimSet("accounts", 2), "accounts.*", "") + ` SELECT id FROM fencedsql_claimed AS accounts WHERE ` + claimConflictCheck + ` ORDER BY id`,
			refs(0, TOK)},
		// Parentheses around the statement, FROM ONLY, FOR UPDATE OF, a final ';'.
		{`(SELECT id FROM ONLY accounts WHERE id = 1 FOR UPDATE OF accounts);`,
			`WITH fencedsql_claimed AS (UPDATE ONLY accounts SET ` + claimSet("accounts", 1) + ` ` + lockedFirst("ONLY accounts", "id = 1") + ` RETURNING accounts.*) SELECT id FROM fencedsql_claimed AS accounts`,
			refs(TOK)},
		// A schema-qualified table is qualified by its name; quoted names stay quoted.
		{`SELECT "accounts".id FROM public."accounts" WHERE id = $1 FOR NO KEY UPDATE`,
			`WITH fencedsql_claimed AS (UPDATE public."accounts" SET ` + claimSet(`"accounts"`, 2) + ` WHERE id = $1 RETURNING "accounts".*) SELECT "accounts".id FROM fencedsql_claimed AS "accounts"`,
			refs(0, TOK)},
		// Placeholders the claim's selection does not use are renumbered like Pre's.
		{`SELECT id FROM accounts WHERE id = $2 ORDER BY $1 FOR NO KEY UPDATE`,
			`WITH ` + located("accounts", "accounts WHERE id = $2 ORDER BY $1", " FOR NO KEY UPDATE", claimSet("accounts", 3), "accounts.*", "") + ` SELECT id FROM fencedsql_claimed AS accounts WHERE ` + claimConflictCheck + ` ORDER BY $1`,
			refs(0, 1, TOK)},
		// A read FOR UPDATE: its locator locks FOR UPDATE, the prefix query of an
		// OFFSET too.
		{`SELECT id FROM accounts WHERE id > $1 ORDER BY id OFFSET 1 FOR UPDATE NOWAIT`,
			`WITH ` + located("accounts", "accounts WHERE id > $1 ORDER BY id, ctid OFFSET 1", " FOR UPDATE NOWAIT", claimSet("accounts", 2), "accounts.*", "accounts WHERE id > $1 ORDER BY id, ctid LIMIT COALESCE((1), 0::bigint)") + ` SELECT id FROM fencedsql_claimed AS accounts WHERE ` + claimConflictCheck + ` ORDER BY id`,
			refs(0, TOK)},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, pgTest, Guard("accounts"), Guard("public.Accounts"))
		p, err := rw.Rewrite(c.in, false)
		if err != nil || p.Kind != KindClaim || p.ClaimErr != nil || p.Pre == nil {
			t.Errorf("rewrite(%q) = %+v, %v; want a claim", c.in, p, err)
			continue
		}
		one := p.ClaimOne
		if one == nil {
			t.Errorf("rewrite(%q): no one-statement claim", c.in)
			continue
		}
		if one.SQL != c.one {
			t.Errorf("one-statement claim of %q:\n got  %s\n want %s", c.in, one.SQL, c.one)
		}
		if !slices.Equal(one.Args, c.args) {
			t.Errorf("one-statement claim args of %q = %v, want %v", c.in, one.Args, c.args)
		}
		if one.Guard != p.Guard || one.NUser != p.NUser {
			t.Errorf("one-statement claim of %q: guard %v, %d placeholders; want the claim's %v, %d", c.in, one.Guard, one.NUser, p.Guard, p.NUser)
		}
	}
}

// Shapes one statement cannot answer as the two statements do keep the two-statement
// claim: ClaimOne is nil, the claim itself unchanged.
func TestClaimOneKeepsTwoStatements(t *testing.T) {
	for _, in := range []string{
		// aggregates, window and set-returning functions, other functions
		`SELECT count(*) FROM accounts WHERE id = $1 FOR UPDATE`,
		`SELECT id, row_number() OVER (ORDER BY id) FROM accounts FOR NO KEY UPDATE`,
		`SELECT generate_series(1, 2), id FROM accounts FOR NO KEY UPDATE`,
		`SELECT my_balance(id) FROM accounts FOR NO KEY UPDATE`,
		`SELECT "lower"(owner) FROM accounts FOR NO KEY UPDATE`,
		`SELECT pg_catalog.lower(owner) FROM accounts FOR NO KEY UPDATE`,
		// queries that would read the snapshot before the claim
		`SELECT id, (SELECT max(balance) FROM accounts) FROM accounts WHERE id = 1 FOR NO KEY UPDATE`,
		`SELECT id, EXISTS (SELECT 1 FROM ledger l WHERE l.account_id = accounts.id) FROM accounts FOR NO KEY UPDATE`,
		`SELECT id FROM accounts ORDER BY (SELECT count(*) FROM ledger WHERE account_id = id) LIMIT 1 FOR NO KEY UPDATE`,
		`SELECT id FROM accounts ORDER BY balance, some_rank(id) LIMIT 1 FOR NO KEY UPDATE`,
		// the row itself, other qualifiers, system columns
		`SELECT accounts FROM accounts FOR NO KEY UPDATE`,
		`SELECT a FROM accounts a FOR NO KEY UPDATE`,
		`SELECT to_json(a) FROM accounts a FOR NO KEY UPDATE`,
		`SELECT to_jsonb(a.*) FROM accounts a FOR NO KEY UPDATE`,
		`SELECT id FROM accounts ORDER BY (accounts.*) LIMIT 1 FOR NO KEY UPDATE`,
		`SELECT public.accounts.id FROM public.accounts FOR NO KEY UPDATE`,
		`SELECT accounts.id FROM accounts a FOR NO KEY UPDATE`,
		`SELECT ctid, id FROM accounts FOR NO KEY UPDATE`,
		`SELECT a.xmin FROM accounts a FOR NO KEY UPDATE`,
		`SELECT tableoid::regclass, id FROM accounts FOR NO KEY UPDATE`,
		// DISTINCT (a statement naming fencedsql_claimed is refused before: the
		// prefix is reserved)
		`SELECT DISTINCT owner FROM accounts FOR NO KEY UPDATE`,
		// a WHERE without a condition (the database's error, as the caller wrote it)
		`SELECT FROM ACCounts WHERE FOR UPDATE`,
	} {
		p, err := newTestRewriter(t, pgTest).Rewrite(in, false)
		if err != nil || p.Kind != KindClaim {
			t.Errorf("rewrite(%q) = %+v, %v; want a claim", in, p, err)
			continue
		}
		if p.ClaimOne != nil {
			t.Errorf("rewrite(%q): one-statement claim %s; want the two-statement form", in, p.ClaimOne.SQL)
		}
		if p.ClaimErr == nil && p.Pre == nil {
			t.Errorf("rewrite(%q): neither a claim nor its refusal", in)
		}
	}
	// MySQL's UPDATE returns no rows: never one statement.
	p, err := newTestRewriter(t, mysqlTest).Rewrite("SELECT balance FROM accounts WHERE id = ? FOR UPDATE", false)
	if err != nil || p.Pre == nil || p.ClaimOne != nil {
		t.Errorf("mysql claim = %+v, %v; want the two-statement form only", p, err)
	}
}

// Every refusal of the claim stays: a refused claim has no one-statement form.
func TestClaimOneKeepsRefusals(t *testing.T) {
	for _, in := range []string{
		`SELECT * FROM accounts WHERE id = $1 FOR UPDATE SKIP LOCKED`,
		`SELECT * FROM accounts WHERE id = $1 FOR UPDATE WAIT 5`,
		`SELECT * FROM accounts a JOIN b ON a.id = b.id FOR UPDATE`,
		`SELECT owner, count(*) FROM accounts GROUP BY owner FOR UPDATE`,
		`SELECT * FROM accounts ORDER BY random() LIMIT 1 FOR UPDATE`,
		`SELECT * FROM accounts WHERE version = $1 ORDER BY id LIMIT 1 FOR UPDATE`,
		`SELECT * FROM accounts WHERE clock_timestamp() > $1 FOR UPDATE NOWAIT`,
		`WITH x AS (SELECT * FROM accounts FOR UPDATE) SELECT * FROM x`,
		`WITH accounts AS (SELECT 1) SELECT * FROM accounts FOR UPDATE`,
		`SELECT * INTO t2 FROM accounts FOR UPDATE`,
		`SELECT * FROM accounts FOR UPDATE FOR SHARE`,
		`SELECT id FROM accounts WHERE id IN (SELECT id FROM accounts FOR UPDATE) FOR UPDATE`,
		`SELECT * FROM accounts, other FOR UPDATE`,
	} {
		p, err := newTestRewriter(t, pgTest).Rewrite(in, false)
		if err != nil || p.Kind != KindClaim || !isRefusal(p.ClaimErr) || p.ClaimOne != nil || p.Pre != nil {
			t.Errorf("rewrite(%q) = %+v, %v; want a refused claim without a one-statement form", in, p, err)
		}
	}
}

// A selection the two-statement claim would read differently the second time (a
// fencing column, a row locator, a volatile function, a limited subquery over the same
// table) keeps its one-statement claim, which selects once, and marks the plan so that
// the wrapper refuses the two statements (TwoStepErr). MySQL/MariaDB, which has no
// one-statement claim, refuses it at plan time.
func TestClaimOneTakesTwoStepUnsafeSelection(t *testing.T) {
	for _, in := range []string{
		`SELECT * FROM accounts WHERE version = $1 FOR UPDATE`,
		`SELECT * FROM accounts WHERE id = $1 AND fence_token = $2 FOR UPDATE`,
		`SELECT * FROM accounts WHERE ctid = $1 FOR UPDATE`,
		`SELECT * FROM accounts WHERE id = $1 AND clock_timestamp() > $2 FOR UPDATE`,
		`SELECT * FROM accounts WHERE id IN (SELECT id FROM accounts LIMIT 1) FOR UPDATE`,
		`WITH x AS (SELECT 1) SELECT * FROM accounts WHERE fence_token > 0 FOR SHARE`,
	} {
		p, err := newTestRewriter(t, pgTest).Rewrite(in, false)
		if err != nil || p.Kind != KindClaim || p.ClaimErr != nil || p.ClaimOne == nil || !isRefusal(p.TwoStepErr) {
			t.Errorf("rewrite(%q) = %+v, %v; want a one-statement claim whose two-statement form is refused", in, p, err)
		}
	}
	for _, in := range []string{
		"SELECT * FROM accounts WHERE version = ? FOR UPDATE",
		"SELECT * FROM accounts WHERE id = ? AND SYSDATE() > ? FOR UPDATE",
	} {
		p, err := newTestRewriter(t, mysqlTest).Rewrite(in, false)
		if err != nil || p.Kind != KindClaim || !isRefusal(p.ClaimErr) || p.Pre != nil {
			t.Errorf("mysql: rewrite(%q) = %+v, %v; want a refused claim", in, p, err)
		}
	}
}

var dollarParam = regexp.MustCompile(`\$[0-9]+`)

// FuzzClaimOne holds the one-statement claim to its contract on any text: only
// PostgreSQL claims that are not refused have one; it binds the token, draws only the
// caller's arguments, numbers its placeholders $1…$len(Args) with each used, and names
// the claim's table.
func FuzzClaimOne(f *testing.F) {
	for _, s := range []string{
		`SELECT * FROM accounts WHERE id = $1 FOR UPDATE`,
		`SELECT a.id, balance FROM accounts a WHERE a.id > $2 ORDER BY id LIMIT $1 FOR NO KEY UPDATE NOWAIT`,
		`WITH x AS (SELECT $1::int AS n) SELECT $2, id FROM accounts WHERE id IN (SELECT n FROM x) FOR SHARE`,
		`(SELECT id FROM ONLY accounts WHERE id = 1 FOR UPDATE OF accounts);`,
		"SELECT * FROM `accounts` WHERE id = ? FOR UPDATE",
		"SELECT FROM ACCounts WHERE FOR UPDATE",
	} {
		f.Add(s)
	}
	pg := newTestRewriter(f, pgTest)
	others := []*Planner{newTestRewriter(f, mysqlTest), newTestRewriter(f, sqliteTest)}
	f.Fuzz(func(t *testing.T, src string) {
		for _, rw := range others {
			if p, err := rw.Rewrite(src, false); err == nil && p.ClaimOne != nil {
				t.Fatalf("%q: a one-statement claim outside PostgreSQL: %s", src, p.ClaimOne.SQL)
			}
		}
		p, err := pg.Rewrite(src, false)
		if err != nil || p.ClaimOne == nil {
			return
		}
		one := p.ClaimOne
		if p.Kind != KindClaim || p.ClaimErr != nil || p.Pre == nil {
			t.Fatalf("%q: one-statement claim %s on a plan that is not a claim made: %+v", src, one.SQL, p)
		}
		if one.Guard != p.Guard || one.Guard == nil || !slices.Contains(one.Args, ArgToken) {
			t.Fatalf("%q: one-statement claim %s names %v, args %v", src, one.SQL, one.Guard, one.Args)
		}
		checkArgs(t, "postgres", src, one)
		used := map[int]bool{}
		for _, m := range dollarParam.FindAllString(one.SQL, -1) {
			n, _ := strconv.Atoi(m[1:])
			used[n] = true
		}
		// A $n inside a string or a comment copied from the caller's text counts too:
		// the placeholders must at least cover 1…len(Args).
		for n := 1; n <= len(one.Args); n++ {
			if !used[n] {
				t.Fatalf("%q: one-statement claim %s never uses $%d of %v", src, one.SQL, n, one.Args)
			}
		}
	})
}
