package plan

import (
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// backstopOf runs the backstop alone (not the planner) on src.
func backstopOf(t *testing.T, rw *Planner, src string) error {
	t.Helper()
	toks, err := sqllex.Lex(src, rw.Syntax())
	if err != nil {
		t.Fatalf("lex %q: %v", src, err)
	}
	p := &parser{rw: rw, src: src, all: toks, sig: sqllex.Significant(toks)}
	return p.backstop()
}

// TestBackstopFindsEveryModifierRun: the backstop alone finds the guarded table after
// every write keyword and every run of up to three modifiers, however spelled.
func TestBackstopFindsEveryModifierRun(t *testing.T) {
	heads := []string{"INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE", "UPSERT", "TRUNCATE", "insert", "WITH x AS (SELECT 1) UPDATE"}
	mods := append(slices.Clone(backstopSkip), "OR REPLACE", "or ignore", "Into")
	var runs [][]string
	runs = append(runs, nil)
	for _, a := range mods {
		runs = append(runs, []string{a})
		for _, b := range mods {
			runs = append(runs, []string{a, b})
			runs = append(runs, []string{a, b, a})
		}
	}
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		rw := newTestRewriter(t, d, Guard("accounts"), Guard("shop.orders"))
		targets := []string{"accounts", "ACCOUNTS", "shop.orders", "public.accounts", d.QuoteIdent("accounts")}
		n := 0
		for _, h := range heads {
			for _, run := range runs {
				for _, tg := range targets {
					src := strings.TrimSpace(h+" "+strings.Join(run, " ")) + " " + tg + " x SET a = 1"
					err := backstopOf(t, rw, src)
					if !isRefusal(err) {
						t.Fatalf("%s: backstop(%q) = %v, want ErrUnsupported", d.Name(), src, err)
					}
					n++
				}
			}
		}
		if n < 1000 {
			t.Fatalf("only %d statements generated", n)
		}
	}
}

// TestBackstopLetsReadsPass: keywords that do not start a write, other tables, and
// guarded names in strings or after a non-modifier never trip the backstop.
func TestBackstopLetsReadsPass(t *testing.T) {
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		rw := newTestRewriter(t, d, Guard("accounts"))
		for _, src := range []string{
			`SELECT * FROM accounts FOR UPDATE`,
			`SELECT * FROM accounts FOR NO KEY UPDATE`,
			`SELECT * FROM t FOR UPDATE OF accounts`,
			`INSERT INTO other (a) SELECT a FROM accounts`,
			`INSERT INTO other (a) VALUES (1) ON DUPLICATE KEY UPDATE a = (SELECT max(a) FROM accounts)`,
			`INSERT INTO other (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET a = 2`,
			`UPDATE other SET x = (SELECT max(b) FROM accounts)`,
			`DELETE FROM other WHERE id IN (SELECT id FROM accounts)`,
			`SELECT replace(name, 'a', 'b') FROM accounts`,
			`SELECT 'UPDATE accounts SET a = 1'`,
			`CREATE TABLE t (id int REFERENCES accounts (id) ON DELETE CASCADE ON UPDATE CASCADE)`,
			`GRANT SELECT, INSERT, UPDATE ON accounts TO app`,
		} {
			if err := backstopOf(t, rw, src); err != nil {
				t.Errorf("%s: backstop(%q) = %v, want nil", d.Name(), src, err)
			}
		}
	}
}

// TestBackstopSelectInto: SELECT … INTO a guarded name (CREATE TABLE AS, possibly a
// shadowing temporary table) is refused unless WithDDL; INTO another name passes.
func TestBackstopSelectInto(t *testing.T) {
	rw := newTestRewriter(t, pgTest, Guard("accounts"))
	allow := newTestRewriter(t, pgTest, Guard("accounts"), WithDDL(true))
	for _, src := range []string{
		`SELECT * INTO accounts FROM x`,
		`SELECT * INTO TEMP accounts FROM x`,
		`SELECT * INTO TEMPORARY TABLE public.accounts FROM x`,
		`(SELECT * INTO UNLOGGED accounts FROM x)`,
		`WITH s AS (SELECT 1) SELECT * INTO TEMP TABLE accounts FROM s`,
	} {
		if _, err := rw.Rewrite(src, false); !isRefusal(err) {
			t.Errorf("rewrite(%q) = %v, want ErrUnsupported", src, err)
		}
		if p, err := allow.Rewrite(src, false); err != nil || p.Kind != KindPass {
			t.Errorf("WithDDL: rewrite(%q) = %v, %v, want a pass", src, p, err)
		}
	}
	for _, src := range []string{
		`SELECT * INTO TEMP other FROM accounts`,
		`SELECT * FROM accounts`,
	} {
		if p, err := rw.Rewrite(src, false); err != nil || p.Kind != KindPass {
			t.Errorf("rewrite(%q) = %v, %v, want a pass", src, p, err)
		}
	}
}
