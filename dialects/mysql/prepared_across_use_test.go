package mysql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// An application's prepared statement (db.Prepare, Conn.PrepareContext) outliving a
// USE on its connection (docs/design.md G13, "Prepared statements across a change of
// name resolution"; red-team rt56b F1, F2). MariaDB keeps a server-side prepared
// statement on the database it was prepared in, while the wrapper's checks after the
// USE judge the table the name resolves to now: the wrapper prepares every form of the
// statement again under the resolution in force, so the statement writes the table an
// unprepared statement on the connection would, and the verdicts that chose its form
// are about that table.

// useKind is the kind of a database's accounts table.
type useKind int

const (
	usePlain   useKind = iota // wrapper-only, no triggers
	useTouch                  // a user BEFORE UPDATE trigger (an updated_at touch)
	useGuarded                // the database guard (schema.Check's Fix)
	useKinds
)

func (k useKind) String() string { return [...]string{"plain", "touch", "guarded"}[k] }

type useRow struct{ balance, touched, tok, ver int64 }

// useSetup creates a database whose accounts table is of kind k.
func useSetup(t *testing.T, ctx context.Context, k useKind) (dsn, name string, admin *sql.DB) {
	t.Helper()
	dsn = testdb.MySQL(t)
	stmts := []string{
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, touched BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
	}
	if k == useTouch {
		stmts = append(stmts, "CREATE TRIGGER accounts_touch BEFORE UPDATE ON accounts FOR EACH ROW SET NEW.touched = OLD.touched + 1")
	}
	admin = testdb.Open(t, "mysql", dsn, stmts...)
	if k == useGuarded {
		fencetest.Guard(t, ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	}
	if err := admin.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&name); err != nil {
		t.Fatal(err)
	}
	return dsn, name, admin
}

func useRead(t *testing.T, ctx context.Context, admin *sql.DB, db string, id int) (useRow, bool) {
	t.Helper()
	var r useRow
	err := admin.QueryRowContext(ctx, "SELECT balance, touched, fence_token, version FROM "+db+".accounts WHERE id = ?", id).Scan(&r.balance, &r.touched, &r.tok, &r.ver)
	if errors.Is(err, sql.ErrNoRows) {
		return r, false
	}
	if err != nil {
		t.Fatal(err)
	}
	return r, true
}

// useTyped reports whether err is one of the library's typed refusals.
func useTyped(err error) bool {
	for _, e := range []error{fencedsql.ErrFenced, fencedsql.ErrNoToken, fencedsql.ErrSchema, fencedsql.ErrUnsupported, fencedsql.ErrBelowFloor, fencedsql.ErrDuplicate, fencedsql.ErrGuard, fencedsql.ErrVersionConflict, fencedsql.ErrClaimConflict} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}

var useStatements = []struct {
	name, text string
	args       func(id int) []any
	changes    bool // a fresh execution on an existing row changes it
}{
	{"insert-if-absent", "INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = id", func(id int) []any { return []any{id, 777} }, false},
	{"upsert", "INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = VALUES(balance)", func(id int) []any { return []any{id, 555} }, true},
	{"update", "UPDATE accounts SET balance = balance + 1 WHERE id = ?", func(id int) []any { return []any{id} }, true},
	{"delete", "DELETE FROM accounts WHERE id = ?", func(id int) []any { return []any{id} }, true},
}

// useCombo is one case: the kind of the table in the database the statement is
// prepared in (A) and in the one a later USE moves to (B), the statement, whether it
// ran in A first, whether the token after the USE is stale.
type useCombo struct {
	ka, kb          useKind
	st              int
	runFirst, stale bool
}

func (cb useCombo) String() string {
	return fmt.Sprintf("A=%v B=%v %s runFirst=%v stale=%v", cb.ka, cb.kb, useStatements[cb.st].name, cb.runFirst, cb.stale)
}

func allUseCombos() []useCombo {
	var all []useCombo
	for ka := useKind(0); ka < useKinds; ka++ {
		for kb := useKind(0); kb < useKinds; kb++ {
			for st := range useStatements {
				for _, rf := range []bool{false, true} {
					for _, sl := range []bool{false, true} {
						all = append(all, useCombo{ka, kb, st, rf, sl})
					}
				}
			}
		}
	}
	return all
}

// useDB is a database of the fixture: its name, a plain connection to it and a fenced
// pool whose DSN names it.
type useDB struct {
	name      string
	admin, db *sql.DB
}

// useFixture creates two databases of each kind and returns, for a pair of kinds, the
// database statements are prepared in and the one USE moves to (two different
// databases when the kinds are equal).
func useFixture(t *testing.T, ctx context.Context) func(ka, kb useKind) (a, b useDB) {
	t.Helper()
	var dbs [useKinds][2]useDB
	for k := useKind(0); k < useKinds; k++ {
		for i := range 2 {
			dsn, name, admin := useSetup(t, ctx, k)
			dbs[k][i] = useDB{name: name, admin: admin, db: testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")}
		}
	}
	return func(ka, kb useKind) (useDB, useDB) {
		if ka == kb {
			return dbs[ka][0], dbs[kb][1]
		}
		return dbs[ka][0], dbs[kb][0]
	}
}

// TestPreparedAcrossUseGenerated: a generator over useCombo (144 cases). Oracle: the
// execution after the USE concerns B's row only — A's row never changes (every column,
// a trigger-maintained one included); a stale execution changes no row and, where it
// fails, fails typed; a fresh one succeeds and changes B's row when the statement
// changes an existing row.
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed (time-based by default) is
// logged; the default run samples the shuffled cases for about 4 s after the set-up (CI); the long form
// runs FENCEDSQL_SCHEDULES_ITERS cases with no time budget (144 covers every case
// once; more repeat them in a new order):
//
//	FENCEDSQL_SCHEDULES_ITERS=432 go test -run '^TestPreparedAcrossUseGenerated$' ./dialects/mysql/
func TestPreparedAcrossUseGenerated(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 1<<30)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<cases run> go test -run '^TestPreparedAcrossUseGenerated$' ./dialects/mysql/)", k.Seed, k.Seed)
	rng := rand.New(rand.NewSource(k.Seed))
	var combos []useCombo
	for len(combos) < k.Iters && (len(combos) < 1<<12 || k.ItersSet) {
		all := allUseCombos()
		rng.Shuffle(len(all), func(i, j int) { all[i], all[j] = all[j], all[i] })
		combos = append(combos, all...)
	}
	combos = combos[:min(len(combos), k.Iters)]
	budget := 4 * time.Second // after the fixture's set-up
	if k.ItersSet {
		budget = 0
	}
	ran := runUseCombos(t, combos, budget)
	t.Logf("%d cases run", ran)
}

// TestInsertIfAbsentPreparedAcrossUse: the ORMs' "insert if absent" (GORM
// OnConflict{DoNothing}, ent DoNothing) prepared in a database whose accounts has a
// BEFORE UPDATE trigger (a user's, or the guard), run after USE of a database whose
// accounts has none (red-team rt56b F1: the stale no-op fired A's user trigger; F2:
// the fresh one was refused by A's guard).
func TestInsertIfAbsentPreparedAcrossUse(t *testing.T) {
	runUseCombos(t, []useCombo{
		{useTouch, usePlain, 0, false, true},
		{useTouch, usePlain, 0, true, true},
		{useGuarded, usePlain, 0, false, false},
		{useGuarded, usePlain, 0, true, false},
	}, 0)
}

// runUseCombos runs the cases (within budget when it is not 0) and reports the
// distinct failures; it returns how many ran.
func runUseCombos(t *testing.T, combos []useCombo, budget time.Duration) int {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	pair := useFixture(t, ctx)
	start := time.Now()
	seen := map[string]bool{}
	var failures []string
	ran := 0
	for i, cb := range combos {
		if budget > 0 && ran >= 2 && time.Since(start) > budget {
			break
		}
		ran++
		for _, pr := range runUseCombo(t, ctx, pair, cb, 100+i) {
			if key := cb.String() + ": " + pr[:min(len(pr), 30)]; !seen[key] {
				seen[key] = true
				failures = append(failures, cb.String()+": "+pr)
			}
		}
	}
	if len(failures) > 0 {
		t.Errorf("%d distinct failures:\n%s", len(failures), strings.Join(failures, "\n"))
	}
	return ran
}

// runUseCombo runs one case on row id and returns its problems.
func runUseCombo(t *testing.T, ctx context.Context, pair func(ka, kb useKind) (a, b useDB), cb useCombo, id int) []string {
	t.Helper()
	st := useStatements[cb.st]
	a, b := pair(cb.ka, cb.kb)
	// The row, written fresh at token 100 in both databases through the pools.
	for _, pool := range []*sql.DB{a.db, b.db} {
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO accounts (id, balance) VALUES (?, 10)", id); err != nil {
			t.Fatalf("seed: %v", err)
		}
	}
	c, err := a.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer func() {
		_, _ = c.ExecContext(ctx, "USE "+a.name)
		c.Close()
	}()
	s, err := c.PrepareContext(ctx, st.text)
	if err != nil {
		t.Fatalf("%v: prepare: %v", cb, err)
	}
	defer s.Close()
	var problems []string
	if cb.runFirst { // a fresh execution on a throwaway key, in A
		if _, err := s.ExecContext(fencedsql.WithToken(ctx, 150), st.args(id+100000)...); err != nil {
			problems = append(problems, fmt.Sprintf("first run in A: %v", err))
		}
	}
	if _, err := c.ExecContext(ctx, "USE "+b.name); err != nil {
		t.Fatal(err)
	}
	tok := uint64(200)
	if cb.stale {
		tok = 50
	}
	beforeA, _ := useRead(t, ctx, a.admin, a.name, id)
	beforeB, _ := useRead(t, ctx, a.admin, b.name, id)
	_, err = s.ExecContext(fencedsql.WithToken(ctx, tok), st.args(id)...)
	afterA, okA := useRead(t, ctx, a.admin, a.name, id)
	afterB, okB := useRead(t, ctx, a.admin, b.name, id)
	if err != nil && !useTyped(err) {
		problems = append(problems, fmt.Sprintf("untyped error %T: %v", err, err))
	}
	if !okA || afterA != beforeA {
		problems = append(problems, fmt.Sprintf("A's row %d changed: %+v -> %+v (present %v), err %v", id, beforeA, afterA, okA, err))
	}
	switch {
	case cb.stale && (!okB || afterB != beforeB):
		problems = append(problems, fmt.Sprintf("stale token 50 changed B's row %d: %+v -> %+v (present %v), err %v", id, beforeB, afterB, okB, err))
	case !cb.stale && err != nil:
		problems = append(problems, fmt.Sprintf("over-refusal: fresh token 200 refused: %T %v", err, err))
	case !cb.stale && st.changes && okB && afterB == beforeB:
		problems = append(problems, fmt.Sprintf("fresh token 200 did not change B's row %d: %+v", id, afterB))
	}
	return problems
}

// TestInsertIfAbsentPooledUseLeftBehind: the same through the pool's own API, no
// sql.Conn: db.Prepare, then a USE sent through the pool by another part of the
// application is left on the (only) connection; the statement's next execution under a
// stale token must not fire the user's BEFORE UPDATE trigger of the database it was
// prepared in (red-team rt56b F1).
func TestInsertIfAbsentPooledUseLeftBehind(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsnA, a, admin := useSetup(t, ctx, useTouch)
	_, b, _ := useSetup(t, ctx, usePlain)
	db := testdb.Open(t, "fenced-mysql", dsnA+"&fenced_tables=accounts")
	db.SetMaxOpenConns(1)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO accounts (id, balance) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	s, err := db.PrepareContext(ctx, "INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = id")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if _, err := db.ExecContext(ctx, "USE "+b); err != nil {
		t.Fatal(err)
	}
	before, _ := useRead(t, ctx, admin, a, 1)
	_, err = s.ExecContext(fencedsql.WithToken(ctx, 50), 1, 777)
	if after, _ := useRead(t, ctx, admin, a, 1); after != before {
		t.Errorf("a stale (token 50) insert-if-absent changed %s.accounts row 1 (last written with token 100): %+v -> %+v, err %v", a, before, after, err)
	}
	if got, ok := useRead(t, ctx, admin, b, 1); !ok || got.balance != 777 || err != nil {
		t.Errorf("the insert-if-absent after USE %s: row %+v (present %v), err %v; want the row inserted in %s", b, got, ok, err, b)
	}
}

// TestInsertIfAbsentPreparedAcrossRawUse: the connection's database moved by a USE sent
// on the wrapped connection itself (sql.Conn.Raw), which the wrapper does not see: Raw
// re-arms the connection's names as a USE does, so the statement prepared before
// follows it too.
func TestInsertIfAbsentPreparedAcrossRawUse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsnA, a, admin := useSetup(t, ctx, useTouch)
	_, b, _ := useSetup(t, ctx, usePlain)
	db := testdb.Open(t, "fenced-mysql", dsnA+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO accounts (id, balance) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	s, err := c.PrepareContext(ctx, "INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = id")
	if err != nil {
		t.Fatal(err)
	}
	defer s.Close()
	if err := c.Raw(func(dc any) error {
		_, err := dc.(driver.ExecerContext).ExecContext(ctx, "USE "+b, nil)
		return err
	}); err != nil {
		t.Fatal(err)
	}
	before, _ := useRead(t, ctx, admin, a, 1)
	_, err = s.ExecContext(fencedsql.WithToken(ctx, 50), 1, 777)
	if after, _ := useRead(t, ctx, admin, a, 1); after != before {
		t.Errorf("a stale insert-if-absent after a USE on Raw changed %s.accounts row 1: %+v -> %+v, err %v", a, before, after, err)
	}
	if got, ok := useRead(t, ctx, admin, b, 1); !ok || got.balance != 777 || err != nil {
		t.Errorf("the insert-if-absent after a USE on Raw: row %+v (present %v), err %v; want the row inserted in %s", got, ok, err, b)
	}
}

// TestDeletePreparedAcrossUseMixedTokens: a DELETE prepared in database A, run after
// USE B with a token newer than B's row and older than A's, for pairs of table kinds
// that cover each kind on each side (the generator has every pair), run in A before
// the USE or not. Every form of the DELETE (its fencing UPDATE,
// its one-statement and keyed forms) follows the USE: B's row is deleted with
// RowsAffected 1 and A's is untouched (before the fix, the statement deleted in B only
// when it had not run before the USE: the forms prepared then were A's).
func TestDeletePreparedAcrossUseMixedTokens(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	var dbs [useKinds]useDB
	for k := range useKinds {
		dsn, name, admin := useSetup(t, ctx, k)
		dbs[k] = useDB{name: name, admin: admin, db: testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")}
	}
	var problems []string
	id := 0
	for ka := range useKinds {
		kb := (ka + 1) % useKinds
		a, b := dbs[ka], dbs[kb]
		for _, runFirst := range []bool{false, true} {
			id++
			if _, err := a.db.ExecContext(fencedsql.WithToken(ctx, 200), "INSERT INTO accounts (id, balance) VALUES (?, 10)", id); err != nil {
				t.Fatal(err)
			}
			if _, err := b.db.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO accounts (id, balance) VALUES (?, 10)", id); err != nil {
				t.Fatal(err)
			}
			desc := fmt.Sprintf("A=%v B=%v runFirst=%v", ka, kb, runFirst)
			func() {
				c, err := a.db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				defer func() { _, _ = c.ExecContext(ctx, "USE "+a.name) }()
				s, err := c.PrepareContext(ctx, "DELETE FROM accounts WHERE id = ?")
				if err != nil {
					t.Fatal(err)
				}
				defer s.Close()
				if runFirst {
					if _, err := s.ExecContext(fencedsql.WithToken(ctx, 300), 100000+id); err != nil {
						t.Fatalf("%s: %v", desc, err)
					}
				}
				if _, err := c.ExecContext(ctx, "USE "+b.name); err != nil {
					t.Fatal(err)
				}
				beforeA, _ := useRead(t, ctx, a.admin, a.name, id)
				res, err := s.ExecContext(fencedsql.WithToken(ctx, 150), id)
				var n int64 = -1
				if err == nil {
					n, _ = res.RowsAffected()
				}
				afterA, okA := useRead(t, ctx, a.admin, a.name, id)
				_, okB := useRead(t, ctx, a.admin, b.name, id)
				if !okA || afterA != beforeA {
					problems = append(problems, fmt.Sprintf("%s: A's row (token 200) changed by token 150: %+v -> %+v present %v (err %v)", desc, beforeA, afterA, okA, err))
				}
				if err != nil || okB || n != 1 {
					problems = append(problems, fmt.Sprintf("%s: err %v, B's row present %v, RowsAffected %d; want B's row deleted, 1", desc, err, okB, n))
				}
			}()
		}
	}
	if len(problems) > 0 {
		t.Errorf("%d problems:\n%s", len(problems), strings.Join(problems, "\n"))
	}
}

// TestLockingReadPreparedAcrossUse: a locking read prepared in one database and run,
// with a token, after USE of another, where the name it reads is a view over the
// guarded table in one and a plain table in the other. The view check judges the
// relation the name resolves to at execution, and the statement reads that relation:
// from the view's database to the table's, it reads the table (before, it read and
// locked the view's rows unclaimed, judged by the table's verdict); the other way, it
// is refused (ErrUnsupported).
func TestLockingReadPreparedAcrossUse(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsnA, a, adminA := useSetup(t, ctx, usePlain)
	dsnB, b, adminB := useSetup(t, ctx, usePlain)
	for _, q := range []string{"INSERT INTO accounts (id, balance) VALUES (1, 10)", "CREATE VIEW acc_v AS SELECT id, balance FROM accounts"} {
		if _, err := adminA.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	for _, q := range []string{"CREATE TABLE acc_v (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL) ENGINE=InnoDB", "INSERT INTO acc_v VALUES (1, 99)"} {
		if _, err := adminB.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	const q = "SELECT balance FROM acc_v WHERE id = ? FOR UPDATE"
	for _, tc := range []struct {
		dsn, to string
		want    int64 // 0: refused
	}{{dsnA, b, 99}, {dsnB, a, 0}} {
		db := testdb.Open(t, "fenced-mysql", tc.dsn+"&fenced_tables=accounts")
		c, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		s, err := c.PrepareContext(ctx, q)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := c.ExecContext(ctx, "USE "+tc.to); err != nil {
			t.Fatal(err)
		}
		var got int64
		err = s.QueryRowContext(fencedsql.WithToken(ctx, 20), 1).Scan(&got)
		switch {
		case tc.want == 0 && !errors.Is(err, fencedsql.ErrUnsupported):
			t.Errorf("after USE %s (acc_v a view over accounts): %v (balance %d), want ErrUnsupported", tc.to, err, got)
		case tc.want != 0 && (err != nil || got != tc.want):
			t.Errorf("after USE %s (acc_v a table): balance %d, err %v; want %d, read from %s", tc.to, got, err, tc.want, tc.to)
		}
		s.Close()
		c.Close()
	}
}
