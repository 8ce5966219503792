package fencedsql

// Fuzz targets for the rewriter, one per dialect:
//
//	go test -run XXX -fuzz '^FuzzRewritePostgres$' -fuzztime 60s ./fencedsql/
//	go test -run XXX -fuzz '^FuzzRewriteMySQL$'    -fuzztime 60s ./fencedsql/
//	go test -run XXX -fuzz '^FuzzRewriteSQLite$'   -fuzztime 60s ./fencedsql/
//
// Every input is rewritten for the guarded tables "accounts" and "shop.orders", plain
// and ExpectVersion, default and strict mode, and run once through a wrapped connection
// over a recording driver. The invariants are listed on (*fzTarget).check.
//
// Every invariant is always enforced.

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"regexp"
	"runtime/debug"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// fzSeeds are hostile inputs added to every target's seed corpus, on top of every input
// of rewriteCases and the statements of the pass-through, refusal and no-bypass tests.
var fzSeeds = []string{
	// pass-through, refusal and bypass shapes from rewrite_test.go
	`SELECT * FROM accounts WHERE id = $1 FOR UPDATE`,
	`SELECT * FROM accounts WHERE id = ? FOR UPDATE`,
	`WITH x AS (SELECT * FROM accounts FOR NO KEY UPDATE) SELECT * FROM x`,
	`SELECT 'UPDATE accounts SET x = 1' AS q`,
	`UPDATE other SET x = (SELECT max(b) FROM accounts)`,
	`UPDATE other SET x = 1 FROM accounts WHERE other.id = accounts.id`,
	`INSERT INTO other (a) SELECT a FROM accounts`,
	`UPDATE accounts_archive SET x = 1`,
	`UPDATE other.orders SET x = 1`,
	`DELETE FROM other.orders WHERE id = $1`,
	`CREATE TABLE accounts (id int, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`,
	`UPDATE a JOIN accounts b ON a.id = b.id SET b.x = 1`,
	`UPDATE accounts, b SET accounts.x = 1`,
	`DELETE a FROM accounts a JOIN b ON a.id = b.id`,
	`DELETE FROM accounts USING accounts JOIN b`,
	`UPDATE accounts SET x = 1 FROM b WHERE accounts.id = b.id`,
	`WITH u AS (UPDATE accounts SET x = 1 RETURNING id) SELECT * FROM u`,
	`WITH x AS (SELECT 1) DELETE FROM accounts`,
	`INSERT INTO accounts (a) SELECT a FROM b`,
	`INSERT INTO accounts VALUES (1, 2)`,
	`INSERT INTO accounts DEFAULT VALUES`,
	`INSERT INTO accounts (a) VALUES ROW(1), ROW(2)`,
	`UPDATE accounts SET x = 1; SELECT 1`,
	`SELECT 1; DELETE FROM accounts`,
	`UPDATE OR REPLACE accounts SET a = 1`,
	`INSERT OR IGNORE INTO accounts (a) VALUES (1)`,
	`REPLACE INTO accounts (a) VALUES (1)`,
	`INSERT IGNORE INTO accounts (a) VALUES (1)`,
	`UPDATE IGNORE accounts SET a = 1`,
	`DELETE IGNORE FROM accounts WHERE a = 1`,
	`TRUNCATE accounts`, `TRUNCATE TABLE shop.orders`,
	`MERGE INTO accounts a USING src s ON a.id = s.id WHEN MATCHED THEN UPDATE SET x = 1`,
	`COPY accounts FROM STDIN`,
	`LOAD DATA INFILE '/tmp/x' INTO TABLE accounts`,
	`EXPLAIN ANALYZE UPDATE accounts SET x = 1`,
	`EXPLAIN (ANALYZE) DELETE FROM accounts`,
	`ANALYZE UPDATE accounts SET x = 1`,
	`DELETE FROM accounts WHERE CURRENT OF c`,
	`UPDATE accounts SET fence_token = 1`,
	`UPDATE accounts SET (a, version) = (1, 2)`,
	`INSERT INTO accounts (a, fence_token) VALUES (1, 2)`,
	`INSERT INTO accounts (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET version = 3`,
	`INSERT INTO accounts SET a = 1, version = 2`,
	`UPDATE accounts SET x = 1 /*!, version = 5 */`,
	`DELETE FROM accounts WHERE id = 1 /*M! OR 1 = 1 */`,
	`UPDATE accounts SET a = ?1`, `UPDATE accounts SET a = :name`, `DELETE FROM accounts WHERE id = $id`,
	`UPDAT accounts SET a = 1`,
	`/*! UPDATE accounts SET x = 1 */`,
	`UPDATE /*! accounts */ SET x = 1`,
	`DELETE FROM /*!50000 accounts */ WHERE id = 1`,
	`UPDATE U&"accounts" SET x = 1`,
	`UPDATE U&"\0061ccounts" SET x = 1`,
	`INSERT INTO U&"\0061ccounts" (a) VALUES (1)`,
	`PREPARE p AS UPDATE accounts SET x = 1`,
	`PREPARE s FROM 'UPDATE accounts SET x = 1'`,
	`(WITH u AS (UPDATE accounts SET x = 1 RETURNING id) SELECT * FROM u)`,
	`DO $$BEGIN UPDATE accounts SET x = 1; END$$`,

	// nested comments
	`UPDATE accounts SET x = 1 /* a /* b */ c */ WHERE id = $1`,
	`UPDATE accounts SET x = 1 /* a /* b */ WHERE id = $1 -- */ c */`,
	`DELETE FROM accounts /* /* */ */ WHERE id = ?`,
	// dollar quotes with tags
	`UPDATE accounts SET note = $a$ $b$ ' ; $1 $b$ $a$ WHERE id = $1`,
	`UPDATE accounts SET note = $x$$x$ WHERE id = $1`,
	`INSERT INTO accounts (note) VALUES ($q$accounts;$q$)`,
	`UPDATE accounts SET note = $ä$ x $ä$`,
	// E'' strings with backslashes
	`UPDATE accounts SET note = E'\\' WHERE id = $1`,
	`UPDATE accounts SET note = E'\'' , y = $1 WHERE id = $2`,
	"UPDATE accounts SET note = E'a'\n'\\' , x = 1' WHERE id = $1",
	"UPDATE accounts SET note = E'a' -- c\n'b\\'c' WHERE id = $1",
	`UPDATE accounts SET note = 'a\' WHERE id = ?`,
	`UPDATE accounts SET note = 'a\\' WHERE id = ?`,
	// identifiers containing keywords
	`UPDATE "update" SET "set" = 1 WHERE "where" = $1`,
	`UPDATE set_accounts SET x = 1`,
	`UPDATE accounts SET "update" = 'update accounts set', "where" = 1 WHERE "set" = $1`,
	"UPDATE `accounts` SET `set` = ? WHERE `where` = ?",
	`DELETE FROM "delete" WHERE "from" = 'accounts'`,
	`INSERT INTO accounts ("insert", "values") VALUES ($1, $2)`,
	`UPDATE accounts SET x = 1 WHERE fence_token_x = 1`,
	// Unicode
	`UPDATE accounts SET note = 'données ☃' WHERE id = $1`,
	`UPDATE "ACCOUNTS" SET "ñ" = 1`,
	"UPDATE accounts SET x = '\xff\xfe' WHERE id = ?",
	"\xef\xbb\xbfUPDATE accounts SET x = 1",
	"UPDATE\u00a0accounts SET x = 1",
	"UPDATE accounts\u2028SET x = 1",
	// statements cut mid-string, mid-comment, mid-identifier
	`UPDATE accounts SET x = 'cut`,
	`UPDATE accounts SET x = $q$cut`,
	`UPDATE accounts SET x = 1 /* cut`,
	`UPDATE "accounts SET x = 1`,
	"UPDATE `accounts SET x = 1",
	`UPDATE [accounts SET x = 1`,
	`DELETE FROM accounts WHERE id = E'cut\'`,
	// NUL bytes
	"UPDATE accounts SET x = 1\x00; DELETE FROM accounts",
	"UPDATE accounts SET x = '\x00' WHERE id = 1",
	"\x00UPDATE accounts SET x = 1",
	"DELETE FROM accounts -- \x00\nWHERE id = 1",
	// U&"…"
	`UPDATE U&"accounts" UESCAPE '!' SET x = 1`,
	`UPDATE u&"acc" SET x = 1`,
	`SELECT * FROM U&"\0061ccounts"`,
	`UPDATE shop.U&"orders" SET x = 1`,
	// MySQL /*! */
	`/*!40101 SET NAMES utf8 */`,
	`UPDATE accounts SET x = 1 /*!50000 WHERE id = 1 */`,
	`SELECT 1 /*! ; UPDATE accounts SET x = 1 */`,
	`SELECT 1; /*! UPDATE accounts SET x = 1 */`,
	`SELECT 1 /*!; DELETE FROM accounts */`,
	`SELECT 1; /*!50000 DELETE FROM shop.orders */`,
	`SELECT 1; UPDATE U&"\0061ccounts" SET x = 1`,
	`SELECT 1; DELETE FROM U&"accounts"`,
	`UPDATE /*+ NO_RANGE_OPTIMIZATION(t3 PRIMARY) */ accounts SET x = ?`,
	`INSERT /*+ SET_VAR(x=1) */ INTO accounts (a) VALUES (?)`,
	`UPDATE other SET x = 1 /*M!100301 , y = 2 */`,
	// SQLite [accounts] and 'accounts'
	`UPDATE [accounts] SET x = ?`,
	`DELETE FROM [accounts] WHERE id = ?`,
	`INSERT INTO [accounts] (a) VALUES (?)`,
	`UPDATE 'accounts' SET x = 1`,
	`INSERT INTO 'accounts' (a) VALUES (1)`,
	`DELETE FROM 'accounts' WHERE a = 1`,
	`DELETE FROM "main".'accounts'`,
	`UPDATE [shop].[orders] SET x = 1`,
	`REPLACE INTO [accounts] (a) VALUES (1)`,
	// multiple statements
	`UPDATE accounts SET x = 1; UPDATE accounts SET y = 2`,
	`SELECT 1;;`,
	`UPDATE accounts SET x = 1;;`,
	`UPDATE accounts SET x = 1; -- trailing`,
	`BEGIN; UPDATE accounts SET x = 1; COMMIT`,
	`SELECT 1; SELECT 2`,
	// deep parentheses
	`UPDATE accounts SET x = ((((((((((1)))))))))) WHERE ((((id = $1))))`,
	`UPDATE accounts SET x = (((1) WHERE id = $1`,
	`UPDATE accounts SET x = 1)) WHERE ((id = $1`,
	`((((SELECT * FROM accounts))))`,
	`((((UPDATE accounts SET x = 1))))`,
	`DELETE FROM accounts WHERE (((a = ? OR (b = ?))))`,
	`INSERT INTO accounts (a) VALUES ((((?))))`,
	`INSERT INTO accounts (a) VALUES (1)), ((2)`,
	// schema-qualified guard
	`UPDATE shop.orders SET x = $1 WHERE id = $2`,
	`UPDATE "shop"."orders" SET x = 1`,
	`UPDATE SHOP . ORDERS SET x = 1`,
	`DELETE FROM shop.orders WHERE id = ?`,
	`INSERT INTO shop.orders (a) VALUES (?) ON CONFLICT (a) DO UPDATE SET a = 2`,
	`INSERT INTO orders (a) VALUES (?) ON DUPLICATE KEY UPDATE a = ?`,
	`UPDATE db.shop.orders SET x = 1`,
	`UPDATE other.shop.orders SET x = 1`,
	// several conflict clauses
	`INSERT INTO accounts (a) VALUES (?) ON CONFLICT (a) DO UPDATE SET x = 1 ON CONFLICT (b) DO UPDATE SET y = 2`,
	`INSERT INTO accounts (a) VALUES (?) ON CONFLICT DO NOTHING ON CONFLICT (b) DO UPDATE SET y = 2 WHERE z ON CONFLICT DO UPDATE SET w = 3`,
	// upserts, RETURNING, ORDER BY LIMIT, aliases
	`INSERT INTO accounts AS a (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET x = a.x + 1 RETURNING *`,
	`INSERT INTO accounts (id) VALUES (?) AS new ON DUPLICATE KEY UPDATE x = new.x`,
	`DELETE FROM accounts WHERE id > ? ORDER BY id LIMIT ? RETURNING id + ?`,
	`UPDATE accounts AS a SET x = 1 WHERE a.id = $1 RETURNING a.id`,
	`DELETE FROM accounts a WHERE a.version = 1`,
	`DELETE FROM accounts WHERE fence_token < 5`,
	`UPDATE accounts SET x = CASE WHEN a IS NOT DISTINCT FROM b THEN 1 END FROM t`,
	// clauses glued to the previous token
	`UPDATE accounts SET x=(1)WHERE id=1`,
	`UPDATE accounts SET x='a'WHERE id=1`,
	`DELETE FROM accounts WHERE id IN (1,2)RETURNING id`,
	`DELETE FROM accounts WHERE id IN (1,2)LIMIT 1`,
	`INSERT INTO accounts(a)VALUES(1)ON CONFLICT(a)DO UPDATE SET a=(2)RETURNING a`,
	`INSERT INTO accounts(a)VALUES(1)ON DUPLICATE KEY UPDATE a=(2)`,
}

// fzInputs returns every seed input.
func fzInputs() []string {
	var in []string
	for _, c := range rewriteCases {
		in = append(in, c.in)
	}
	return append(in, fzSeeds...)
}

// fzTarget is one dialect's set of rewriters and a wrapped connection.
type fzTarget struct {
	d      testDialect
	rws    map[bool]testPlanner // by strict
	conn   *conn
	raw    *fzRawConn
	tokens map[bool]string // quoted token column, by dialect
}

var fzGuards = []Option{Guard("accounts"), Guard("shop.orders")}

func newFzTarget(t testing.TB, d testDialect) *fzTarget {
	ft := &fzTarget{d: d, rws: map[bool]testPlanner{}}
	for _, strict := range []bool{false, true} {
		ft.rws[strict] = newTestRewriter(t, d, append(slices.Clip(fzGuards), WithStrict(strict))...)
	}
	k, err := newCore(append([]Option{WithDialect(d), WithSchemaCheck(false)}, fzGuards...))
	if err != nil {
		t.Fatal(err)
	}
	ft.raw = &fzRawConn{}
	ft.conn = newConn(ft.raw, k)
	return ft
}

func fuzzRewrite(f *testing.F, d testDialect) {
	for _, s := range fzInputs() {
		f.Add(s)
	}
	ft := newFzTarget(f, d)
	var mu sync.Mutex // the wrapped connection is not safe for concurrent use
	f.Fuzz(func(t *testing.T, src string) {
		mu.Lock()
		defer mu.Unlock()
		ft.check(t, src)
	})
}

func FuzzRewritePostgres(f *testing.F) { fuzzRewrite(f, pgTest) }
func FuzzRewriteMySQL(f *testing.F)    { fuzzRewrite(f, mysqlTest) }
func FuzzRewriteSQLite(f *testing.F)   { fuzzRewrite(f, sqliteTest) }

// TestFuzzSeeds runs the fuzz invariants over the seed corpus in all dialects (the
// fuzz targets only run their own dialect's seeds under plain "go test").
func TestFuzzSeeds(t *testing.T) {
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		ft := newFzTarget(t, d)
		for _, s := range fzInputs() {
			ft.check(t, s)
		}
	}
}

// check verifies, for one input:
//
//  1. no panic; a refusal is an *UnsupportedError (errors.Is ErrUnsupported) that names
//     a guarded table or none;
//  2. an input whose text names no guarded table is passed through;
//  3. no bypass: a pass-through input contains no statement that writes a guarded table
//     (fzWritesGuard: the head write keyword, its modifiers and a guarded name, with
//     MySQL executable comments expanded as the server does);
//  4. no spurious refusal: an input that names no guarded table in an identifier (and
//     has no construct the rewriter documents as refused on sight) is passed through;
//  5. a rewritten statement lexes, its placeholders match its argument list (count of ?
//     or highest $n = nUser+1, +1 with the version), every user argument is used once
//     and in order, the quoted token column is in it as an identifier, every byte of
//     the input appears in order in it (the rewriter only inserts), the input's tokens
//     are tokens of it (nothing inserted glues onto or splits a neighbour), and an
//     UPDATE or upsert assigns "<token> = CASE …" at parenthesis depth 0;
//  6. a DELETE has a pre plan: an UPDATE of the same table satisfying 5, and its main
//     statement keeps "token column = $t" at top level;
//  7. plain/versioned and default/strict agree on pass, rewrite or refusal;
//  8. through a wrapped connection: a pass-through sends the input byte-identical with
//     its arguments untouched; a rewrite sends exactly the plan's statements (DELETE:
//     BEGIN, the fencing UPDATE, the DELETE, COMMIT) with the arguments in plan order.
func (ft *fzTarget) check(t *testing.T, src string) {
	t.Helper()
	type result struct {
		p   *plan.Plan
		err error
	}
	var base result
	for _, strict := range []bool{false, true} {
		rw := ft.rws[strict]
		for _, versioned := range []bool{false, true} {
			tag := fmt.Sprintf("%s strict=%v versioned=%v: rewrite(%q)", ft.d.name, strict, versioned, src)
			p, err, panicked := fzRewrite(rw, src, versioned)
			if panicked != "" {
				t.Fatalf("%s: PANIC: %s", tag, panicked)
			}
			ft.checkOne(t, tag, rw, src, versioned, p, err)
			if !strict && !versioned {
				base = result{p, err}
				continue
			}
			switch {
			case (err == nil) != (base.err == nil):
				t.Errorf("%s: refusal differs from the plain variant: %v vs %v", tag, err, base.err)
			case err == nil && p.Kind != base.p.Kind:
				t.Errorf("%s: kind %v differs from the plain variant's %v", tag, p.Kind, base.p.Kind)
			}
		}
	}
	if base.err == nil {
		ft.checkWrapper(t, src, base.p)
	}
}

func (ft *fzTarget) checkOne(t *testing.T, tag string, rw testPlanner, src string, versioned bool, p *plan.Plan, err error) {
	t.Helper()
	if err != nil {
		var ue *UnsupportedError
		if !errors.Is(err, ErrUnsupported) || !errors.As(err, &ue) {
			t.Fatalf("%s: error %v is not an *UnsupportedError", tag, err)
		}
		if last := strings.ToLower(ue.Table[strings.LastIndex(ue.Table, ".")+1:]); ue.Table != "" && last != "accounts" && last != "orders" {
			t.Errorf("%s: UnsupportedError.Table = %q names no guarded table", tag, ue.Table)
		}
		if !fzMayMention(rw, src) && !fzJudgedByHead(src, fzSig(src, rw)) && !fzProtected(rw, src) {
			t.Errorf("%s: refused (%v) although the text names no guarded table", tag, err)
		}
		if why := fzNoRefusalExpected(rw, src); why != "" {
			t.Errorf("%s: refused (%v) although %s", tag, err, why)
		}
		return
	}
	if p == nil {
		t.Fatalf("%s: nil plan and nil error", tag)
	}
	if p.Kind == plan.KindPass {
		if p.Guard != nil || p.Pre != nil {
			t.Errorf("%s: pass-through plan with a guard or pre plan", tag)
		}
		if why := fzWritesGuard(rw, src); why != "" {
			t.Errorf("%s: BYPASS: passed through unfenced, but %s", tag, why)
		}
		return
	}
	if !fzMayMention(rw, src) {
		t.Errorf("%s: rewritten although the text names no guarded table", tag)
	}
	if p.Kind == plan.KindClaim {
		ft.checkClaim(t, tag, rw, src, versioned, p)
		return
	}
	if p.Guard == nil {
		t.Fatalf("%s: rewritten plan without a guard", tag)
	}
	if !plan.ContainsFold(src, strings.ToLower(p.Guard.Name)) {
		t.Errorf("%s: plan guards %s, which the input does not name", tag, p.Guard)
	}
	switch p.Kind {
	case plan.KindUpdate, plan.KindInsert:
		if p.Pre != nil {
			t.Errorf("%s: %v plan with a pre plan", tag, p.Kind)
		}
	case plan.KindDelete:
	default:
		t.Fatalf("%s: unknown plan kind %v", tag, p.Kind)
	}
	ft.checkPlan(t, tag, rw, src, versioned, p, true)
	if p.Kind == plan.KindUpdate || (p.Kind == plan.KindInsert && fzHasUpsertUpdate(rw, src)) {
		fzCheckAssignmentAtTop(t, tag, rw, src, p)
	}
	if p.Kind != plan.KindDelete {
		return
	}
	pre := p.Pre
	if pre == nil {
		t.Fatalf("%s: DELETE plan without the fencing UPDATE", tag)
	}
	if pre.Kind != plan.KindUpdate || pre.Guard != p.Guard || pre.NUser != p.NUser || pre.Pre != nil {
		t.Errorf("%s: pre plan kind %v guard %v nUser %d, want UPDATE of %v with nUser %d", tag, pre.Kind, pre.Guard, pre.NUser, p.Guard, p.NUser)
	}
	ft.checkPlan(t, tag+" [pre]", rw, src, versioned, pre, false)
	fzCheckAssignmentAtTop(t, tag+" [pre]", rw, src, pre)
	// The fencing UPDATE targets the DELETE's table: UPDATE <name> ….
	toks, lexErr := sqllex.Lex(pre.SQL, rw.Syntax())
	if lexErr == nil {
		sig := sqllex.Significant(toks)
		if len(sig) < 2 || !sqllex.IsKeyword(pre.SQL, sig[0], "UPDATE") {
			t.Errorf("%s: pre plan %q is not an UPDATE", tag, pre.SQL)
		} else if parts, _, ok := fzName(pre.SQL, sig, fzSkipOnly(pre.SQL, sig), rw); !ok || !strings.EqualFold(parts[len(parts)-1], p.Guard.Name) {
			t.Errorf("%s: pre plan %q does not update %s", tag, pre.SQL, p.Guard)
		}
	}
	// The DELETE keeps only rows carrying the token: "<tok> = <param>" at depth 0.
	if toks, err := sqllex.Lex(p.SQL, rw.Syntax()); err == nil && fzBalanced(src, rw) {
		sig := sqllex.Significant(toks)
		found := false
		depth := 0
		for i, tk := range sig {
			switch {
			case fzPunct(p.SQL, tk, "("):
				depth++
			case fzPunct(p.SQL, tk, ")"):
				depth--
			case depth == 0 && tk.Kind == sqllex.KindQuotedIdent && tk.Text(p.SQL) == p.Guard.QTok &&
				i+2 < len(sig) && fzPunct(p.SQL, sig[i+1], "=") && sig[i+2].Kind == sqllex.KindParam &&
				i > 0 && (sqllex.IsKeyword(p.SQL, sig[i-1], "AND") || sqllex.IsKeyword(p.SQL, sig[i-1], "WHERE")):
				found = true
			}
		}
		if !found {
			t.Errorf("%s: DELETE %q lacks a top-level %s = <token> condition", tag, p.SQL, p.Guard.QTok)
		}
	}
}

// checkPlan checks invariant 5 on one plan; main is false for a DELETE's pre plan,
// whose text is built from pieces of the input (so only its user arguments are
// checked to be a subsequence, in order).
func (ft *fzTarget) checkPlan(t *testing.T, tag string, rw testPlanner, src string, versioned bool, p *plan.Plan, main bool) {
	t.Helper()
	toks, err := sqllex.Lex(p.SQL, rw.Syntax())
	if err != nil {
		t.Errorf("%s: rewritten SQL %q does not lex: %v", tag, p.SQL, err)
		return
	}
	userToks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		t.Errorf("%s: rewritten although the input does not lex: %v", tag, err)
		return
	}
	// nUser is the input's placeholder count (?) or highest $n.
	wantUser := 0
	for _, tk := range userToks {
		if tk.Kind == sqllex.KindParam {
			if rw.NumberedParams() {
				wantUser = max(wantUser, tk.Num)
			} else {
				wantUser++
			}
		}
	}
	if p.NUser != wantUser {
		t.Errorf("%s: nUser = %d, the input has %d", tag, p.NUser, wantUser)
	}
	var params []sqllex.Token
	tokIdent := false
	for _, tk := range toks {
		switch tk.Kind {
		case sqllex.KindParam:
			params = append(params, tk)
		case sqllex.KindQuotedIdent:
			tokIdent = tokIdent || tk.Text(p.SQL) == p.Guard.QTok
		}
	}
	if !tokIdent {
		t.Errorf("%s: %q does not contain the token column %s as an identifier", tag, p.SQL, p.Guard.QTok)
	}
	usesVer := slices.Contains(p.Args, plan.ArgVersion)
	if !slices.Contains(p.Args, plan.ArgToken) {
		t.Errorf("%s: the token is not an argument of %q: %v", tag, p.SQL, p.Args)
	}
	if usesVer && !versioned {
		t.Errorf("%s: a plain plan binds the version: %v", tag, p.Args)
	}
	if versioned && p.Kind == plan.KindUpdate && !usesVer {
		t.Errorf("%s: a versioned UPDATE does not bind the version: %v", tag, p.Args)
	}
	// Items that assigned a fencing column are left out, with their placeholders.
	kept := src
	if len(p.Dropped) > 0 {
		if !plan.ContainsFold(src, strings.ToLower(p.Guard.TokenCol)) && !plan.ContainsFold(src, strings.ToLower(p.Guard.VerCol)) {
			t.Errorf("%s: dropped %v although the input names no fencing column", tag, p.Dropped)
		}
		kept = fzWithout(src, p.Dropped)
		if keptToks, err := sqllex.Lex(kept, rw.Syntax()); err == nil {
			userToks = keptToks
		}
	}
	keptUser := map[int]bool{}
	for _, tk := range userToks {
		if tk.Kind == sqllex.KindParam {
			keptUser[tk.Num] = true
		}
	}
	var user []plan.ArgRef
	for _, r := range p.Args {
		switch {
		case r == plan.ArgToken || r == plan.ArgVersion:
		case r < 0 || int(r) >= p.NUser:
			t.Errorf("%s: argument ref %d out of range (nUser %d)", tag, r, p.NUser)
		default:
			user = append(user, r)
		}
	}
	if rw.NumberedParams() {
		maxN := 0
		for _, tk := range params {
			maxN = max(maxN, tk.Num)
		}
		nKept := p.NUser
		if len(p.Dropped) > 0 {
			nKept = len(keptUser)
		}
		want := nKept + 1
		if usesVer {
			want++
		}
		if main && (maxN != want || len(p.Args) != want) {
			t.Errorf("%s: highest $n is %d and %d args, want %d (nUser %d, version %v)", tag, maxN, len(p.Args), want, p.NUser, usesVer)
		}
		for i := 1; i < len(user); i++ {
			if user[i] <= user[i-1] {
				t.Errorf("%s: numbered args must start with the user's in order: %v", tag, p.Args)
				break
			}
		}
	} else {
		if len(params) != len(p.Args) {
			t.Errorf("%s: %d ? placeholders in %q but %d args %v", tag, len(params), p.SQL, len(p.Args), p.Args)
		}
		for _, tk := range params {
			if tk.Text(p.SQL) != "?" {
				t.Errorf("%s: placeholder %q in positional output", tag, tk.Text(p.SQL))
			}
		}
		// User arguments appear once each, in order (all of them in the main statement).
		for i := 1; i < len(user); i++ {
			if user[i] <= user[i-1] {
				t.Errorf("%s: user arguments out of order: %v", tag, p.Args)
				break
			}
		}
		if main && len(user) != p.NUser-fzCountParams(src, p.Dropped, rw) {
			t.Errorf("%s: %d of %d user arguments bound: %v", tag, len(user), p.NUser, p.Args)
		}
	}
	out := p.SQL
	if len(p.Dropped) > 0 && rw.NumberedParams() { // the kept placeholders were renumbered
		kept, out = fzDollarRE.ReplaceAllLiteralString(kept, "$9"), fzDollarRE.ReplaceAllLiteralString(out, "$9")
		if keptToks, err := sqllex.Lex(kept, rw.Syntax()); err == nil {
			userToks = keptToks
		}
	}
	if main && !fzSubsequence(kept, out) {
		t.Errorf("%s: the input is not a subsequence of the output %q", tag, p.SQL)
	}
	// Token level: the input's significant tokens survive as tokens of the output (the
	// inserted text neither merges with nor splits a neighbour: "END" + "WHERE" must
	// not become "ENDWHERE").
	if main {
		outSrc, outToks := p.SQL, toks
		if out != p.SQL { // placeholders normalised like the kept input
			if ot, err := sqllex.Lex(out, rw.Syntax()); err == nil {
				outSrc, outToks = out, ot
			}
		}
		in, outSig := sqllex.Significant(userToks), sqllex.Significant(outToks)
		j := 0
		for _, tk := range outSig {
			if j < len(in) && tk.Kind == in[j].Kind && (tk.Text(outSrc) == in[j].Text(kept) || (len(p.Dropped) > 0 && tk.Kind == sqllex.KindParam)) {
				j++
			}
		}
		if j < len(in) {
			t.Errorf("%s: input token %q at byte %d is not a token of the output %q", tag, in[j].Text(kept), in[j].Start, p.SQL)
		}
	}
}

// fzCheckAssignmentAtTop: in a plan that assigns the token (UPDATE, the fencing UPDATE
// of a DELETE, an upsert), "<tok> = CASE" stands at parenthesis depth 0, i.e. in the
// statement's own SET list and not in a subquery — when the input is balanced.
func fzCheckAssignmentAtTop(t *testing.T, tag string, rw testPlanner, src string, p *plan.Plan) {
	t.Helper()
	if !fzBalanced(src, rw) {
		return
	}
	toks, err := sqllex.Lex(p.SQL, rw.Syntax())
	if err != nil {
		return
	}
	sig := sqllex.Significant(toks)
	depth := 0
	for i, tk := range sig {
		switch {
		case fzPunct(p.SQL, tk, "("):
			depth++
		case fzPunct(p.SQL, tk, ")"):
			depth--
		case depth == 0 && tk.Kind == sqllex.KindQuotedIdent && tk.Text(p.SQL) == p.Guard.QTok &&
			i+2 < len(sig) && fzPunct(p.SQL, sig[i+1], "=") && sqllex.IsKeyword(p.SQL, sig[i+2], "CASE"):
			return
		}
	}
	t.Errorf("%s: %q has no top-level %s = CASE … assignment", tag, p.SQL, p.Guard.QTok)
}

// fzHasUpsertUpdate reports an INSERT with ON CONFLICT … DO UPDATE or ON DUPLICATE KEY UPDATE.
func fzHasUpsertUpdate(rw testPlanner, src string) bool {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return false
	}
	sig := sqllex.Significant(toks)
	depth, conflict := 0, false
	for i, tk := range sig {
		switch {
		case fzPunct(src, tk, "("):
			depth++
		case fzPunct(src, tk, ")"):
			depth--
		case depth != 0:
		case fzKw(src, sig, i, "CONFLICT") && fzKw(src, sig, i-1, "ON"):
			conflict = true
		case fzKw(src, sig, i, "UPDATE") && i >= 3 && fzKw(src, sig, i-1, "KEY") && fzKw(src, sig, i-2, "DUPLICATE") && fzKw(src, sig, i-3, "ON"):
			return true
		case fzKw(src, sig, i, "UPDATE") && conflict && fzKw(src, sig, i-1, "DO"):
			return true
		}
	}
	return false
}

// fzBalanced reports whether the input's parentheses are balanced.
func fzBalanced(src string, rw testPlanner) bool {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return false
	}
	depth := 0
	for _, tk := range toks {
		switch {
		case fzPunct(src, tk, "("):
			depth++
		case fzPunct(src, tk, ")"):
			depth--
			if depth < 0 {
				return false
			}
		}
	}
	return depth == 0
}

// checkWrapper runs src through the wrapped connection (invariant 8).
// checkClaim: a locking read keeps the caller's text and arguments; its claim is an
// UPDATE of the guarded table satisfying invariant 5 (on the parts it copies), or the
// claim is refused with an *UnsupportedError.
func (ft *fzTarget) checkClaim(t *testing.T, tag string, rw testPlanner, src string, versioned bool, p *plan.Plan) {
	t.Helper()
	if p.SQL != src {
		t.Errorf("%s: a claimed read changed the caller's text to %q", tag, p.SQL)
	}
	if p.ClaimErr != nil {
		if !errors.Is(p.ClaimErr, ErrUnsupported) {
			t.Errorf("%s: claim refusal %v is not ErrUnsupported", tag, p.ClaimErr)
		}
		return
	}
	if p.Pre == nil || p.Guard == nil || p.Pre.Guard != p.Guard || p.Pre.Kind != plan.KindUpdate {
		t.Fatalf("%s: claim without a fencing UPDATE of its table", tag)
	}
	ft.checkPlan(t, tag+" [claim]", rw, src, false, p.Pre, false)
	fzCheckAssignmentAtTop(t, tag+" [claim]", rw, src, p.Pre)
	if toks, err := sqllex.Lex(p.Pre.SQL, rw.Syntax()); err == nil {
		sig := sqllex.Significant(toks)
		if len(sig) < 2 || !sqllex.IsKeyword(p.Pre.SQL, sig[0], "UPDATE") {
			t.Errorf("%s: claim %q is not an UPDATE", tag, p.Pre.SQL)
		}
	}
}

func (ft *fzTarget) checkWrapper(t *testing.T, src string, p *plan.Plan) {
	t.Helper()
	const tok = 77
	ctx := WithToken(context.Background(), tok)
	n := max(p.NUser, 0) // -1: a refused claim, whose placeholders were not counted
	if p.Kind == plan.KindPass {
		n = 2
	}
	args := make([]driver.NamedValue, n)
	for i := range args {
		args[i] = driver.NamedValue{Ordinal: i + 1, Value: int64(1000 + i)}
	}
	ft.raw.calls = ft.raw.calls[:0]
	_, err := ft.conn.ExecContext(ctx, src, args)
	if p.Kind == plan.KindClaim {
		// Outside a transaction a locking read with a token is refused (its claim and
		// its read must commit together), claimable or not.
		if !errors.Is(err, ErrUnsupported) || len(ft.raw.calls) != 0 {
			t.Errorf("%s: wrapped ExecContext(%q) with a token outside a transaction = %v, sent %v; want a refusal, nothing sent", ft.d.name, src, err, ft.raw.calls)
		}
		return
	}

	if err != nil {
		t.Errorf("%s: wrapped ExecContext(%q): %v", ft.d.name, src, err)
		return
	}
	calls := ft.raw.calls
	if p.Kind == plan.KindPass {
		if len(calls) != 1 || calls[0].sql != src {
			t.Errorf("%s: pass-through of %q sent %v, want the input byte-identical", ft.d.name, src, calls)
			return
		}
		if !slices.Equal(calls[0].args, []any{int64(1000), int64(1001)}) {
			t.Errorf("%s: pass-through of %q changed the arguments: %v", ft.d.name, src, calls[0].args)
		}
		return
	}
	want := []fzCall{{sql: p.SQL, args: fzBound(p, tok)}}
	if p.Pre != nil {
		want = []fzCall{{sql: "BEGIN"}, {sql: p.Pre.SQL, args: fzBound(p.Pre, tok)}, want[0], {sql: "COMMIT"}}
	}
	if !slices.EqualFunc(calls, want, func(a, b fzCall) bool { return a.sql == b.sql && slices.Equal(a.args, b.args) }) {
		t.Errorf("%s: %q sent\n%v\nwant\n%v", ft.d.name, src, calls, want)
	}
}

func fzBound(p *plan.Plan, tok uint64) []any {
	out := make([]any, len(p.Args))
	for i, r := range p.Args {
		switch r {
		case plan.ArgToken:
			out[i] = int64(tok)
		case plan.ArgVersion:
			out[i] = int64(0)
		default:
			out[i] = int64(1000 + int(r))
		}
	}
	return out
}

// fzRewrite calls rw.rewrite and turns a panic into a description with its stack.
func fzRewrite(rw testPlanner, src string, versioned bool) (p *plan.Plan, err error, panicked string) {
	defer func() {
		if r := recover(); r != nil {
			panicked = fmt.Sprintf("%v\n%s", r, debug.Stack())
		}
	}()
	p, err = rw.Rewrite(src, versioned)
	return p, err, ""
}

// ---- the oracles ----

var fzNames = []string{"accounts", "orders"}

// fzMayMention reports whether the text names a guarded table in any spelling the
// rewriter's pre-filter must catch.
func fzMayMention(rw testPlanner, src string) bool {
	for _, n := range fzNames {
		if plan.ContainsFold(src, n) {
			return true
		}
	}
	return rw.Syntax().EStrings && (strings.Contains(src, `U&"`) || strings.Contains(src, `u&"`))
}

// fzGuarded reports whether a name (its parts, unquoted) is a guarded table, with the
// rewriter's matching rules (G13: by the last name part, whatever the qualifier):
// "accounts" and "orders" (configured as shop.orders) under any qualifier or none.
func fzGuarded(parts []string) bool {
	if len(parts) == 0 {
		return false
	}
	last := strings.ToLower(parts[len(parts)-1])
	switch last {
	case "accounts", "orders":
		return true
	}
	return false
}

func fzPunct(src string, tk sqllex.Token, s string) bool {
	return tk.Kind == sqllex.KindPunct && tk.Text(src) == s
}

// fzIdent decodes an identifier token the way the server reads it; undecodable is true
// for a quoted identifier whose name the lexer cannot decode (U&"…"), which may name
// anything.
func fzIdent(src string, tk sqllex.Token, rw testPlanner) (name string, ok, undecodable bool) {
	switch tk.Kind {
	case sqllex.KindWord:
		return tk.Text(src), true, false
	case sqllex.KindQuotedIdent:
		n, _, ok := sqllex.Ident(src, tk)
		if !ok {
			txt := tk.Text(src)
			if !strings.HasPrefix(txt, "U&") && !strings.HasPrefix(txt, "u&") {
				return "", false, false // "" and the like: no identifier at all
			}
			if n, ok := fzDecodeUnicodeIdent(txt); ok && !plan.ContainsFold(src, "uescape") {
				return n, true, false
			}
			return "", false, true
		}
		return n, true, false
	case sqllex.KindString:
		txt := tk.Text(src)
		if (rw.Syntax() == sqllex.SQLite) && len(txt) >= 2 && txt[0] == '\'' && txt[len(txt)-1] == '\'' {
			return strings.ReplaceAll(txt[1:len(txt)-1], "''", "'"), true, false
		}
	}
	return "", false, false
}

// fzDecodeUnicodeIdent decodes PostgreSQL's U&"…" identifier with the default escape
// character (\XXXX, \+XXXXXX, \\); ok is false for any other byte that is not a letter,
// digit or underscore. The caller treats text with a UESCAPE clause as undecodable.
func fzDecodeUnicodeIdent(txt string) (string, bool) {
	if len(txt) < 4 || (txt[0] != 'U' && txt[0] != 'u') || txt[1] != '&' || txt[2] != '"' || txt[len(txt)-1] != '"' {
		return "", false
	}
	body := strings.ReplaceAll(txt[3:len(txt)-1], `""`, `"`)
	var b strings.Builder
	for i := 0; i < len(body); i++ {
		c := body[i]
		if c != '\\' {
			if !(c == '_' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80) {
				return "", false
			}
			b.WriteByte(c)
			continue
		}
		n := 4
		if i+1 < len(body) && body[i+1] == '\\' {
			b.WriteByte('\\')
			i++
			continue
		}
		if i+1 < len(body) && body[i+1] == '+' {
			n = 6
			i++
		}
		if i+n >= len(body) {
			return "", false
		}
		var r rune
		for _, h := range body[i+1 : i+1+n] {
			switch {
			case h >= '0' && h <= '9':
				r = r*16 + h - '0'
			case h|0x20 >= 'a' && h|0x20 <= 'f':
				r = r*16 + (h | 0x20) - 'a' + 10
			default:
				return "", false
			}
		}
		b.WriteRune(r)
		i += n
	}
	return b.String(), b.Len() > 0
}

// fzName reads ident ('.' ident)* at sig[i]; undecodable reports a U&"…" part.
func fzName(src string, sig []sqllex.Token, i int, rw testPlanner) (parts []string, end int, ok bool) {
	for i < len(sig) {
		n, ok, undecodable := fzIdent(src, sig[i], rw)
		if undecodable {
			return append(parts, "\x00undecodable"), i + 1, true
		}
		if !ok {
			return nil, i, false
		}
		parts = append(parts, n)
		i++
		if i < len(sig) && fzPunct(src, sig[i], ".") {
			i++
			continue
		}
		return parts, i, true
	}
	return nil, i, false
}

// fzNameGuarded: the name at sig[i] is a guarded table, or cannot be decoded.
func fzNameGuarded(src string, sig []sqllex.Token, i int, rw testPlanner) bool {
	parts, _, ok := fzName(src, sig, i, rw)
	return ok && (fzGuarded(parts) || slices.Contains(parts, "\x00undecodable"))
}

func fzKw(src string, sig []sqllex.Token, i int, kws ...string) bool {
	if i >= len(sig) {
		return false
	}
	for _, kw := range kws {
		if sqllex.IsKeyword(src, sig[i], kw) {
			return true
		}
	}
	return false
}

// fzExpandExec returns the text MySQL executes: /*! … */ and /*M! … */ comments
// replaced by their content (version number dropped), /*+ … */ hints by a blank.
func fzExpandExec(src string, toks []sqllex.Token) (string, bool) {
	var b strings.Builder
	changed := false
	for _, tk := range toks {
		txt := tk.Text(src)
		if tk.Kind != sqllex.KindExecComment {
			b.WriteString(txt)
			continue
		}
		changed = true
		body := strings.TrimSuffix(txt, "*/")
		switch {
		case strings.HasPrefix(body, "/*!"):
			body = body[3:]
		case strings.HasPrefix(body, "/*M!"):
			body = body[4:]
		default: // optimizer hint: ignored by the server if not understood
			b.WriteString(" ")
			continue
		}
		body = strings.TrimLeft(body, "0123456789")
		b.WriteString(" " + body + " ")
	}
	return b.String(), changed
}

// fzWritesGuard is the no-bypass oracle. It returns a description when src, as the
// server reads it, contains a statement that writes a guarded table: a statement whose
// head keyword (after any opening parentheses) is INSERT/UPDATE/DELETE/REPLACE/MERGE/
// TRUNCATE/COPY … FROM, followed by its modifiers and INTO/FROM/ONLY/TABLE, then a
// guarded name (or an undecodable U&"…" one); MySQL multi-table forms whose SET
// targets or DELETE targets are a guarded table; and, inside WITH, EXPLAIN, ANALYZE
// and PREPARE, any write keyword so followed. It has no false positives for valid SQL:
// each pattern it reports is a write of that table in the dialect.
func fzWritesGuard(rw testPlanner, src string) string {
	return fzWritesGuardDepth(rw, src, 0)
}

func fzWritesGuardDepth(rw testPlanner, src string, depth int) string {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		if fzMayMention(rw, src) && depth == 0 {
			return "the input does not lex, yet names a guarded table"
		}
		return ""
	}
	if rw.Syntax().ExecComments {
		if exp, changed := fzExpandExec(src, toks); changed {
			etoks, err := sqllex.Lex(exp, rw.Syntax())
			if err != nil {
				// Cannot model the server: report only an executable comment holding both
				// a write keyword and a guarded name.
				for _, tk := range toks {
					if tk.Kind != sqllex.KindExecComment {
						continue
					}
					body := strings.ToLower(tk.Text(src))
					write := false
					for _, w := range []string{"insert", "update", "delete", "replace", "merge", "truncate"} {
						write = write || strings.Contains(body, w)
					}
					if write && fzMayMention(rw, body) {
						return "an executable comment holds a write and a guarded name"
					}
				}
				return ""
			}
			src, toks = exp, etoks
		}
	}
	sig := sqllex.Significant(toks)
	start := 0
	for start <= len(sig) {
		end := start
		for end < len(sig) && !fzPunct(src, sig[end], ";") {
			end++
		}
		if why := fzStmtWrites(rw, src, sig[start:end], depth); why != "" {
			return why
		}
		start = end + 1
	}
	return ""
}

func fzStmtWrites(rw testPlanner, src string, sig []sqllex.Token, depth int) string {
	i := 0
	for i < len(sig) && fzPunct(src, sig[i], "(") {
		i++
	}
	if i >= len(sig) || sig[i].Kind != sqllex.KindWord {
		return ""
	}
	head := strings.ToUpper(sig[i].Text(src))
	switch head {
	case "INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE", "TRUNCATE", "COPY", "LOAD":
		if why := fzWriteAt(rw, src, sig, i); why != "" {
			return why
		}
	case "WITH", "EXPLAIN", "ANALYZE", "PREPARE":
		if head == "EXPLAIN" && !fzExplainRuns(src, sig, i) {
			return "" // shows a plan, runs nothing
		}
		for k := i + 1; k < len(sig); k++ {
			if fzKw(src, sig, k, "UPDATE") && fzKw(src, sig, k-1, "FOR", "KEY") {
				continue // a locking clause or ON DUPLICATE KEY UPDATE
			}
			if fzKw(src, sig, k, "INSERT", "UPDATE", "DELETE", "MERGE") {
				if why := fzWriteAt(rw, src, sig, k); why != "" {
					return head + " holding " + why
				}
			}
		}
		// MySQL PREPARE s FROM '<statement>'
		if head == "PREPARE" && depth < 2 {
			for _, tk := range sig[i:] {
				if tk.Kind == sqllex.KindString {
					txt := tk.Text(src)
					if len(txt) >= 2 && (txt[0] == '\'' || txt[0] == '"') {
						inner := strings.ReplaceAll(txt[1:len(txt)-1], txt[:1]+txt[:1], txt[:1])
						if why := fzWritesGuardDepth(rw, inner, depth+1); why != "" {
							return "PREPARE of " + why
						}
					}
				}
			}
		}
	}
	return ""
}

// fzExplainRuns: an EXPLAIN at sig[i] runs its statement only with an ANALYZE (or
// ANALYSE) word before it that is not followed by FALSE, OFF or 0.
func fzExplainRuns(src string, sig []sqllex.Token, i int) bool {
	for k := i + 1; k < len(sig) && !fzKw(src, sig, k, "INSERT", "UPDATE", "DELETE", "MERGE", "REPLACE", "SELECT", "WITH"); k++ {
		if fzKw(src, sig, k, "ANALYZE", "ANALYSE") && !(fzKw(src, sig, k+1, "FALSE", "OFF") || k+1 < len(sig) && sig[k+1].Text(src) == "0") {
			return true
		}
	}
	return false
}

// fzWriteAt applies the head pattern to the write keyword at sig[i].
func fzWriteAt(rw testPlanner, src string, sig []sqllex.Token, i int) string {
	head := strings.ToUpper(sig[i].Text(src))
	j := i + 1
	skip := func(words ...string) {
		for {
			switch {
			case fzKw(src, sig, j, words...):
				j++
			case fzKw(src, sig, j, "OR") && (head == "UPDATE" || head == "INSERT") && j+1 < len(sig) && sig[j+1].Kind == sqllex.KindWord:
				j += 2 // SQLite OR REPLACE/IGNORE/…
			default:
				return
			}
		}
	}
	report := func() string {
		return fmt.Sprintf("%s writes the guarded table at byte %d", head, sig[j].Start)
	}
	switch head {
	case "UPDATE":
		skip("LOW_PRIORITY", "IGNORE", "ONLY")
		if fzNameGuarded(src, sig, j, rw) {
			return report()
		}
		return fzMultiUpdate(rw, src, sig, j)
	case "DELETE":
		skip("LOW_PRIORITY", "QUICK", "IGNORE")
		if fzKw(src, sig, j, "FROM") {
			j++
			skip("ONLY")
			if fzNameGuarded(src, sig, j, rw) {
				return report()
			}
			// DELETE FROM t1, t2 USING …: the tables before USING are the targets.
			return fzDeleteTargets(rw, src, sig, j, "USING")
		}
		// DELETE t1, t2 FROM …: targets before FROM, resolved through aliases.
		return fzDeleteTargets(rw, src, sig, j, "FROM")
	case "INSERT":
		skip("LOW_PRIORITY", "DELAYED", "HIGH_PRIORITY", "IGNORE")
		skip("INTO")
	case "REPLACE":
		skip("LOW_PRIORITY", "DELAYED")
		skip("INTO")
	case "MERGE":
		skip("INTO")
		skip("ONLY")
	case "TRUNCATE":
		skip("TABLE")
		skip("ONLY")
	case "COPY":
		if fzNameGuarded(src, sig, j, rw) {
			_, end, _ := fzName(src, sig, j, rw)
			for k := end; k < len(sig); k++ {
				if fzKw(src, sig, k, "FROM") {
					return report()
				}
				if fzKw(src, sig, k, "TO") {
					return ""
				}
			}
		}
		return ""
	case "LOAD":
		for k := j; k+2 < len(sig); k++ {
			if fzKw(src, sig, k, "INTO") && fzKw(src, sig, k+1, "TABLE") && fzNameGuarded(src, sig, k+2, rw) {
				j = k + 2
				return report()
			}
		}
		return ""
	}
	if fzNameGuarded(src, sig, j, rw) {
		return report()
	}
	return ""
}

// fzRefs collects the table references of a MySQL multi-table list sig[from:to]:
// guarded names and the aliases they are given.
func fzRefs(rw testPlanner, src string, sig []sqllex.Token, from, to int) (names map[string]bool) {
	names = map[string]bool{}
	depth := 0
	for k := from; k < to; k++ {
		switch {
		case fzPunct(src, sig[k], "("):
			depth++
			continue
		case fzPunct(src, sig[k], ")"):
			depth--
			continue
		}
		if depth != 0 || !(k == from || fzPunct(src, sig[k-1], ",") || fzKw(src, sig, k-1, "JOIN", "STRAIGHT_JOIN")) {
			continue
		}
		parts, end, ok := fzName(src, sig, k, rw)
		if !ok || !(fzGuarded(parts) || slices.Contains(parts, "\x00undecodable")) {
			continue
		}
		names[strings.ToLower(parts[len(parts)-1])] = true
		a := end
		if fzKw(src, sig, a, "AS") {
			a++
		}
		if n, ok, _ := fzIdent(src, sig[min(a, len(sig)-1)], rw); a < to && ok && !fzKw(src, sig, a, "SET", "ON", "USING", "JOIN", "INNER", "LEFT", "RIGHT", "CROSS", "NATURAL", "STRAIGHT_JOIN", "WHERE", "FROM") {
			names[strings.ToLower(n)] = true
		}
	}
	return names
}

// fzMultiUpdate: UPDATE t JOIN accounts a … SET a.x = …: a SET target qualified with a
// guarded table (or its alias).
func fzMultiUpdate(rw testPlanner, src string, sig []sqllex.Token, from int) string {
	set := from
	depth := 0
	for ; set < len(sig); set++ {
		if fzPunct(src, sig[set], "(") {
			depth++
		} else if fzPunct(src, sig[set], ")") {
			depth--
		} else if depth == 0 && fzKw(src, sig, set, "SET") {
			break
		}
	}
	if set >= len(sig) {
		return ""
	}
	refs := fzRefs(rw, src, sig, from, set)
	if len(refs) == 0 {
		return ""
	}
	target := true
	depth = 0
	for k := set + 1; k < len(sig); k++ {
		switch {
		case fzPunct(src, sig[k], "("):
			depth++
		case fzPunct(src, sig[k], ")"):
			depth--
		case depth == 0 && fzPunct(src, sig[k], ","):
			target = true
		case depth == 0 && fzPunct(src, sig[k], "="):
			target = false
		case depth == 0 && fzKw(src, sig, k, "WHERE", "ORDER", "LIMIT"):
			return ""
		case depth == 0 && target:
			if parts, _, ok := fzName(src, sig, k, rw); ok && len(parts) >= 2 && refs[strings.ToLower(parts[len(parts)-2])] {
				return fmt.Sprintf("a multi-table UPDATE sets a column of the guarded table at byte %d", sig[k].Start)
			}
			target = false
		}
	}
	return ""
}

// fzDeleteTargets: DELETE t1[, t2] FROM refs … or DELETE FROM t1[, t2] USING refs …: a
// target that is a guarded table or the alias of one.
func fzDeleteTargets(rw testPlanner, src string, sig []sqllex.Token, from int, sep string) string {
	end := from
	for end < len(sig) && !fzKw(src, sig, end, sep) {
		end++
	}
	if end >= len(sig) {
		return ""
	}
	refsEnd := len(sig)
	for k := end + 1; k < len(sig); k++ {
		if fzKw(src, sig, k, "WHERE", "ORDER", "LIMIT") {
			refsEnd = k
			break
		}
	}
	refs := fzRefs(rw, src, sig, end+1, refsEnd)
	for k := from; k < end; k++ {
		if k != from && !fzPunct(src, sig[k-1], ",") {
			continue
		}
		parts, _, ok := fzName(src, sig, k, rw)
		if !ok {
			continue
		}
		if fzGuarded(parts) || slices.Contains(parts, "\x00undecodable") {
			return fmt.Sprintf("a multi-table DELETE targets the guarded table at byte %d", sig[k].Start)
		}
		last := strings.ToLower(parts[len(parts)-1])
		if last == "*" || refs[last] {
			return fmt.Sprintf("a multi-table DELETE targets the guarded table's alias at byte %d", sig[k].Start)
		}
	}
	return ""
}

// fzNoRefusalExpected returns why src must not be refused, or "" when a refusal is
// legitimate: the input does not lex, names a guarded table in an identifier (any part
// of a name, unqualified, the way the rewriter's mentionsGuard matches), or holds a
// construct the rewriter documents as refused on sight (an executable comment naming a
// guarded table or a write, a U&"…" identifier, PREPARE/DO, a parenthesised write).
func fzNoRefusalExpected(rw testPlanner, src string) string {
	if fzProtected(rw, src) {
		return ""
	}
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return ""
	}
	sig := sqllex.Significant(toks)
	for _, tk := range sig {
		if tk.Kind == sqllex.KindExecComment {
			return ""
		}
		if tk.Kind == sqllex.KindQuotedIdent {
			if _, _, ok := sqllex.Ident(src, tk); !ok {
				return "" // U&"…", or an invalid empty "" that the server rejects anyway
			}
		}
		n, ok, _ := fzIdent(src, tk, rw)
		if ok && (strings.EqualFold(n, "accounts") || strings.EqualFold(n, "orders")) {
			return ""
		}
	}
	first := 0
	for first < len(sig)-1 && fzPunct(src, sig[first], "(") {
		first++
	}
	if len(sig) > 0 && fzKw(src, sig, first, "PREPARE", "DO") {
		return ""
	}
	if fzJudgedByHead(src, sig) {
		return ""
	}
	if first > 0 && !fzKw(src, sig, first, "SELECT", "VALUES", "TABLE", "WITH") {
		return ""
	}
	return "no identifier names a guarded table"
}

// fzProtected reports whether the text may be refused for what it does to the guards
// or the protected settings (protect.go), whatever it names: a guard object's prefix,
// pg_settings, set_config or a protected setting's name anywhere (escapes included:
// a backslash or U& may spell one), a MySQL executable comment, or text that does not
// lex and may create a routine.
func fzProtected(rw testPlanner, src string) bool {
	for _, w := range []string{"fencedsql_", "pg_settings", "set_config", "session_replication_role",
		"synchronous_commit", "sql_log_bin", "skip_replication", "writable_schema", `\`, "u&"} {
		if plan.ContainsFold(src, w) {
			return true
		}
	}
	if _, err := sqllex.Lex(src, rw.Syntax()); err != nil && (plan.ContainsFold(src, "create") || plan.ContainsFold(src, "alter")) {
		for _, k := range []string{"function", "procedure", "trigger", "rule", "event", "package"} {
			if plan.ContainsFold(src, k) {
				return true // may be routine DDL the lexer cannot read: refused (routine.go)
			}
		}
	}
	return rw.Syntax().ExecComments && strings.Contains(src, "/*")
}

// fzJudgedByHead reports whether some statement of the input starts with a keyword that
// the rewriter judges whatever the statement names, on a pool with guarded tables:
// transaction control, dynamic SQL, SET and LOCK, and DDL (by what its bodies name).
func fzJudgedByHead(src string, sig []sqllex.Token) bool {
	for i := range sig {
		at := i
		for at < len(sig) && fzPunct(src, sig[at], "(") {
			at++
		}
		if (i == 0 || fzPunct(src, sig[i-1], ";")) && fzKw(src, sig, at, "BEGIN", "START", "COMMIT", "ROLLBACK",
			"END", "ABORT", "XA", "EXECUTE", "EXEC", "PREPARE", "DO", "CALL", "SET", "LOCK", "CREATE", "ALTER",
			"DROP", "RENAME", "COMMENT", "GRANT", "REVOKE", "REPAIR", "ATTACH", "DETACH", "REFRESH", "SECURITY",
			"IMPORT", "REASSIGN") {
			return true
		}
	}
	return false
}

// fzSubsequence reports whether every byte of a appears in b, in order.
func fzSubsequence(a, b string) bool {
	j := 0
	for i := 0; i < len(b) && j < len(a); i++ {
		if b[i] == a[j] {
			j++
		}
	}
	return j == len(a)
}

// ---- a recording driver connection ----

type fzCall struct {
	sql  string
	args []any
}

func (c fzCall) String() string { return fmt.Sprintf("%q %v", c.sql, c.args) }

type fzRawConn struct{ calls []fzCall }

var (
	_ driver.ExecerContext  = (*fzRawConn)(nil)
	_ driver.QueryerContext = (*fzRawConn)(nil)
	_ driver.ConnBeginTx    = (*fzRawConn)(nil)
)

func (c *fzRawConn) record(sql string, args []driver.NamedValue) {
	call := fzCall{sql: sql, args: []any{}}
	for _, a := range args {
		call.args = append(call.args, a.Value)
	}
	c.calls = append(c.calls, call)
}

func (c *fzRawConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("fzRawConn: Prepare not supported")
}
func (c *fzRawConn) Close() error { return nil }
func (c *fzRawConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}
func (c *fzRawConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	c.record("BEGIN", nil)
	return fzTx{c}, nil
}
func (c *fzRawConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.record(q, args)
	return driver.RowsAffected(1), nil
}
func (c *fzRawConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.record(q, args)
	return fzRows{}, nil
}

type fzTx struct{ c *fzRawConn }

func (t fzTx) Commit() error   { t.c.record("COMMIT", nil); return nil }
func (t fzTx) Rollback() error { t.c.record("ROLLBACK", nil); return nil }

type fzRows struct{}

func (fzRows) Columns() []string         { return nil }
func (fzRows) Close() error              { return nil }
func (fzRows) Next([]driver.Value) error { return io.EOF }

var fzDollarRE = regexp.MustCompile(`\$[0-9]+`)

// fzWithout returns src without the byte ranges (ascending, disjoint).
func fzWithout(src string, ranges [][2]int) string {
	var sb strings.Builder
	last := 0
	for _, r := range ranges {
		sb.WriteString(src[last:r[0]])
		last = r[1]
		// As the builder does: what is left on both sides must not glue into one token.
		if out := sb.String(); len(out) > 0 && last < len(src) && plan.Glues(out[len(out)-1], src[last]) {
			sb.WriteByte(' ')
		}
	}
	sb.WriteString(src[last:])
	return sb.String()
}

// fzCountParams counts the placeholders of src inside the byte ranges.
func fzCountParams(src string, ranges [][2]int, rw testPlanner) int {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return 0
	}
	n := 0
	for _, tk := range toks {
		for _, r := range ranges {
			if tk.Kind == sqllex.KindParam && tk.Start >= r[0] && tk.End <= r[1] {
				n++
			}
		}
	}
	return n
}

// fzSkipOnly returns the sig index of the table name after UPDATE [ONLY].
func fzSkipOnly(src string, sig []sqllex.Token) int {
	if len(sig) > 2 && sqllex.IsKeyword(src, sig[1], "ONLY") {
		return 2
	}
	return 1
}

// fzSig returns the significant tokens of src, nil when it does not lex.
func fzSig(src string, rw testPlanner) []sqllex.Token {
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		return nil
	}
	return sqllex.Significant(toks)
}
