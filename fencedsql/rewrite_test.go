package fencedsql

import (
	"errors"
	"slices"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// testPlanner is the planner as the wrapper reports it: refusals as *UnsupportedError.
type testPlanner struct{ *plan.Planner }

// Rewrite is Planner.Rewrite with the wrapper's error mapping.
func (tp testPlanner) Rewrite(sql string, versioned bool) (*plan.Plan, error) {
	p, err := tp.Planner.Rewrite(sql, versioned)
	if p != nil && p.ClaimErr != nil {
		c := *p
		c.ClaimErr = asUnsupported(p.ClaimErr)
		p = &c
	}
	return p, asUnsupported(err)
}

// newTestRewriter builds the planner for d and the given options, as the wrapper builds
// it; without options the only guarded table is "accounts" with the default columns.
func newTestRewriter(t testing.TB, d dialect.Dialect, opts ...Option) testPlanner {
	t.Helper()
	cfg := defaultConfig()
	WithDialect(d)(&cfg)
	if len(opts) == 0 {
		opts = []Option{Guard("accounts")}
	}
	for _, o := range opts {
		o(&cfg)
	}
	rw, err := cfg.newRewriter()
	if err != nil {
		t.Fatalf("newRewriter: %v", err)
	}
	return testPlanner{rw}
}

// Statements that write no guarded table, or only read one, pass through unchanged.
func TestRewritePassThrough(t *testing.T) {
	cases := []struct {
		d    testDialect
		opts []Option
		in   string
	}{
		{pgTest, nil, `SELECT * FROM accounts WHERE id = $1`},
		{sqliteTest, nil, `SELECT balance FROM accounts WHERE id = ?`},
		{pgTest, nil, `SELECT * FROM other WHERE id IN (SELECT id FROM accounts)`},
		{pgTest, nil, `SELECT 'UPDATE accounts SET x = 1' AS q`},
		{mysqlTest, nil, `SELECT note FROM other WHERE note = 'DELETE FROM accounts'`},
		{pgTest, nil, `UPDATE other SET x = 1 WHERE id = $1`},
		{mysqlTest, nil, `UPDATE other SET x = ? WHERE id = ?`},
		{sqliteTest, nil, `DELETE FROM other WHERE id = ?`},
		{pgTest, nil, `INSERT INTO other (a) VALUES ($1)`},
		{pgTest, nil, `UPDATE other SET x = (SELECT max(b) FROM accounts)`},
		{pgTest, nil, `UPDATE other SET x = 1 FROM accounts WHERE other.id = accounts.id`},
		{pgTest, nil, `INSERT INTO other (a) SELECT a FROM accounts`},
		{pgTest, nil, `DELETE FROM other WHERE id IN (SELECT id FROM accounts)`},
		{pgTest, nil, `UPDATE accounts_archive SET x = 1`},
		{mysqlTest, nil, `INSERT INTO my_accounts (a) VALUES (?)`},
		{pgTest, nil, `UPDATE other SET note = 'accounts' WHERE id = $1`},
		{pgTest, nil, `UPDATE other SET x = 1 -- accounts`},
		{pgTest, nil, `SELECT 1; SELECT 2`},
		{pgTest, []Option{Guard("accounts"), WithDDL(true)}, `CREATE TABLE accounts (id int, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`},
		{pgTest, nil, `CREATE TABLE accounts_archive (id int)`},
		{pgTest, nil, `SAVEPOINT sp1`},
		{pgTest, nil, `ROLLBACK TO SAVEPOINT sp1`},
		{mysqlTest, nil, `RELEASE SAVEPOINT sp1`},
		{pgTest, nil, `SET statement_timeout = 5000`},
		{pgTest, nil, `VACUUM accounts`},
		{pgTest, nil, ``},
		// Unguarded malformed statements are the database's to report.
		// (on PostgreSQL a text whose head is no statement keyword is refused on a pool
		// with guarded tables: it may be a pgx prepared-statement name)
		{pgTest, []Option{WithDDL(false)}, `SELEC * FRM nowhere`},
		{mysqlTest, nil, `SELEC * FRM nowhere`},
		{pgTest, nil, `SELECT 'oops`},
		{mysqlTest, nil, `UPDATE other SET x = 'unterminated`},
		{sqliteTest, nil, `UPDATE other SET a = ?1`},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d, c.opts...)
		p, err := rw.Rewrite(c.in, false)
		if err != nil {
			t.Errorf("%s: rewrite(%q): %v", c.d.name, c.in, err)
			continue
		}
		if p.Kind != plan.KindPass {
			t.Errorf("%s: rewrite(%q) = %v %q, want pass-through", c.d.name, c.in, p.Kind, p.SQL)
		}
		if p2, err := rw.Rewrite(c.in, true); err != nil || p2.Kind != plan.KindPass {
			t.Errorf("%s: versioned rewrite(%q) = %v, %v; want pass-through", c.d.name, c.in, p2, err)
		}
	}
}

// The versioned and plain variants of one statement differ only in the version item.
func TestRewriteVersionedOnlyAddsTheVersionCheck(t *testing.T) {
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		rw := newTestRewriter(t, d)
		in := `UPDATE accounts SET x = 1 WHERE id = 2`
		plain, err := rw.Rewrite(in, false)
		if err != nil {
			t.Fatal(err)
		}
		ver, err := rw.Rewrite(in, true)
		if err != nil {
			t.Fatal(err)
		}
		if plain.SQL == ver.SQL {
			t.Errorf("%s: versioned plan equals plain plan", d.name)
		}
		if slices.Contains(plain.Args, plan.ArgVersion) {
			t.Errorf("%s: plain plan binds the version: %v", d.name, plain.Args)
		}
		if n := countRef(ver.Args, plan.ArgVersion); n != 1 {
			t.Errorf("%s: versioned plan binds the version %d times: %v", d.name, n, ver.Args)
		}
	}
}

func countRef(args []plan.ArgRef, r plan.ArgRef) int {
	n := 0
	for _, a := range args {
		if a == r {
			n++
		}
	}
	return n
}

// Guards are matched on identifiers, never on substrings of other names or text.
func TestRewriteGuardMatching(t *testing.T) {
	rw := newTestRewriter(t, pgTest, Guard("accounts"), Guard("shop.orders"))
	for in, want := range map[string]plan.Kind{
		`UPDATE accounts SET x = 1`:        plan.KindUpdate,
		`UPDATE ACCOUNTS SET x = 1`:        plan.KindUpdate,
		`UPDATE public.accounts SET x = 1`: plan.KindUpdate,
		`UPDATE shop.orders SET x = 1`:     plan.KindUpdate,
		`UPDATE orders SET x = 1`:          plan.KindUpdate,
		`UPDATE SHOP.ORDERS SET x = 1`:     plan.KindUpdate,
		`UPDATE other.orders SET x = 1`:    plan.KindUpdate, // G13: any qualifier
		`UPDATE accountsx SET x = 1`:       plan.KindPass,
		`UPDATE xaccounts SET x = 1`:       plan.KindPass,
		`UPDATE "accounts x" SET x = 1`:    plan.KindPass,
	} {
		p, err := rw.Rewrite(in, false)
		if err != nil {
			t.Errorf("rewrite(%q): %v", in, err)
			continue
		}
		if p.Kind != want {
			t.Errorf("rewrite(%q) kind = %v, want %v", in, p.Kind, want)
		}
	}
}

// The plan cache returns the same plan for the same text, keeps the plain and versioned
// variants apart, and does not cache refusals.
func TestCorePlanCache(t *testing.T) {
	k, err := newCore([]Option{WithDialect(pgTest), Guard("accounts")})
	if err != nil {
		t.Fatal(err)
	}
	in := `UPDATE accounts SET x = $1`
	a, err := k.plan(in, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.plan(in, false)
	if a != b {
		t.Errorf("second plan is not the cached one")
	}
	v, _ := k.plan(in, true)
	if v == a || !slices.Contains(v.Args, plan.ArgVersion) {
		t.Errorf("versioned plan = %v, want a distinct plan with the version", v.Args)
	}
	for range 2 {
		if _, err := k.plan(`TRUNCATE accounts`, false); !errors.Is(err, ErrUnsupported) {
			t.Errorf("TRUNCATE: %v", err)
		}
	}
}
