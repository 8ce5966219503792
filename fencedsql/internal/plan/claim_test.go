package plan

import (
	"strings"
	"testing"
)

// A locking read of a guarded table is claimed: the caller's text runs unchanged after
// a fencing UPDATE over the rows it locks.
func TestRewriteClaims(t *testing.T) {
	cases := []struct {
		d     testDialect
		in    string
		claim string
		args  []ArgRef
	}{
		{pgTest, `SELECT * FROM accounts WHERE id = $1 FOR UPDATE`,
			`UPDATE accounts SET "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`,
			refs(0, TOK)},
		{pgTest, `SELECT balance FROM accounts a WHERE a.owner = $2 AND a.id > $1 FOR NO KEY UPDATE`,
			`UPDATE accounts a SET "version" = a."version" + 1, "fence_token" = CASE WHEN a."fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE a.owner = $2 AND a.id > $1`,
			refs(0, 1, TOK)},
		// GORM's First with clause.Locking: ORDER BY … LIMIT, claimed by row locator.
		{pgTest, `SELECT * FROM "accounts" WHERE "accounts"."id" = $1 ORDER BY "accounts"."id" LIMIT $2 FOR UPDATE`,
			`WITH ` + located(`"accounts"`, `"accounts" WHERE "accounts"."id" = $1 ORDER BY "accounts"."id", ctid LIMIT $2`, " FOR UPDATE", claimSet(`"accounts"`, 3), "ctid", "") + ` SELECT FROM fencedsql_claimed WHERE ` + claimRecordCheck,
			refs(0, 1, TOK)},
		// Placeholders only in the select list are not the claim's.
		{pgTest, `SELECT $1::int, id FROM accounts WHERE id = $2 FOR UPDATE`,
			`UPDATE accounts SET "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`,
			refs(1, TOK)},
		{mysqlTest, "SELECT * FROM `accounts` WHERE `accounts`.`id` = ? ORDER BY `accounts`.`id` LIMIT ? FOR UPDATE",
			"UPDATE `accounts` SET `version` = `accounts`.`version` + 1, `fence_token` = CASE WHEN `accounts`.`fence_token` <= ? THEN ? ELSE NULL END WHERE `accounts`.`id` = ? ORDER BY `accounts`.`id` LIMIT ?",
			refs(TOK, TOK, 0, 1)},
		// NOWAIT is kept by the claim's inner locking query (PostgreSQL), which locks
		// with the read's strength, at least FOR NO KEY UPDATE (the UPDATE's own lock:
		// red-team rt37d F1).
		{pgTest, `SELECT * FROM accounts WHERE id = $1 FOR UPDATE NOWAIT`,
			`WITH ` + located("accounts", "accounts WHERE id = $1", " FOR UPDATE NOWAIT", claimSet("accounts", 2), "ctid", "") + ` SELECT FROM fencedsql_claimed WHERE ` + claimRecordCheck,
			refs(0, TOK)},
		{pgTest, `SELECT * FROM accounts WHERE id = $1 FOR NO KEY UPDATE NOWAIT`,
			`WITH ` + located("accounts", "accounts WHERE id = $1", " FOR NO KEY UPDATE NOWAIT", claimSet("accounts", 2), "ctid", "") + ` SELECT FROM fencedsql_claimed WHERE ` + claimRecordCheck,
			refs(0, TOK)},
		{pgTest, `SELECT * FROM accounts WHERE id > $1 ORDER BY id LIMIT 1 FOR SHARE`,
			`WITH ` + located("accounts", "accounts WHERE id > $1 ORDER BY id, ctid LIMIT 1", " FOR NO KEY UPDATE", claimSet("accounts", 2), "ctid", "") + ` SELECT FROM fencedsql_claimed WHERE ` + claimRecordCheck,
			refs(0, TOK)},
		{pgTest, `SELECT * FROM accounts WHERE id > $1 ORDER BY id LIMIT 1 FOR KEY SHARE NOWAIT`,
			`WITH ` + located("accounts", "accounts WHERE id > $1 ORDER BY id, ctid LIMIT 1", " FOR NO KEY UPDATE NOWAIT", claimSet("accounts", 2), "ctid", "") + ` SELECT FROM fencedsql_claimed WHERE ` + claimRecordCheck,
			refs(0, TOK)},
		{pgTest, `SELECT * FROM accounts WHERE id > $1 ORDER BY id LIMIT 1 FOR UPDATE OF accounts`,
			`WITH ` + located("accounts", "accounts WHERE id > $1 ORDER BY id, ctid LIMIT 1", " FOR UPDATE", claimSet("accounts", 2), "ctid", "") + ` SELECT FROM fencedsql_claimed WHERE ` + claimRecordCheck,
			refs(0, TOK)},
		{mysqlTest, "SELECT ?, id FROM accounts WHERE id = ? FOR UPDATE",
			"UPDATE accounts SET `version` = accounts.`version` + 1, `fence_token` = CASE WHEN accounts.`fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?",
			refs(TOK, TOK, 1)},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d)
		p, err := rw.Rewrite(c.in, false)
		if err != nil {
			t.Errorf("%s: rewrite(%q): %v", c.d.name, c.in, err)
			continue
		}
		if p.Kind != KindClaim || p.SQL != c.in || p.Pre == nil || p.ClaimErr != nil {
			t.Errorf("%s: rewrite(%q) = kind %v sql %q pre %v err %v, want a claim keeping the text", c.d.name, c.in, p.Kind, p.SQL, p.Pre, p.ClaimErr)
			continue
		}
		if p.Pre.SQL != c.claim {
			t.Errorf("%s: claim of %q:\n got  %s\n want %s", c.d.name, c.in, p.Pre.SQL, c.claim)
		}
		if !equalRefs(p.Pre.Args, c.args) {
			t.Errorf("%s: claim args of %q = %v, want %v", c.d.name, c.in, p.Pre.Args, c.args)
		}
	}
}

// Locking reads that cannot be claimed exactly are refused when they carry a token;
// reads that lock no guarded row, and plain reads, pass.
func TestRewriteClaimRefusedOrPassed(t *testing.T) {
	refused := []struct {
		d  testDialect
		in string
	}{
		{pgTest, `SELECT * FROM accounts WHERE id = $1 FOR UPDATE SKIP LOCKED`},
		{mysqlTest, `SELECT * FROM accounts WHERE id = ? FOR UPDATE NOWAIT`},
		{pgTest, `SELECT * FROM accounts a JOIN b ON a.id = b.id FOR UPDATE`},
		{pgTest, `SELECT * FROM b JOIN accounts a ON a.id = b.id FOR UPDATE`},
		{pgTest, `SELECT * FROM b, accounts FOR UPDATE`},
		{pgTest, `SELECT owner, count(*) FROM accounts GROUP BY owner FOR UPDATE`},
		{mysqlTest, `SELECT * FROM accounts ORDER BY id LIMIT 5, 1 FOR UPDATE`},
		{mysqlTest, `SELECT * FROM accounts LIMIT 1 OFFSET 5 FOR UPDATE`},
		// A selection the claim reads twice (stable.go): PostgreSQL's claim by row
		// locator, MySQL's two statements.
		{pgTest, `SELECT * FROM accounts WHERE version = $1 ORDER BY id LIMIT 1 FOR UPDATE`},
		{pgTest, `SELECT * FROM accounts WHERE ctid = $1 FOR UPDATE NOWAIT`},
		{mysqlTest, `SELECT * FROM accounts WHERE version = ? FOR UPDATE`},
		{mysqlTest, `SELECT * FROM accounts ORDER BY rand() LIMIT 1 FOR UPDATE`},
		// A locking read inside a WITH list is not claimed (issue 22).
		{pgTest, `WITH x AS (SELECT * FROM accounts FOR UPDATE) SELECT * FROM x`},
		// An ORDER BY by select-list position or output name before a LIMIT: the
		// claim's selection has no select list, and would order (and pick) other rows.
		{pgTest, `SELECT id FROM accounts ORDER BY 1 LIMIT 1 FOR UPDATE`},
		{pgTest, `SELECT balance AS id FROM accounts ORDER BY id DESC LIMIT 1 FOR UPDATE`},
		{pgTest, `SELECT id, balance b FROM accounts ORDER BY b NULLS FIRST, id OFFSET 2 FOR NO KEY UPDATE`},
		{pgTest, `SELECT id, count(*) "N" FROM accounts ORDER BY "N" LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT id FROM accounts ORDER BY 1 DESC LIMIT 1 FOR UPDATE`},
		// MySQL/MariaDB: a string-literal alias, an alias in another case or quoted,
		// a string item named by its value, and an output name inside an expression.
		{mysqlTest, `SELECT balance AS "id" FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT balance AS 'id' FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT balance 'id' FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT balance "ID" FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT balance AS 'i\d' FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, "SELECT balance AS `ID` FROM accounts ORDER BY id LIMIT 1 FOR UPDATE"},
		{mysqlTest, `SELECT balance, 'id' FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT balance AS x FROM accounts ORDER BY x + 0 LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT balance AS x FROM accounts ORDER BY (SELECT x) LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT ALL balance id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		// What the claim's read, restricted to the rows stamped, would compute over
		// those alone (MySQL/MariaDB, with a LIMIT).
		{mysqlTest, `SELECT id, COUNT(*) OVER () FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT SQL_CALC_FOUND_ROWS id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT id FROM accounts ORDER BY ROW_NUMBER() OVER (ORDER BY balance) LIMIT 1 FOR UPDATE`},
		// Clauses a SELECT takes and the claim's UPDATE does not.
		{mysqlTest, `SELECT id FROM accounts WHERE id = 1 LIMIT 1 ROWS EXAMINED 10 FOR UPDATE`},
		{mysqlTest, `SELECT id FROM accounts WHERE id = 1 LIMIT ROWS EXAMINED 10 LOCK IN SHARE MODE`},
		{mysqlTest, `SELECT id FROM accounts WHERE id = 1 WINDOW w AS () FOR UPDATE`},
		{mysqlTest, `SELECT id FROM accounts WHERE id = 1 HAVING id = 1 FOR UPDATE`},
		{mysqlTest, `SELECT id FROM accounts WHERE id = 1 GROUP BY id FOR UPDATE`},
		{mysqlTest, `SELECT id FROM accounts WHERE id = 1 UNION SELECT 1 FOR UPDATE`},
		{pgTest, `SELECT id FROM accounts WHERE id = 1 WINDOW w AS () FOR UPDATE`},
		{pgTest, `SELECT id FROM accounts WHERE id = 1 WINDOW w AS () ORDER BY id LIMIT 1 FOR UPDATE`},
		{pgTest, `SELECT id FROM accounts WHERE id = 1 GROUP BY id FOR UPDATE`},
		// An OF list naming another relation than the read's table (by its alias).
		{pgTest, `SELECT id FROM accounts WHERE id = 1 FOR UPDATE OF other`},
		{pgTest, `SELECT id FROM accounts WHERE id = 1 ORDER BY id LIMIT 1 FOR UPDATE OF nosuch`},
		{pgTest, `SELECT id FROM accounts a WHERE id = 1 FOR UPDATE OF accounts`},
		{pgTest, `SELECT id FROM accounts a WHERE id = 1 FOR UPDATE OF a, b NOWAIT`},
	}
	for _, c := range refused {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil || p.Kind != KindClaim || !isRefusal(p.ClaimErr) || p.SQL != c.in {
			t.Errorf("%s: rewrite(%q) = %+v, %v; want a claim refused with ErrUnsupported", c.d.name, c.in, p, err)
		}
	}
	// Orders that name the table's own columns or expressions, or that pick no rows
	// (no LIMIT, no OFFSET), are claimed.
	for _, c := range []struct {
		d  testDialect
		in string
	}{
		{pgTest, `SELECT id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{pgTest, `SELECT a.id AS x FROM accounts a ORDER BY a.id DESC LIMIT 1 FOR UPDATE`},
		{pgTest, `SELECT id, balance FROM accounts ORDER BY balance + 1, id LIMIT 1 FOR UPDATE`},
		{pgTest, `SELECT id FROM accounts ORDER BY 1 FOR UPDATE`},
		{mysqlTest, `SELECT id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		// Select modifiers are not expressions with an alias.
		{mysqlTest, `SELECT ALL id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT HIGH_PRIORITY STRAIGHT_JOIN SQL_SMALL_RESULT SQL_BIG_RESULT SQL_BUFFER_RESULT SQL_NO_CACHE id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{pgTest, `SELECT ALL id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		// An operand, a qualified column, a string alias of another value, and what is
		// computed over the same rows without a LIMIT.
		{mysqlTest, `SELECT id, balance = 'id' FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT balance AS x FROM accounts ORDER BY accounts.x LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT balance AS 'id ' FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`},
		{mysqlTest, `SELECT id, COUNT(*) OVER () FROM accounts WHERE id > 0 FOR UPDATE`},
		{mysqlTest, `SELECT SQL_CALC_FOUND_ROWS id FROM accounts WHERE id > 0 FOR UPDATE`},
		// FOR UPDATE OF the read's table, by its alias or its name.
		{pgTest, `SELECT id FROM accounts a WHERE id = 1 FOR UPDATE OF a NOWAIT`},
		{pgTest, `SELECT id FROM accounts WHERE id = 1 FOR UPDATE OF accounts`},
	} {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil || p.Kind != KindClaim || p.ClaimErr != nil || p.Pre == nil {
			t.Errorf("%s: rewrite(%q) = %+v, %v; want a claim", c.d.name, c.in, p, err)
		}
	}
	passed := []struct {
		d  testDialect
		in string
	}{
		{pgTest, `SELECT * FROM accounts WHERE id = $1`},
		// A locking clause of the outer query does not lock a WHERE subquery's rows.
		{pgTest, `SELECT * FROM other WHERE id IN (SELECT id FROM accounts) FOR UPDATE`},
		{mysqlTest, `SELECT * FROM other WHERE id IN (SELECT id FROM accounts) FOR UPDATE`},
	}
	for _, c := range passed {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil || p.Kind != KindPass {
			t.Errorf("%s: rewrite(%q) = %+v, %v; want pass-through", c.d.name, c.in, p, err)
		}
	}
}

func equalRefs(a, b []ArgRef) bool {
	if len(a) != len(b) {
		return false
	}
	for i := range a {
		if a[i] != b[i] {
			return false
		}
	}
	return true
}

// The read of the two-statement claim is the caller's locking read restricted to the
// rows carrying the token (the rows the claim stamped), its placeholders where the
// caller put them; a locking read with an OFFSET has none (it is claimed in one
// statement or refused).
func TestClaimReads(t *testing.T) {
	cases := []struct {
		d    testDialect
		in   string
		read string
		args []ArgRef
	}{
		{mysqlTest, "SELECT ?, id FROM accounts WHERE id = ? OR id = 2 ORDER BY id LIMIT ? FOR UPDATE",
			"SELECT ?, id FROM accounts WHERE (id = ? OR id = 2) AND accounts.`fence_token` = ? ORDER BY id LIMIT ? FOR UPDATE",
			refs(0, 1, TOK, 2)},
		{mysqlTest, "SELECT * FROM `accounts` AS a ORDER BY a.id LIMIT 1 FOR UPDATE",
			"SELECT * FROM `accounts` AS a WHERE a.`fence_token` = ? ORDER BY a.id LIMIT 1 FOR UPDATE",
			refs(TOK)},
		{mysqlTest, "SELECT id FROM shop.accounts WHERE id IN (?, ?) LOCK IN SHARE MODE",
			"SELECT id FROM shop.accounts WHERE (id IN (?, ?)) AND accounts.`fence_token` = ? LOCK IN SHARE MODE",
			refs(0, 1, TOK)},
		{pgTest, `SELECT id, (SELECT 1) FROM accounts WHERE balance = $1 ORDER BY id LIMIT $2 FOR UPDATE`,
			`SELECT id, (SELECT 1) FROM accounts WHERE (balance = $1) AND accounts.ctid = ANY(NULLIF(current_setting('fencedsql.claimed', true), '')::tid[]) AND accounts."fence_token" = $3 ORDER BY id LIMIT $2 FOR UPDATE`,
			refs(0, 1, TOK)},
		{pgTest, `WITH w AS (SELECT 1) SELECT * FROM ONLY "accounts" x FOR NO KEY UPDATE OF x`,
			`WITH w AS (SELECT 1) SELECT * FROM ONLY "accounts" x WHERE x."fence_token" = $1 FOR NO KEY UPDATE OF x`,
			refs(TOK)},
	}
	for _, c := range cases {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil || p.Kind != KindClaim || p.ClaimRead == nil {
			t.Errorf("%s: rewrite(%q) = %+v, %v; want a claim with its read", c.d.name, c.in, p, err)
			continue
		}
		if p.ClaimRead.SQL != c.read || !equalRefs(p.ClaimRead.Args, c.args) {
			t.Errorf("%s: read of %q:\n got  %s %v\n want %s %v", c.d.name, c.in, p.ClaimRead.SQL, p.ClaimRead.Args, c.read, c.args)
		}
	}
	// OFFSET: one statement or nothing.
	p, err := newTestRewriter(t, pgTest).Rewrite(`SELECT id FROM accounts ORDER BY id LIMIT 1 OFFSET 1 FOR UPDATE`, false)
	if err != nil || p.ClaimOne == nil || p.ClaimRead != nil {
		t.Errorf("OFFSET: %+v, %v; want the one-statement claim and no two-statement read", p, err)
	}
	p, err = newTestRewriter(t, pgTest).Rewrite(`SELECT id, (SELECT 1) FROM accounts ORDER BY id LIMIT 1 OFFSET 1 FOR UPDATE`, false)
	if err != nil || !isRefusal(p.ClaimErr) {
		t.Errorf("OFFSET without the one-statement form: %+v, %v; want the claim refused", p, err)
	}
}

// Without a LIMIT or OFFSET, an ORDER BY the claim's selection cannot read (an output
// name, a position) picks no row: the claim's selection leaves it out, and the read
// (and the one-statement claim's outer SELECT) keeps it.
func TestClaimOrderByOutputWithoutLimit(t *testing.T) {
	for _, c := range []struct {
		d  testDialect
		in string
	}{
		{pgTest, `SELECT balance AS x FROM accounts WHERE id > 0 ORDER BY x FOR UPDATE`},
		{pgTest, `SELECT balance AS x FROM accounts WHERE id > 0 ORDER BY x FOR UPDATE NOWAIT`},
		{mysqlTest, `SELECT balance AS x FROM accounts WHERE id > 0 ORDER BY x + 0 FOR UPDATE`},
		{mysqlTest, `SELECT balance AS 'x' FROM accounts WHERE id > 0 ORDER BY x FOR UPDATE`},
	} {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil || p.Kind != KindClaim || p.ClaimErr != nil || p.Pre == nil {
			t.Errorf("%s: rewrite(%q) = %+v, %v; want a claim", c.d.name, c.in, p, err)
			continue
		}
		for _, q := range []*Plan{p.Pre, p.Pre.Keyed} {
			if q != nil && strings.Contains(q.SQL, "ORDER BY") {
				t.Errorf("%s: the claim of %q selects with its ORDER BY: %s", c.d.name, c.in, q.SQL)
			}
		}
		if p.ClaimRead == nil || !strings.Contains(p.ClaimRead.SQL, "ORDER BY x") {
			t.Errorf("%s: the read of %q lost its ORDER BY: %+v", c.d.name, c.in, p.ClaimRead)
		}
		if p.ClaimOne != nil && !strings.HasSuffix(p.ClaimOne.SQL, "ORDER BY x") {
			t.Errorf("%s: the one-statement claim of %q lost its ORDER BY: %s", c.d.name, c.in, p.ClaimOne.SQL)
		}
	}
}
