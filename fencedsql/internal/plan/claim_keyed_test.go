package plan

import (
	"strings"
	"testing"
)

// A MySQL/MariaDB claim with a LIMIT has keyed statements: the fencing UPDATE records
// the primary key of each row it stamps under the claim's nonce, and the read is
// restricted to the recorded keys. Exact SQL and arguments, for a composite key.
func TestKeyedClaimSQL(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest)
	in := "SELECT id FROM accounts a WHERE a.owner = ? ORDER BY a.updated_at LIMIT ? FOR UPDATE"
	p, err := rw.Rewrite(in, false)
	if err != nil {
		t.Fatal(err)
	}
	if p.Pre == nil || p.Pre.Keyed == nil || p.ClaimRead == nil || p.ClaimRead.Keyed == nil {
		t.Fatalf("claim of %q: no keyed statements (pre %v, read %v)", in, p.Pre, p.ClaimRead)
	}
	key := "CONCAT_WS(':', HEX(QUOTE(a.`tenant`)), a.`id```, HEX(QUOTE(UNIX_TIMESTAMP(a.`at`))))"
	cols := []KeyColumn{{"tenant", "varchar(10)"}, {"id`", "bigint(20)"}, {"at", "timestamp(6)"}}
	const N = ArgNonce
	pre, err := p.Pre.Keyed.WithRowKey(cols, mysqlTest.QuoteIdent)
	if err != nil {
		t.Fatal(err)
	}
	wantPre := "UPDATE accounts a SET `version` = a.`version` + 1 + 0 * (@fencedsql_claim := (? + 0 * LENGTH(@fencedsql_claimed := CONCAT(IF(@fencedsql_claim <=> ?, @fencedsql_claimed, ','), " + key +
		", ',')))), `fence_token` = CASE WHEN a.`fence_token` <= ? THEN ? ELSE NULL END WHERE a.owner = ? ORDER BY a.updated_at LIMIT ?"
	if pre.SQL != wantPre || !equalRefs(pre.Args, refs(N, N, TOK, TOK, 0, 1)) {
		t.Errorf("keyed claim:\n got  %s %v\n want %s", pre.SQL, pre.Args, wantPre)
	}
	read, err := p.ClaimRead.Keyed.WithRowKey(cols, mysqlTest.QuoteIdent)
	if err != nil {
		t.Fatal(err)
	}
	wantRead := "SELECT id FROM accounts a WHERE (a.owner = ?) AND @fencedsql_claim <=> ? AND LOCATE(CONCAT(',', " + key +
		", ','), @fencedsql_claimed) > 0 AND a.`fence_token` = ? ORDER BY a.updated_at LIMIT ? FOR UPDATE"
	if read.SQL != wantRead || !equalRefs(read.Args, refs(0, N, TOK, 1)) {
		t.Errorf("keyed read:\n got  %s %v\n want %s", read.SQL, read.Args, wantRead)
	}
	// An '@' in a string is no user variable.
	if p, err := rw.Rewrite("SELECT id FROM accounts WHERE email = 'a@b' LIMIT 1 FOR UPDATE", false); err != nil || p.Pre == nil || p.Pre.Keyed == nil {
		t.Errorf("claim with '@' in a string: %v", err)
	}
	// The template is unchanged: each table's key completes its own copy.
	if again, err := p.Pre.Keyed.WithRowKey([]KeyColumn{{"id", "int"}}, mysqlTest.QuoteIdent); err != nil || again.SQL == pre.SQL {
		t.Errorf("WithRowKey kept the first key: %v %v", again, err)
	}
	// ENUM and SET keys by their number (rt17k F4: {a} and {'',a} print alike).
	if e, err := p.Pre.Keyed.WithRowKey([]KeyColumn{{"e", "enum('','x')"}, {"s", "set('','a')"}}, mysqlTest.QuoteIdent); err != nil ||
		!strings.Contains(e.SQL, "HEX(QUOTE(a.`e` + 0)), HEX(QUOTE(a.`s` + 0))") {
		t.Errorf("ENUM/SET key: %v %v", e, err)
	}
	// An approximate number has no exact text: two stored FLOATs print alike.
	for _, typ := range []string{"float", "FLOAT(7,4) unsigned", "double", "double precision", "real"} {
		if _, err := p.Pre.Keyed.WithRowKey([]KeyColumn{{"id", "int"}, {"x", typ}}, mysqlTest.QuoteIdent); !isRefusal(err) {
			t.Errorf("key column of type %s: err %v, want a refusal", typ, err)
		}
	}
}

// Every MySQL/MariaDB claim is keyed; a LIMIT or a selection by the statement's clock
// requires the key (a table without one refuses the claim). PostgreSQL restricts by
// row locator instead. A locking read naming a user variable is refused.
func TestKeyedClaimKeyRequired(t *testing.T) {
	for _, c := range []struct {
		d                testDialect
		in               string
		keyed, keyNeeded bool
	}{
		{mysqlTest, "SELECT id FROM accounts WHERE id = ? FOR UPDATE", true, false},
		{mysqlTest, "SELECT id FROM accounts ORDER BY id FOR UPDATE", true, false},
		{mysqlTest, "SELECT id FROM accounts LIMIT 1 FOR UPDATE", true, true},
		{mysqlTest, "(SELECT id FROM accounts ORDER BY id LIMIT 2 LOCK IN SHARE MODE)", true, true},
		{pgTest, "SELECT id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE", false, false},
		// The statement's clock in the selection: the read's is later (red-team rt16k F2).
		{mysqlTest, "SELECT id FROM accounts WHERE updated_at <= NOW(6) - INTERVAL 3 SECOND FOR UPDATE", true, true},
		{mysqlTest, "SELECT id FROM accounts WHERE run_at <= CURRENT_TIMESTAMP FOR UPDATE", true, true},
		{mysqlTest, "SELECT id, NOW() FROM accounts WHERE id = ? FOR UPDATE", true, false},
		// PostgreSQL's plain claim: keyed by the ctids its UPDATE records (red-team rt19c).
		{pgTest, "SELECT id FROM accounts WHERE run_at <= now() FOR UPDATE", true, false},
	} {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil || p.Pre == nil {
			t.Errorf("%s: %q: %v", c.d.name, c.in, err)
			continue
		}
		got := p.Pre.Keyed != nil && p.ClaimRead != nil && p.ClaimRead.Keyed != nil
		if got != c.keyed || p.KeyRequired != c.keyNeeded {
			t.Errorf("%s: %q keyed %v (key required %v), want %v (%v)", c.d.name, c.in, got, p.KeyRequired, c.keyed, c.keyNeeded)
		}
	}
	for _, in := range []string{
		"SELECT id, @fencedsql_claimed FROM accounts LIMIT 1 FOR UPDATE",
		"SELECT id FROM accounts WHERE @FENCEDSQL_CLAIM IS NULL LIMIT 1 FOR UPDATE",
		"SELECT id FROM accounts WHERE id = @`fencedsql_claim` LIMIT 1 FOR UPDATE",
		"SELECT id FROM accounts WHERE id > @'fencedsql_\\claim' LIMIT 1 FOR UPDATE",
		"SELECT id FROM accounts WHERE id > @ last LIMIT 1 FOR UPDATE",
		"SELECT id FROM accounts WHERE id > 0 /*!50000 + @x */ LIMIT 1 FOR UPDATE",
		"SELECT id FROM accounts WHERE id = @last FOR UPDATE",
	} {
		p, err := newTestRewriter(t, mysqlTest).Rewrite(in, false)
		if err == nil && (p.ClaimErr == nil && p.TwoStepErr == nil) {
			t.Errorf("%q: claimed (pre %v), want refused", in, p.Pre)
		}
	}
}

// keyPart: integers by their digits, TIMESTAMP by its instant, ENUM/SET by their
// number, others by QUOTE() in hex, approximate numbers refused.
func TestKeyPartTypes(t *testing.T) {
	for _, c := range []struct{ typ, want string }{
		{"int(11)", "t.c"}, {"bigint(20) unsigned", "t.c"}, {"tinyint(1)", "t.c"}, {"int", "t.c"},
		{"mediumint(8) unsigned zerofill", "t.c"}, {"smallint", "t.c"},
		{"interval", "HEX(QUOTE(t.c))"}, {"bit(8)", "HEX(QUOTE(t.c))"}, {"decimal(10,2)", "HEX(QUOTE(t.c))"},
		{"varchar(10)", "HEX(QUOTE(t.c))"}, {"binary(4)", "HEX(QUOTE(t.c))"}, {"datetime(6)", "HEX(QUOTE(t.c))"},
		{"timestamp(6)", "HEX(QUOTE(UNIX_TIMESTAMP(t.c)))"}, {"enum('a','b')", "HEX(QUOTE(t.c + 0))"},
		{"float", ""}, {"double unsigned", ""},
	} {
		got, ok := keyPart("t", "c", c.typ)
		if got != c.want || ok != (c.want != "") {
			t.Errorf("keyPart(%s) = %q, %v; want %q", c.typ, got, ok, c.want)
		}
	}
}

// TestLocatedPlainClaimSQL: a PostgreSQL claim without ORDER BY, LIMIT, OFFSET or
// NOWAIT has a keyed form for its two statements: the fencing UPDATE records the
// ctids it writes, and the read is restricted to them (red-team rt19c F1). Under a
// WITH list the claim's query joins the list. A statement using the claim's query
// names has none.
func TestLocatedPlainClaimSQL(t *testing.T) {
	rw := newTestRewriter(t, pgTest)
	for _, c := range []struct{ in, pre, read string }{
		{"SELECT id FROM accounts a WHERE a.owner = $1 FOR UPDATE",
			`WITH fencedsql_claimed AS (UPDATE accounts a SET "version" = a."version" + 1, "fence_token" = CASE WHEN a."fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE a.owner = $1 RETURNING ctid) SELECT FROM fencedsql_claimed WHERE ` + stampRecord,
			`SELECT id FROM accounts a WHERE (a.owner = $1) AND a.ctid = ANY(NULLIF(current_setting('fencedsql.claimed', true), '')::tid[]) AND a."fence_token" = $2 FOR UPDATE`},
		{"WITH o AS (SELECT 1 AS x) SELECT id FROM accounts WHERE owner = $1 FOR UPDATE",
			`WITH o AS (SELECT 1 AS x), fencedsql_claimed AS (UPDATE accounts SET "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE owner = $1 RETURNING ctid) SELECT FROM fencedsql_claimed WHERE ` + stampRecord,
			""},
	} {
		p, err := rw.Rewrite(c.in, false)
		if err != nil || p.Pre == nil || p.Pre.Keyed == nil || p.ClaimRead == nil || p.ClaimRead.Keyed == nil {
			t.Fatalf("%s: no keyed statements (%v)", c.in, err)
		}
		if p.Pre.Keyed.SQL != c.pre || !equalRefs(p.Pre.Keyed.Args, refs(0, TOK)) {
			t.Errorf("%s: keyed claim\n got  %s %v\n want %s", c.in, p.Pre.Keyed.SQL, p.Pre.Keyed.Args, c.pre)
		}
		if !p.ClaimRead.Keyed.ClaimLocator || c.read != "" && p.ClaimRead.Keyed.SQL != c.read {
			t.Errorf("%s: keyed read (locator %v)\n got  %s\n want %s", c.in, p.ClaimRead.Keyed.ClaimLocator, p.ClaimRead.Keyed.SQL, c.read)
		}
	}
	if p, err := rw.Rewrite("SELECT id FROM accounts WHERE owner = (SELECT 1 FROM fencedsql_claimed) FOR UPDATE", false); err == nil && p.Pre != nil && p.Pre.Keyed != nil {
		t.Errorf("a claim naming the claim's query: keyed %s", p.Pre.Keyed.SQL)
	}
}
