package plan

import (
	"strings"
	"testing"
)

// G13: a reference is guarded by its last name part (folded, truncated as the server
// truncates), whatever its qualifier; a reference not written as configured gets an
// interned derived guard checked under the name as written.
func TestLookupResolvesByName(t *testing.T) {
	rw := newTestRewriter(t, pgTest, Guard("public.accounts"), Guard("orders"))
	acc := rw.Tables()[0]
	ord := rw.Tables()[1]
	for _, c := range []struct {
		parts  []string
		root   *Table
		schema string // the checked qualifier; root itself when same
		same   bool
	}{
		{[]string{"public", "accounts"}, acc, "public", true},
		{[]string{"PUBLIC", "Accounts"}, acc, "public", true},
		{[]string{"p2", "accounts"}, acc, "p2", false},
		{[]string{"db", "p2", "accounts"}, acc, "p2", false},
		{[]string{"accounts"}, acc, "", false},
		{[]string{"orders"}, ord, "", true},
		{[]string{"main", "orders"}, ord, "main", false},
		{[]string{"aux", "ORDERS"}, ord, "aux", false},
	} {
		g := rw.Lookup(c.parts)
		if g == nil || g.Base() != c.root {
			t.Errorf("lookup(%q) = %v, want a guard of %v", c.parts, g, c.root)
			continue
		}
		if (g == c.root) != c.same || !strings.EqualFold(g.Schema, c.schema) || g.TokenCol != c.root.TokenCol || g.VerCol != c.root.VerCol {
			t.Errorf("lookup(%q) = %+v (root %v), want schema %q same=%v", c.parts, g, g.Root, c.schema, c.same)
		}
		if again := rw.Lookup(c.parts); again != g {
			t.Errorf("lookup(%q) not interned", c.parts)
		}
	}
	for _, parts := range [][]string{{"accountsx"}, {"accounts", "x"}, {"other"}, nil} {
		if g := rw.Lookup(parts); g != nil {
			t.Errorf("lookup(%q) = %v, want nil", parts, g)
		}
	}
	p, err := rw.Rewrite(`UPDATE p2.accounts SET x = 1`, false)
	if err != nil || p.Kind != KindUpdate || p.Guard.String() != "p2.accounts" {
		t.Fatalf("rewrite under a renamed schema = %+v, %v; want a fenced UPDATE checked as p2.accounts", p, err)
	}
}

// PostgreSQL truncates identifiers to 63 bytes: a longer name in a statement that
// truncates to a guarded name is that table, and a guarded name longer than 63 bytes
// is compared truncated. Other dialects compare whole names.
func TestLookupTruncation(t *testing.T) {
	n63 := strings.Repeat("a", 60) + "acc" // 63 bytes
	long := n63 + "_ignored_by_the_server" // truncates to n63
	rw := newTestRewriter(t, pgTest, Guard(n63), Guard(strings.Repeat("b", 70)))
	for _, name := range []string{n63, long, strings.ToUpper(long), strings.Repeat("b", 63), strings.Repeat("b", 64), strings.Repeat("b", 70)} {
		if rw.Lookup([]string{name}) == nil {
			t.Errorf("postgres: lookup(%d bytes %.8s…) = nil, want guarded", len(name), name)
		}
		p, err := rw.Rewrite(`UPDATE `+name+` SET x = 1`, false)
		if err != nil || p.Kind != KindUpdate {
			t.Errorf("postgres: rewrite(UPDATE %.8s… (%d bytes)) = %v, %v; want a fenced UPDATE", name, len(name), p, err)
		}
	}
	if rw.Lookup([]string{n63[:62]}) != nil || rw.Lookup([]string{strings.Repeat("b", 62)}) != nil {
		t.Error("postgres: a shorter name matched")
	}
	// multibyte: never cut inside a character (the server clips before it)
	mb := strings.Repeat("a", 62) + "é" // 64 bytes: clipped to 62
	if k := rw.Key(mb); k != strings.Repeat("a", 62) {
		t.Errorf("key(%q) = %q", mb, k)
	}
	my := newTestRewriter(t, mysqlTest, Guard(n63))
	if my.Lookup([]string{long}) != nil {
		t.Error("mysql: a longer name matched (MySQL refuses names over 64 characters, it does not truncate)")
	}
}

// resolvesNames flags the statements after which a session may resolve names
// differently, per dialect, and only those (a cached plan: the rule runs once per text).
func TestResolvesNames(t *testing.T) {
	for _, c := range []struct {
		d    testDialect
		sql  string
		want bool
	}{
		{pgTest, `SET search_path TO other`, true},
		{pgTest, `set SEARCH_PATH = other, public`, true},
		{pgTest, `SELECT set_config('search_path', 'other', false)`, true},
		{pgTest, `SET SCHEMA 'other'`, true},
		{pgTest, `SET ROLE app`, true},
		{pgTest, `SET SESSION AUTHORIZATION app`, true},
		{pgTest, `RESET ALL`, true},
		{pgTest, `DISCARD ALL`, true},
		{pgTest, `DO $$ BEGIN PERFORM 1; END $$`, true},
		{pgTest, `SELECT 1; SET x.y = 1`, true},
		{pgTest, `SET statement_timeout = 1000`, false},
		{pgTest, `SET LOCAL lock_timeout = '1s'`, false},
		{pgTest, `SELECT * FROM t WHERE a = 1`, false},
		{pgTest, `INSERT INTO t (a) VALUES (1) ON CONFLICT (a) DO NOTHING`, false},
		{pgTest, `UPDATE t SET a = 1`, false},
		{mysqlTest, `USE other_db`, true},
		{mysqlTest, "use `other`", true},
		{mysqlTest, `SELECT 1; USE other`, true},
		{mysqlTest, `SELECT * FROM t USE INDEX (i)`, false},
		{mysqlTest, `SET NAMES utf8mb4`, false},
		{sqliteTest, `ATTACH DATABASE 'x.db' AS aux`, true},
		{sqliteTest, `attach 'x.db' as aux`, true},
		{sqliteTest, `DETACH aux`, true},
		{sqliteTest, `SELECT * FROM t`, false},
	} {
		rw := newTestRewriter(t, c.d, Guard("accounts"))
		if got := rw.ResolvesNames(c.sql); got != c.want {
			t.Errorf("%s: resolvesNames(%q) = %v, want %v", c.d.Name(), c.sql, got, c.want)
		}
		p, err := rw.Rewrite(c.sql, false)
		if err == nil && p.ResetsNames != c.want {
			t.Errorf("%s: rewrite(%q).resetsNames = %v, want %v", c.d.Name(), c.sql, p.ResetsNames, c.want)
		}
	}
}
