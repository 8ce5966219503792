package sqlite_test

// A grammar generator of hostile SQLite SQL, run against a table guarded by
// schema.Check's Fix — the row guard, the floor trigger and the tombstones — unlike
// internal/redteam's SQLite catalogue, which uses a wrapper-only guard and a fixed
// list of statements (kept from red-team rt53d; its one finding, F1, is
// TestDDLPoolUniqueIndexRefused). The tests that use it:
//
//   - TestGeneratedWritesThroughPool (generated_pool_test.go): through the fenced
//     pool under a stale token, no token, and a current one (differential);
//   - TestGeneratedWritesOnPlainConnection (generated_plain_test.go): the database
//     guard alone;
//   - TestGeneratedSessionCompositions (generated_session_test.go): session state set
//     up through the pool before a write;
//   - TestGeneratedDurabilityPragmas (generated_pragma_test.go): PRAGMA spellings that
//     lower durability after the session check ran.
//
// Statements are composed from fragments (sqlGen): an optional CTE prefix
// (WITH accounts AS … shadowing, MATERIALIZED, RECURSIVE); a verb (INSERT [OR
// REPLACE/IGNORE/ROLLBACK/ABORT/FAIL], REPLACE, UPDATE [OR …], DELETE); a spelling of
// the table's name ("x", [x], `x`, 'x', main., case, comments); an alias, INDEXED BY /
// NOT INDEXED; SET lists over the rowid aliases (rowid, _rowid_, oid, the key), the
// fencing columns and a UNIQUE column (so OR REPLACE deletes a row of another key);
// WHERE over the rowid aliases with key spellings ('4', 4.0, 0x4, 4e0, CAST('4' AS
// BLOB)); UPDATE … FROM; upserts with one or two ON CONFLICT clauses, DO UPDATE …
// WHERE, DO NOTHING; RETURNING; ORDER BY … LIMIT; DEFAULT VALUES; a blank or a comment
// in every gap; statements run first on the same connection (PRAGMA
// recursive_triggers / foreign_keys, ATTACH of the same file under another name).
//
// Each case runs on a fresh copy of a template file (genTemplates): accounts' rows 1..3
// at token 50 and key 4 deleted under 50 (its tombstone at 50), in one of the table
// shapes of genShapes (rowid, WITHOUT ROWID, INT PRIMARY KEY, INTEGER PRIMARY KEY DESC,
// a TEXT COLLATE NOCASE key, a STORED generated UNIQUE column, a composite UNIQUE).
//
// Knobs (environment, shared with the randomized schedule tests,
// internal/fencetest/scheduleknobs.go; the defaults fit CI, about 16 s for the four
// tests together):
//
//	FENCEDSQL_SCHEDULES_SEED=n   the generator's seed (default: time-based; every test
//	                             logs its seed and the line that replays it)
//	FENCEDSQL_SCHEDULES_ITERS=n  cases per test (per shape where it has shapes), with
//	                             no time budget (default: as many as the budget allows)
//	FENCEDSQL_SCHEDULES_LOG=1    log the refusals made with a current token (possible
//	                             over-refusals) and each set-up statement's outcome
//
// A long run: FENCEDSQL_SCHEDULES_ITERS=3000 go test -timeout 0 -count=1 -run
// 'TestGenerated' ./dialects/sqlite/

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"path/filepath"
	"sort"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// genShapes are the guarded table's shapes the generator runs against, by name.
var genShapes = map[string]string{
	"rowid":   `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, email TEXT UNIQUE)`,
	"norowid": `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, email TEXT UNIQUE) WITHOUT ROWID`,
	"intkey":  `CREATE TABLE accounts (id INT PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, email TEXT UNIQUE)`,
	"desckey": `CREATE TABLE accounts (id INTEGER PRIMARY KEY DESC, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, email TEXT UNIQUE)`,
	"textkey": `CREATE TABLE accounts (id TEXT COLLATE NOCASE PRIMARY KEY NOT NULL, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, email TEXT UNIQUE)`,
	"gencol":  `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, email TEXT, slug TEXT GENERATED ALWAYS AS (lower(trim(email))) STORED UNIQUE)`,
	"uniqtok": `CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, email TEXT, UNIQUE (email, balance))`,
}

// forEachShape runs f on every shape of genShapes, as a subtest named by the shape,
// with budget shared among them.
func forEachShape(t *testing.T, budget time.Duration, f func(t *testing.T, ddl string, budget time.Duration)) {
	var names []string
	for k := range genShapes {
		names = append(names, k)
	}
	sort.Strings(names)
	for _, shape := range names {
		t.Run(shape, func(t *testing.T) { f(t, genShapes[shape], budget/time.Duration(len(names))) })
	}
}

var genSetup = []string{
	`CREATE TABLE ledger (id INTEGER PRIMARY KEY, account_id INTEGER NOT NULL, amount INTEGER NOT NULL DEFAULT 0)`,
	`INSERT INTO ledger VALUES (1, 1, 5), (2, 2, 7), (3, 3, 9)`,
}

// genSeedRows writes rows 1..4 at token 50; key 4 is then deleted (its tombstone at 50).
var genSeedRows = []string{
	`INSERT INTO accounts (id, balance, fence_token, version, email) VALUES (1, 100, 50, 3, 'a@x'), (2, 200, 50, 3, 'b@x'), (3, 300, 50, 3, 'c@x'), (4, 400, 50, 3, 'd@x')`,
	`DELETE FROM accounts WHERE id = 4`,
}

// genTemplates are the files every case copies: the guarded one, and a bare one (the
// same tables and rows, no guard) for the differential runs; base is the guarded
// one's contents.
type genTemplates struct {
	guarded, bare string
	base          genState
}

// makeGenTemplates writes the templates with accounts created by ddl.
func makeGenTemplates(t *testing.T, ddl string) genTemplates {
	t.Helper()
	ctx := context.Background()
	dir := t.TempDir()
	tp := genTemplates{guarded: filepath.Join(dir, "guarded.db"), bare: filepath.Join(dir, "bare.db")}
	bare := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(tp.bare))
	ownExec(t, bare, append(append([]string{ddl}, genSetup...), genSeedRows...)...)
	bare.Close()
	g := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(tp.guarded))
	g.SetMaxOpenConns(1)
	ownExec(t, g, append([]string{ddl}, genSetup...)...)
	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, g, sqlite.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	ownExec(t, g, reps[0].Fix...)
	if reps, err = schema.Check(ctx, g, sqlite.Dialect, spec); err != nil || !reps[0].OK() || !reps[0].Guarded || !reps[0].Tombstoned {
		t.Fatalf("template not guarded: %+v %v", reps, err)
	}
	ownExec(t, g, genSeedRows...)
	g.Close()
	if tp.base = runGenCase(t, tp.guarded, false, 0, genCase{sql: "SELECT 1"}, false); tp.base.err != nil {
		t.Fatal(tp.base.err)
	}
	return tp
}

// copyGenFile copies the file src into a new temporary directory.
func copyGenFile(t *testing.T, src string) string {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	dst := filepath.Join(t.TempDir(), "c.db")
	if err := os.WriteFile(dst, b, 0o600); err != nil {
		t.Fatal(err)
	}
	return dst
}

// genRows is the result of q as text: columns joined by ",", rows by ";"; a BLOB
// reads "blob:<bytes>" (another key than the TEXT or INTEGER of its bytes).
func genRows(db *sql.DB, q string) string {
	r, err := db.Query(q)
	if err != nil {
		return "ERR " + err.Error()
	}
	defer r.Close()
	cols, _ := r.Columns()
	var out []string
	for r.Next() {
		vals, ptrs := make([]any, len(cols)), make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := r.Scan(ptrs...); err != nil {
			return "ERR " + err.Error()
		}
		parts := make([]string, len(vals))
		for i, v := range vals {
			if b, ok := v.([]byte); ok {
				v = "blob:" + string(b)
			}
			parts[i] = fmt.Sprint(v)
		}
		out = append(out, strings.Join(parts, ","))
	}
	return strings.Join(out, ";")
}

const (
	genAccQ   = `SELECT id, balance, fence_token, version, email FROM main.accounts ORDER BY id`
	genTombQ  = `SELECT * FROM main.fencedsql_tomb_accounts ORDER BY 1`
	genFloorQ = `SELECT * FROM main.fencedsql_floor`
	genCmpQ   = `SELECT id, balance, email FROM main.accounts ORDER BY id`
	genLedQ   = `SELECT * FROM main.ledger ORDER BY id`
)

// genCase is one generated case: statements run first on the same connection ({FILE}
// replaced by the file's path; a leading "@": under the case's token), then sql.
type genCase struct {
	kind string
	pre  []string
	sql  string
}

// genState is the database after a case: its error, whether a pre statement
// failed, and the contents of accounts (genAccQ, genCmpQ), the tombstones, the
// floor and ledger.
type genState struct {
	err                        error
	preFailed                  bool
	acc, tomb, floor, cmp, led string
}

// runGenCase runs c on a fresh copy of src, through a fenced pool (fenced; tok 0: no
// token) or the plain driver.
func runGenCase(t *testing.T, src string, fenced bool, tok uint64, c genCase, log bool) genState {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
	defer cancel()
	file := copyGenFile(t, src)
	dsn := "file:" + filepath.ToSlash(file) + "?_pragma=busy_timeout(2000)"
	driver := "sqlite"
	if fenced {
		driver, dsn = "fenced-sqlite", dsn+"&fenced_tables=accounts"
	}
	db := testdb.Open(t, driver, dsn)
	db.SetMaxOpenConns(1)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	var s genState
	wctx := ctx
	if tok != 0 {
		wctx = fencedsql.WithToken(ctx, tok)
	}
	for _, p := range c.pre {
		pctx := ctx
		if strings.HasPrefix(p, "@") {
			p, pctx = p[1:], wctx
		}
		_, perr := conn.ExecContext(pctx, strings.ReplaceAll(p, "{FILE}", file))
		s.preFailed = s.preFailed || perr != nil
		if log {
			t.Logf("pre %q: %v", p, perr)
		}
	}
	if strings.Contains(strings.ToUpper(c.sql), "RETURNING") {
		rows, err := conn.QueryContext(wctx, c.sql)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			if cerr := rows.Close(); err == nil {
				err = cerr
			}
		}
		s.err = err
	} else {
		_, s.err = conn.ExecContext(wctx, c.sql)
	}
	conn.Close()
	db.Close()
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(file)+"?mode=ro")
	defer raw.Close()
	s.acc, s.cmp, s.led = genRows(raw, genAccQ), genRows(raw, genCmpQ), genRows(raw, genLedQ)
	s.tomb, s.floor = genRows(raw, genTombQ), genRows(raw, genFloorQ)
	return s
}

// genTyped reports whether err is one of the wrapper's typed refusals.
func genTyped(err error) bool {
	for _, e := range []error{fencedsql.ErrFenced, fencedsql.ErrUnsupported, fencedsql.ErrNoToken, fencedsql.ErrSchema, fencedsql.ErrGuard} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

// judgeStale returns "" when a write under a stale token (tok; 0: none) through the
// pool left the guarded file as base was: accounts' rows unchanged but for new rows of
// never-written keys stamped with tok, the seeded tombstones kept (not lowered), a new
// tombstone only of a live key at a token its row already carries or passed (the
// REPLACE record a DO NOTHING or OR IGNORE keeps: dialects/sqlite tombstone.go), and
// the floor unchanged; else what changed.
func judgeStale(base, s genState, tok uint64) string {
	want := map[string]string{}
	for _, r := range strings.Split(base.acc, ";") {
		want[strings.SplitN(r, ",", 2)[0]] = r
	}
	var bad []string
	seen := map[string]bool{}
	for _, r := range strings.Split(s.acc, ";") {
		if r == "" {
			continue
		}
		f := strings.Split(r, ",")
		seen[f[0]] = true
		switch w, ok := want[f[0]]; {
		case ok && w != r:
			bad = append(bad, "changed "+w+" -> "+r)
		case ok:
		case f[0] == "4":
			bad = append(bad, "resurrected key 4 (tombstone at 50): "+r)
		case tok == 0 || len(f) < 3 || f[2] != strconv.FormatUint(tok, 10):
			bad = append(bad, fmt.Sprintf("insert not stamped with %d: %s", tok, r))
		}
	}
	for id, r := range want {
		if !seen[id] {
			bad = append(bad, "deleted row "+r)
		}
	}
	baseTomb, tomb, live := genTokens(base.tomb, 1), genTokens(s.tomb, 1), genTokens(s.acc, 2)
	for k, v := range baseTomb {
		if nv, ok := tomb[k]; !ok || nv < v {
			bad = append(bad, fmt.Sprintf("tombstone of %s lost or lowered (%v)", k, nv))
		}
	}
	for k, v := range tomb {
		if _, ok := baseTomb[k]; ok {
			continue
		}
		if lv, ok := live[k]; !ok || v > lv {
			bad = append(bad, fmt.Sprintf("new tombstone %s at %v (live row token %v, present %v)", k, v, lv, ok))
		}
	}
	if s.floor != base.floor {
		bad = append(bad, fmt.Sprintf("floor %s -> %s", base.floor, s.floor))
	}
	sort.Strings(bad)
	return strings.Join(bad, "; ")
}

// genTokens reads column col of rows (genRows' text) as a number by the row's first
// column (its key).
func genTokens(rows string, col int) map[string]float64 {
	m := map[string]float64{}
	for _, r := range strings.Split(rows, ";") {
		if r == "" {
			continue
		}
		f := strings.Split(r, ",")
		if col < len(f) {
			v, _ := strconv.ParseFloat(f[col], 64)
			m[f[0]] = v
		}
	}
	return m
}

// genKnobs starts a generator test: its knobs (package comment) with budget as the
// default time limit, logging the seed and the line that replays the run.
type genKnobs struct {
	fencetest.ScheduleKnobs
	budget time.Duration
	start  time.Time
}

// startGen also returns the run's statement generator and the templates of the
// table shape ddl.
func startGen(t *testing.T, budget time.Duration, ddl string) (*genKnobs, *sqlGen, genTemplates) {
	t.Helper()
	k := &genKnobs{ScheduleKnobs: fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 1<<30), budget: budget}
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<cases run> go test -run '^%s$' ./dialects/sqlite/)", k.Seed, k.Seed, strings.ReplaceAll(t.Name(), "/", "$/^"))
	tp := makeGenTemplates(t, ddl)
	k.start = time.Now()
	return k, &sqlGen{r: rand.New(rand.NewSource(k.Seed))}, tp
}

// more reports whether case i is to run: within the iterations, and within the
// budget unless FENCEDSQL_SCHEDULES_ITERS is set.
func (k *genKnobs) more(i int) bool {
	return i < k.Iters && (k.ItersSet || time.Since(k.start) < k.budget)
}
