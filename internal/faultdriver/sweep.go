package faultdriver

// The checker. A trial resets the table, runs one caller operation with a Fault armed
// and reads the committed table and its tombstones (Env.Snapshot); reference runs
// without a fault give the states it may be compared with:
//
//   - In a caller's transaction (InTransaction: the operation, the caller's next write
//     Plan.Cont, COMMIT). If COMMIT succeeded, the table is exactly what the statements
//     that reported success leave (a failed operation leaves nothing: no stamped rows,
//     no half-done DELETE, no claim stamp; a successful DELETE leaves its tombstone),
//     and never after a kind that made the server roll the transaction back
//     (Plan.RolledBack). NotCommitted: the table is as before the transaction, and a
//     COMMIT whose reply was lost is never NotCommitted. Unknown: as before, or as the
//     successful statements leave it. A failed claim of an absent key may leave its
//     tombstone at the transaction's own token: that only raises the bar for tokens
//     already stale, so it is tolerated (OnlyNewerTombs).
//   - Outside a transaction (Autocommit; the wrapper's own transaction for a
//     two-statement DELETE): success means the table is as one run leaves it (no replay
//     by database/sql after an effect committed), NotCommitted as before, Unknown
//     either.
//
// Which trials run (the dialects' test files document the knobs, FENCEDSQL_SCHEDULES_*
// read by fencetest.ReadScheduleKnobs, and FENCEDSQL_LONG read by testdb.Long):
//
//   - The default (CI): trials drawn at random, trial i from seed+i (set-up, operation,
//     kind, position k among the statements of the operation's reference run), until
//     FENCEDSQL_SCHEDULES_ITERS trials ran or, when that is unset, DefaultBudget passed
//     since the test began. The trials share the pools, so a trial's positions depend
//     on the ones before it (a connection a fault closed is replaced, and the new one's
//     session check comes first): a failure of trial i prints the replay of the run up
//     to it, FENCEDSQL_SCHEDULES_SEED=<seed> FENCEDSQL_SCHEDULES_ITERS=<i+1>, and lists
//     the statements as they were sent.
//   - FENCEDSQL_LONG=1: the full sweep, every set-up × operation × kind × position
//     (every Plan.KStep-th position).

import (
	"cmp"
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// DefaultBudget bounds the default run of InTransaction and Autocommit (CI), counted
// from their start: the set-ups and reference runs included (the trial under way when
// it passes ends first; Plan.Budget sets another). With
// FENCEDSQL_SCHEDULES_ITERS set there is none.
const DefaultBudget = 5 * time.Second

// defaultIters is the default number of trials; DefaultBudget ends the run first.
const defaultIters = 100000

// CommonOps are the operations every dialect's sweep runs (with its own); #n is the
// trial's row n (Env.IDs): rows 1 to 4 exist, 7 and 9 do not.
var CommonOps = []Op{
	{Name: "delete", Query: "DELETE FROM accounts WHERE id = #1"},
	{Name: "delete2", Query: "DELETE FROM accounts WHERE id IN (#1, #2)"},
	{Name: "update", Query: "UPDATE accounts SET balance = balance + 1 WHERE id = #2"},
	{Name: "insert", Query: "INSERT INTO accounts (id, balance) VALUES (#7, 1)"},
	{Name: "claim", Query: "SELECT id, balance FROM accounts WHERE id = #2 FOR UPDATE", Read: true},
	{Name: "claimRange", Query: "SELECT id, (SELECT 1) AS one FROM accounts WHERE id IN (#1, #2) ORDER BY id LIMIT 2 FOR UPDATE", Read: true},
	{Name: "claimAbsent", Query: "SELECT id, balance FROM accounts WHERE id = #9 FOR UPDATE", Read: true},
}

// NextWrite is the caller's next write after the operation (Plan.Cont).
const NextWrite = "UPDATE accounts SET balance = balance + 1000 WHERE id = #3"

// Op is one caller operation: a statement run in a transaction (Exec, or Query with its
// rows read when Read) or alone.
type Op struct {
	Name  string
	Query string
	Read  bool
}

// Env is one set-up of a dialect's table, made by Plan.Open.
type Env struct {
	Driver *Driver // under Fenced: arms the trial's fault
	Fenced *sql.DB // the fenced pool the trials run on
	Reset  func(t *testing.T)
	// Snapshot returns the committed rows and tombstones, tombstones after " tomb" as
	// "[id tN]" with N relative to the trial, so that the trial's own token reads t20.
	Snapshot func(t *testing.T) string
	Token    func() uint64 // the trial's token
	// IDBase, when set, is what #n in an Op's text (or Plan.Cont) adds n to (IDs).
	IDBase func() int64
	// Last describes the trial that ran last (for Reset's messages).
	Last string
}

// Plan is one dialect's sweep.
type Plan struct {
	Setups []string                              // the set-ups, e.g. NoGuard and Guard
	Open   func(t *testing.T, setup string) *Env // opens one (once per test)
	Ops    []Op                                  // Autocommit runs those that are not Read
	Kinds  []string                              // the fault kinds
	Cont   string                                // the caller's next write in its transaction
	// Savepoint: the caller sets a SAVEPOINT before the operation and rolls back to it
	// after a failure (PostgreSQL, whose failed statement aborts the transaction).
	Savepoint bool
	// RolledBack are the kinds after which the server has rolled the transaction back
	// or lost it: its Commit must not succeed.
	RolledBack []string
	// KStep: the full sweep tries every KStep-th position (0 or 1: every one).
	KStep int
	// Budget bounds the default run instead of DefaultBudget (0: DefaultBudget).
	Budget time.Duration
}

type result struct {
	opErr, contErr, commitErr error
	n                         int
	log                       []string
	snap                      string
}

// idRef is #n in an operation's text: the trial's row n.
var idRef = regexp.MustCompile(`#([0-9])`)

// IDs replaces each #n in q with the id of the trial's row n: IDBase()+n.
func (e *Env) IDs(q string) string {
	var base int64
	if e.IDBase != nil {
		base = e.IDBase()
	}
	return idRef.ReplaceAllStringFunc(q, func(m string) string { return fmt.Sprint(base + int64(m[1]-'0')) })
}

// disarm disarms the driver and copies f's count and lines into r.
func (e *Env) disarm(f *Fault, r *result) {
	e.Driver.Arm(nil)
	if f != nil {
		r.n, r.log = f.Sent()
	}
}

func runOp(ctx context.Context, tx *sql.Tx, op Op, q string) error {
	return fencetest.RunText(ctx, tx, op.Read, q)
}

// txTrial resets the table, then in one fenced transaction under the trial's token runs
// op (when withOp), the caller's next write (when withCont) and COMMIT, with f armed
// from the operation on.
func (p *Plan) txTrial(t *testing.T, e *Env, op Op, withOp, withCont bool, f *Fault) result {
	t.Helper()
	e.Reset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	tx, err := e.Fenced.BeginTx(fencedsql.WithToken(ctx, e.Token()), nil)
	if err != nil {
		t.Fatal(err)
	}
	var r result
	if f != nil {
		e.Driver.Arm(f)
	}
	if withOp {
		r.opErr = p.runInTx(ctx, tx, op, e.IDs(op.Query))
	}
	if withCont {
		_, r.contErr = tx.ExecContext(ctx, e.IDs(p.Cont))
	}
	r.commitErr = tx.Commit()
	e.disarm(f, &r)
	r.snap = e.Snapshot(t)
	return r
}

func (p *Plan) runInTx(ctx context.Context, tx *sql.Tx, op Op, q string) error {
	if !p.Savepoint {
		return runOp(ctx, tx, op, q)
	}
	if _, err := tx.ExecContext(ctx, "SAVEPOINT faultdriver"); err != nil {
		return fmt.Errorf("SAVEPOINT: %w", err)
	}
	err := runOp(ctx, tx, op, q)
	if err != nil {
		if _, rerr := tx.ExecContext(ctx, "ROLLBACK TO SAVEPOINT faultdriver"); rerr != nil {
			err = fmt.Errorf("%w; ROLLBACK TO SAVEPOINT: %v", err, rerr)
		}
	}
	return err
}

// autoTrial resets the table and runs op outside a transaction under the trial's token
// (the wrapper's own transaction for a two-statement DELETE), with f armed.
func autoTrial(t *testing.T, e *Env, op Op, f *Fault) result {
	t.Helper()
	e.Reset(t)
	ctx, cancel := context.WithTimeout(context.Background(), 15*time.Second)
	defer cancel()
	var r result
	e.Driver.Arm(f)
	_, r.opErr = e.Fenced.ExecContext(fencedsql.WithToken(ctx, e.Token()), e.IDs(op.Query))
	e.disarm(f, &r)
	r.snap = e.Snapshot(t)
	return r
}

// reference holds an operation's runs without a fault on one set-up. The runs of the
// operation alone and of the next write alone (in a transaction) are made when a trial
// first needs them.
type reference struct {
	s0     string   // before
	both   string   // the operation and the next write (autocommit: the operation)
	n      int      // statements counted in the run of both
	log    []string // and their lines
	partly func(withOp, withCont bool) string
	cache  map[bool]string // partly's results by withOp
}

func (ref *reference) want(opOK, contOK bool) string {
	switch {
	case opOK && contOK:
		return ref.both
	case !opOK && !contOK:
		return ref.s0
	}
	s, ok := ref.cache[opOK]
	if !ok {
		s = ref.partly(opOK, contOK)
		ref.cache[opOK] = s
	}
	return s
}

func (p *Plan) reference(t *testing.T, e *Env, op Op, auto bool) *reference {
	t.Helper()
	e.Reset(t)
	ref := &reference{s0: e.Snapshot(t), cache: map[bool]string{}}
	var r result
	if auto {
		r = autoTrial(t, e, op, &Fault{})
	} else {
		r = p.txTrial(t, e, op, true, true, &Fault{})
		ref.partly = func(withOp, withCont bool) string {
			r := p.txTrial(t, e, op, withOp, withCont, nil)
			if r.opErr != nil || r.contErr != nil || r.commitErr != nil {
				t.Fatalf("%s: reference run (operation %v, next write %v) failed: op %v, next write %v, commit %v", op.Name, withOp, withCont, r.opErr, r.contErr, r.commitErr)
			}
			return r.snap
		}
	}
	if r.opErr != nil || r.contErr != nil || r.commitErr != nil {
		t.Fatalf("%s: reference run failed: op %v, next write %v, commit %v\n%s", op.Name, r.opErr, r.contErr, r.commitErr, strings.Join(r.log, "\n"))
	}
	ref.both, ref.n, ref.log = r.snap, r.n, r.log
	return ref
}

// positions returns the last position a fault is tried at: after the reference's last
// statement too in autocommit (a replay by database/sql would show there).
func (ref *reference) positions(auto bool) int {
	if auto {
		return ref.n + 1
	}
	return ref.n
}

// check returns what the trial r, with f at its position, violates.
func (p *Plan) check(ref *reference, f *Fault, r result, auto bool) []string {
	got := r.snap
	if auto {
		switch {
		case r.opErr == nil:
			if got != ref.both {
				return []string{"success reported, table not as one run leaves it"}
			}
		case fencedsql.CommitOutcome(r.opErr) == fencedsql.NotCommitted:
			if got != ref.s0 {
				return []string{"NotCommitted reported, table changed"}
			}
		default:
			if got != ref.s0 && got != ref.both {
				return []string{"Unknown reported, table neither before nor after"}
			}
		}
		return nil
	}
	var bad []string
	w := func() string { return ref.want(r.opErr == nil, r.contErr == nil) }
	if r.commitErr == nil {
		for _, k := range p.RolledBack {
			if k == f.Kind {
				return []string{"Commit reported success after the server rolled the transaction back"}
			}
		}
		if w := w(); got != w && !OnlyNewerTombs(got, w) {
			bad = append(bad, "committed state differs from a run of the statements that reported success; want "+w)
		}
		return bad
	}
	switch fencedsql.CommitOutcome(r.commitErr) {
	case fencedsql.NotCommitted:
		if got != ref.s0 {
			bad = append(bad, "Commit NotCommitted but the table changed; want "+ref.s0)
		}
		if f.Kind == KindLostAfter && faultedCommit(r.log) {
			bad = append(bad, "a COMMIT whose reply was lost reported NotCommitted")
		}
	case fencedsql.Unknown:
		if w := w(); got != ref.s0 && got != w && !OnlyNewerTombs(got, w) {
			bad = append(bad, "Commit outcome Unknown, but the table is neither as before nor as the successful statements leave it")
		}
	}
	return bad
}

func faultedCommit(log []string) bool {
	for _, l := range log {
		if strings.Contains(l, "<==") && strings.Contains(l, "COMMIT") {
			return true
		}
	}
	return false
}

// OnlyNewerTombs reports whether got and want differ only by tombstones of token t20
// (the trial's own) that got has more (got has every tombstone want has): a failed claim of an absent key that left its
// record raises the bar for tokens below the trial's only, which are stale already.
func OnlyNewerTombs(got, want string) bool {
	gi, wi := strings.LastIndex(got, " tomb"), strings.LastIndex(want, " tomb")
	if gi < 0 || wi < 0 || got[:gi] != want[:wi] {
		return false
	}
	g, w := got[gi+5:], want[wi+5:]
	for _, e := range strings.SplitAfter(w, "]") {
		if !strings.Contains(g, e) {
			return false // a tombstone want has is missing
		}
		g = strings.Replace(g, e, "", 1)
	}
	for _, e := range strings.SplitAfter(g, "]") {
		if e != "" && !strings.HasSuffix(e, " t20]") {
			return false
		}
	}
	return true
}

// trial runs one fault and returns its violations, each with the trial described.
func (p *Plan) trial(t *testing.T, e *Env, op Op, ref *reference, auto bool, kind string, k int) (fired bool, bad []string) {
	t.Helper()
	f := &Fault{K: k, Kind: kind}
	e.Last = fmt.Sprintf("%s %s at %d", op.Name, kind, k)
	var r result
	if auto {
		r = autoTrial(t, e, op, f)
	} else {
		r = p.txTrial(t, e, op, true, true, f)
	}
	e.Last += fmt.Sprintf(": op %v; next write %v; commit %v; statements %q", r.opErr, r.contErr, r.commitErr, r.log)
	if !f.Fired() {
		return false, nil
	}
	at := "after the last"
	if k <= len(ref.log) {
		at = ref.log[k-1]
	}
	where := fmt.Sprintf("%s: %s at statement %d of %d (%s)", op.Name, kind, k, ref.n, at)
	ctx := fmt.Sprintf("op: %v (outcome %v)\nnext write: %v\ncommit: %v (outcome %v)\nstatements:\n  %s\ngot  %s\nboth %s\ns0   %s",
		r.opErr, fencedsql.CommitOutcome(r.opErr), r.contErr, r.commitErr, fencedsql.CommitOutcome(r.commitErr),
		strings.Join(r.log, "\n  "), r.snap, ref.both, ref.s0)
	for _, v := range p.check(ref, f, r, auto) {
		bad = append(bad, fmt.Sprintf("%s: %s\n%s", where, v, ctx))
	}
	return true, bad
}

// InTransaction runs the sweep in a caller's transaction (the package doc, sweep.go's
// leading comment).
func InTransaction(t *testing.T, p Plan) { p.run(t, false) }

// Autocommit runs the sweep on the Ops that are not Read, each outside a transaction.
func Autocommit(t *testing.T, p Plan) { p.run(t, true) }

func (p *Plan) run(t *testing.T, auto bool) {
	t.Helper()
	ops := p.Ops
	if auto {
		ops = nil
		for _, op := range p.Ops {
			if !op.Read {
				ops = append(ops, op)
			}
		}
	}
	if testdb.Long() {
		p.full(t, ops, auto)
		return
	}
	p.sample(t, ops, auto)
}

// full is the long form: every set-up × operation × kind × position.
func (p *Plan) full(t *testing.T, ops []Op, auto bool) {
	step := max(p.KStep, 1)
	t.Logf("FENCEDSQL_LONG: every position (step %d) × %d kinds × %d operations × %d set-ups", step, len(p.Kinds), len(ops), len(p.Setups))
	for _, setup := range p.Setups {
		t.Run(setup, func(t *testing.T) {
			e := p.Open(t, setup)
			for _, op := range ops {
				t.Run(op.Name, func(t *testing.T) {
					ref := p.reference(t, e, op, auto)
					t.Logf("%s: %d statements: %q", op.Name, ref.n, ref.log)
					for _, kind := range p.Kinds {
						for k := 1; k <= ref.positions(auto); k += step {
							_, bad := p.trial(t, e, op, ref, auto, kind, k)
							for _, b := range bad {
								t.Error(b)
							}
						}
					}
				})
			}
		})
	}
}

// sample is the default: trials drawn from the knobs' seed, within DefaultBudget.
func (p *Plan) sample(t *testing.T, ops []Op, auto bool) {
	start := time.Now()
	knobs := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), defaultIters)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d; trial i draws from seed+i; FENCEDSQL_LONG=1 runs every position)", knobs.Seed, knobs.Seed)
	envs := map[string]*Env{}
	type refKey struct{ setup, op string }
	refs := map[refKey]*reference{}
	ran, fired := 0, 0
	for i := 0; i < knobs.Iters; i++ {
		if !knobs.ItersSet && time.Since(start) > cmp.Or(p.Budget, DefaultBudget) {
			break
		}
		seed := knobs.Seed + int64(i)
		rng := rand.New(rand.NewSource(seed))
		setup := p.Setups[rng.Intn(len(p.Setups))]
		op := ops[rng.Intn(len(ops))]
		kind := p.Kinds[rng.Intn(len(p.Kinds))]
		e := envs[setup]
		if e == nil {
			e = p.Open(t, setup)
			envs[setup] = e
		}
		ref, ok := refs[refKey{setup, op.Name}]
		if !ok {
			ref = p.reference(t, e, op, auto)
			refs[refKey{setup, op.Name}] = ref
		}
		k := 1 + rng.Intn(ref.positions(auto))
		ok, bad := p.trial(t, e, op, ref, auto, kind, k)
		ran++
		if ok {
			fired++
		}
		replay := fmt.Sprintf("trial %d, %s (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=%d)", i, setup, knobs.Seed, i+1)
		for _, b := range bad {
			t.Errorf("%s: %s", replay, b)
		}
		if knobs.ShowLog {
			t.Logf("%s: %s", replay, e.Last)
		}
	}
	t.Logf("%d trials (%d with the fault injected) in %v; %d operation references", ran, fired, time.Since(start).Round(time.Millisecond), len(refs))
}

// OpsNamed returns the operations of ops with the given names, in that order; a name
// not among them fails the test.
func OpsNamed(t testing.TB, ops []Op, names ...string) []Op {
	t.Helper()
	var out []Op
	for _, n := range names {
		i := slices.IndexFunc(ops, func(op Op) bool { return op.Name == n })
		if i < 0 {
			t.Fatalf("faultdriver: no operation %q", n)
		}
		out = append(out, ops[i])
	}
	return out
}

// Rows formats each row of query on db with format, which takes one integer a column
// (a NULL reads 0): the pieces of an Env.Snapshot.
func Rows(t testing.TB, db *sql.DB, format, query string, args ...any) string {
	t.Helper()
	rows, err := db.Query(query, args...)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		t.Fatal(err)
	}
	var b strings.Builder
	for rows.Next() {
		vals := make([]sql.NullInt64, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			t.Fatal(err)
		}
		ints := make([]any, len(cols))
		for i, v := range vals {
			ints[i] = v.Int64
		}
		fmt.Fprintf(&b, format, ints...)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	return b.String()
}
