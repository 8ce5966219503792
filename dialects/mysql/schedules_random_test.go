package mysql_test

// Randomized concurrent schedules on MariaDB (InnoDB): "deleted stays deleted" and
// "tokens never go back" (G9, G14) under concurrency (kept from red-team rt51b; no
// finding). A generator of 2–4 concurrent transactions (fenced-pool and
// plain-connection ones, plain XA branches) over 3 fresh keys per round, each key
// absent, present or deleted (a tombstone) under a seed token, each transaction in a
// random isolation level (READ UNCOMMITTED, READ COMMITTED, REPEATABLE READ,
// SERIALIZABLE) with 1–3 operations after random pauses (0–25 ms), 1 in 8 rolled back,
// half of the fenced ones going on after a refusal and committing the rest:
//
//   - fenced pool: INSERT; UPDATE; key-changing UPDATE; DELETE; claim SELECT … FOR
//     UPDATE of a present or absent key; INSERT … ON DUPLICATE KEY UPDATE, also one that
//     changes the key; multi-row INSERT; DELETE + re-INSERT; multi-row UPDATE; IN-list
//     claim; SAVEPOINT + DELETE + ROLLBACK TO SAVEPOINT;
//   - plain connection (explicit tokens, the database guards only): INSERT, INSERT
//     IGNORE, multi-row INSERT, REPLACE, ODKU setting the token, UPDATE setting the
//     token, key-changing UPDATE;
//   - plain XA branches: XA START … XA END, XA PREPARE, pause, XA COMMIT/ROLLBACK.
//
// TestSchedulesRandom runs on acc (BIGINT key), TestSchedulesRandomPair on pair, whose
// string key part is spelled 'a', 'A', 'a ', 'A  ' at random (one key under the PAD
// SPACE, case-insensitive collation).
//
// Invariant (checked per key, in the order in which committed transactions touched
// the key): every transaction carries one token; a transaction "touches" a key when
// one of its statements changed it (INSERT, UPDATE, key-changing UPDATE on both keys,
// DELETE, upsert, REPLACE, INSERT IGNORE that inserted) or claimed it (SELECT … FOR
// UPDATE with no error, present or absent). Before committing, each transaction
// appends (token, op) to an unguarded ledger row of every key it touched with an
// UPDATE that holds the ledger row's X lock until commit, so the ledger's order is the
// commit order of the transactions touching that key (strict 2PL on the ledger row).
// The invariant: along a key's ledger, tokens never decrease (a committed touch under
// token t after a committed touch under t' > t is a stale write that got through),
// except that a claim of an absent key may be serialized before a concurrent newer
// write (READ COMMITTED has no gap lock: the serial order claim → write explains it);
// and the final row (or its absence) agrees with the last ledger entry (a row present
// after a DELETE, or with another token than the last write's, or below a later
// absent claim's, is an effect the ledger cannot explain). Errors of no expected kind
// (typed refusals, deadlocks, lock wait timeouts, duplicate keys, the guards' SIGNALs
// on a plain connection) fail the test.
//
// Knobs (environment; the defaults fit CI, at most about 15 s a test):
//
//	FENCEDSQL_SCHEDULES_SEED=n          replay: round i uses seed n+i (the default is
//	                                    time-based; each failure prints its round's
//	                                    seed, replayed alone with ITERS=1)
//	FENCEDSQL_SCHEDULES_ITERS=n         rounds to run (default 200, and at most 10 s of
//	                                    them; with ITERS set, no time limit)
//	FENCEDSQL_SCHEDULES_ISO=RC|RR|SER|RU every transaction at that isolation level
//	FENCEDSQL_SCHEDULES_MUTANT=1        the checker's own sanity check: plain DELETEs
//	                                    (which carry no token: their tombstone records
//	                                    the row's) counted as touches under the
//	                                    transaction's token, so the test must FAIL
//
// A long run: FENCEDSQL_SCHEDULES_ITERS=2000 go test -timeout 0 -count=1 -run
// 'TestSchedulesRandom' ./dialects/postgres/ ./dialects/mysql/

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"sort"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/go-sql-driver/mysql"
)

type schedOp struct {
	name   string
	k1     int64
	k2     int64
	v1, v2 string // pair mode: the spelling of the string key part
}

// schedK is a key argument: k in acc mode, (v, k) in pair mode.
type schedK struct {
	k int64
	v string
}

var schedVariants = []string{"a", "A", "a ", "A  "}

type schedTx struct {
	kind  string // fenced, plain, xa
	tok   uint64
	iso   sql.IsolationLevel
	ops   []schedOp
	pause []int // ms before each op
	end   string
	cont  bool // go on after a refusal (fenced only)
}

func (x schedTx) String() string {
	var b strings.Builder
	fmt.Fprintf(&b, "%s tok=%d iso=%v end=%s cont=%v:", x.kind, x.tok, x.iso, x.end, x.cont)
	for i, o := range x.ops {
		fmt.Fprintf(&b, " [%dms]%s(%d%q,%d%q)", x.pause[i], o.name, o.k1, o.v1, o.k2, o.v2)
	}
	return b.String()
}

var schedFencedOps = []string{"ins", "upd", "chg", "del", "claim", "odku", "multi", "sp", "delins", "claim", "del", "odkuchg", "mclaim", "mupd"}
var schedPlainOps = []string{"pins", "pupd", "prep", "podku", "pchg", "claim", "pign", "pmulti"}

// schedMaxPause is the longest pause before an op, in ms.
const schedMaxPause = 25

// schedGen draws a round's transactions on keys base..base+nkeys-1, each at a level
// of isos; plainOps are the plain connections' operations.
func schedGen(r *rand.Rand, base int64, nkeys int, isos []sql.IsolationLevel, plainOps []string) []schedTx {
	n := 2 + r.Intn(3)
	toks := r.Perm(6)
	var out []schedTx
	for i := 0; i < n; i++ {
		x := schedTx{kind: "fenced", tok: uint64(toks[i] + 2), iso: isos[r.Intn(len(isos))], end: "commit"}
		switch p := r.Intn(10); {
		case p == 0:
			x.kind = "xa"
		case p <= 2:
			x.kind = "plain"
		}
		if r.Intn(8) == 0 {
			x.end = "rollback"
		}
		x.cont = r.Intn(2) == 0
		nops := 1 + r.Intn(3)
		for j := 0; j < nops; j++ {
			names := schedFencedOps
			if x.kind != "fenced" {
				names = plainOps
			}
			o := schedOp{name: names[r.Intn(len(names))], k1: base + int64(r.Intn(nkeys)), k2: base + int64(r.Intn(nkeys)),
				v1: schedVariants[r.Intn(len(schedVariants))], v2: schedVariants[r.Intn(len(schedVariants))]}
			x.ops = append(x.ops, o)
			x.pause = append(x.pause, r.Intn(schedMaxPause))
		}
		out = append(out, x)
	}
	return out
}

type schedEnv struct {
	t       *testing.T
	fenced  *sql.DB
	plain   *sql.DB
	mu      sync.Mutex
	odd     []string // unexpected errors
	pair    bool
	commits int
}

// execer is *sql.Tx or *sql.Conn.
type schedExecer interface {
	ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error)
	QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error)
}

func schedAffected(res sql.Result, err error) (int64, error) {
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

type schedPairExec struct {
	x    schedExecer
	pair bool
}

var schedPairSQL = strings.NewReplacer(
	"FROM acc", "FROM pair", "INTO acc", "INTO pair", "UPDATE acc", "UPDATE pair",
	"SELECT id", "SELECT n",
	"WHERE id = ?", "WHERE `Region` = ? AND n = ?",
	"SET id = ?", "SET `Region` = ?, n = ?", "UPDATE id = ?", "UPDATE `Region` = ?, n = ?",
	"WHERE id IN (?, ?)", "WHERE (`Region`, n) IN ((?, ?), (?, ?))",
	"(id, balance", "(`Region`, n, balance",
	"VALUES (?, ", "VALUES (?, ?, ", "), (?, ", "), (?, ?, ")

func (p schedPairExec) args(args []any) (out []any) {
	for _, a := range args {
		if k, ok := a.(schedK); ok {
			if p.pair {
				out = append(out, k.v, k.k)
			} else {
				out = append(out, k.k)
			}
			continue
		}
		out = append(out, a)
	}
	return out
}

func (p schedPairExec) q(q string) string {
	if p.pair {
		return schedPairSQL.Replace(q)
	}
	return q
}

func (p schedPairExec) ExecContext(ctx context.Context, q string, args ...any) (sql.Result, error) {
	return p.x.ExecContext(ctx, p.q(q), p.args(args)...)
}

func (p schedPairExec) QueryContext(ctx context.Context, q string, args ...any) (*sql.Rows, error) {
	return p.x.QueryContext(ctx, p.q(q), p.args(args)...)
}

// runOp runs one op and returns the keys it touched.
func (e *schedEnv) runOp(ctx context.Context, x0 schedExecer, tok uint64, o schedOp) ([]int64, error) {
	x := schedPairExec{x: x0, pair: e.pair}
	k, k2 := o.k1, o.k2
	if k == k2 {
		k2 = k + 1000
	}
	K, K2 := schedK{k, o.v1}, schedK{k2, o.v2}
	one := func(q string, args ...any) ([]int64, error) {
		n, err := schedAffected(x.ExecContext(ctx, q, args...))
		if err != nil || n == 0 {
			return nil, err
		}
		return []int64{k}, nil
	}
	two := func(q string, args ...any) ([]int64, error) { // a statement on both keys
		n, err := schedAffected(x.ExecContext(ctx, q, args...))
		if err != nil || n == 0 {
			return nil, err
		}
		return []int64{k, k2}, nil
	}
	switch o.name {
	case "ins":
		return one("INSERT INTO acc (id, balance) VALUES (?, 1)", K)
	case "upd":
		return one("UPDATE acc SET balance = balance + 1 WHERE id = ?", K)
	case "del":
		return one("DELETE FROM acc WHERE id = ?", K)
	case "odku":
		return one("INSERT INTO acc (id, balance) VALUES (?, 1) ON DUPLICATE KEY UPDATE balance = balance + 1", K)
	case "ign":
		return one("INSERT IGNORE INTO acc (id, balance) VALUES (?, 1)", K)
	case "rep":
		return one("REPLACE INTO acc (id, balance) VALUES (?, 1)", K)
	case "chg":
		return two("UPDATE acc SET id = ? WHERE id = ?", K2, K)
	case "multi":
		return two("INSERT INTO acc (id, balance) VALUES (?, 1), (?, 2)", K, K2)
	case "delins":
		if _, err := x.ExecContext(ctx, "DELETE FROM acc WHERE id = ?", K); err != nil {
			return nil, err
		}
		return one("INSERT INTO acc (id, balance) VALUES (?, 7)", K)
	case "claim":
		rows, err := x.QueryContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", K)
		if err != nil {
			return nil, err
		}
		n := 0
		for rows.Next() {
			n++
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return nil, err
		}
		if err := rows.Close(); err != nil {
			return nil, err
		}
		if n == 0 {
			return []int64{-k}, nil // absent: claimabs
		}
		return []int64{k}, nil
	case "odkuchg":
		n, err := schedAffected(x.ExecContext(ctx, "INSERT INTO acc (id, balance) VALUES (?, 1) ON DUPLICATE KEY UPDATE id = ?", K, K2))
		if err != nil || n == 0 {
			return nil, err
		}
		if n == 1 {
			return []int64{k}, nil
		}
		return []int64{k, k2}, nil
	case "mclaim", "mupd":
		if o.name == "mupd" {
			if _, err := x.ExecContext(ctx, "UPDATE acc SET balance = balance + 1 WHERE id IN (?, ?)", K, K2); err != nil {
				return nil, err
			}
		}
		q := "SELECT id FROM acc WHERE id IN (?, ?) FOR UPDATE"
		if o.name == "mupd" {
			q = "SELECT id FROM acc WHERE id IN (?, ?) AND fence_token = " + strconv.FormatUint(tok, 10)
		}
		rows, err := x.QueryContext(ctx, q, K, K2)
		if err != nil {
			return nil, err
		}
		var got []int64
		for rows.Next() {
			var id any
			if err := rows.Scan(&id); err != nil {
				rows.Close()
				return nil, err
			}
			switch v := id.(type) {
			case int64:
				got = append(got, v)
			case []byte:
				n, _ := strconv.ParseInt(string(v), 10, 64)
				got = append(got, n)
			}
		}
		if err := rows.Err(); err != nil {
			rows.Close()
			return nil, err
		}
		return got, rows.Close()
	case "sp":
		if _, err := x.ExecContext(ctx, "SAVEPOINT fenced_sp"); err != nil {
			return nil, err
		}
		if _, err := x.ExecContext(ctx, "DELETE FROM acc WHERE id = ?", K); err != nil {
			return nil, err
		}
		_, err := x.ExecContext(ctx, "ROLLBACK TO SAVEPOINT fenced_sp")
		return nil, err
	// plain connection, explicit token
	case "pins":
		return one("INSERT INTO acc (id, balance, fence_token, version) VALUES (?, 1, ?, 1)", K, tok)
	case "pdel":
		return one("DELETE FROM acc WHERE id = ?", K)
	case "pign":
		return one("INSERT IGNORE INTO acc (id, balance, fence_token, version) VALUES (?, 1, ?, 1)", K, tok)
	case "pmulti":
		return two("INSERT INTO acc (id, balance, fence_token, version) VALUES (?, 1, ?, 1), (?, 2, ?, 1)", K, tok, K2, tok)
	case "pupd":
		return one("UPDATE acc SET balance = balance + 1, fence_token = ?, version = version + 1 WHERE id = ?", tok, K)
	case "prep":
		return one("REPLACE INTO acc (id, balance, fence_token, version) VALUES (?, 1, ?, 1)", K, tok)
	case "podku":
		return one("INSERT INTO acc (id, balance, fence_token, version) VALUES (?, 1, ?, 1) ON DUPLICATE KEY UPDATE balance = balance + 1, fence_token = VALUES(fence_token), version = version + 1", K, tok)
	case "pchg":
		return two("UPDATE acc SET id = ?, fence_token = ?, version = version + 1 WHERE id = ?", K2, tok, K)
	}
	return nil, fmt.Errorf("unknown op %s", o.name)
}

// expected reports whether err is an expected refusal or abort.
func schedExpected(err error) bool {
	if err == nil || errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrDuplicate) ||
		errors.Is(err, fencedsql.ErrClaimConflict) || errors.Is(err, fencedsql.ErrNotCommitted) || errors.Is(err, sql.ErrTxDone) {
		return true
	}
	var me *mysql.MySQLError
	if errors.As(err, &me) {
		switch me.Number {
		case 1213, 1205, 1062:
			return true
		}
	}
	s := err.Error()
	return strings.Contains(s, "Deadlock") || strings.Contains(s, "Lock wait timeout")
}

func (e *schedEnv) note(x schedTx, what string, err error) {
	if schedExpected(err) {
		return
	}
	var pe *mysql.MySQLError
	if x.kind != "fenced" && errors.As(err, &pe) && (pe.Number == 1644 || pe.Number == 1048) {
		return // the guards' refusals on a plain connection
	}
	var me *mysql.MySQLError
	kind := fmt.Sprintf("%T", err)
	if errors.As(err, &me) {
		kind += fmt.Sprintf(" (raw %d %s)", me.Number, me.SQLState)
	}
	e.mu.Lock()
	e.odd = append(e.odd, fmt.Sprintf("%s: %s: %s: %v", x, what, kind, err))
	e.mu.Unlock()
}

func schedIsoName(l sql.IsolationLevel) string {
	switch l {
	case sql.LevelReadCommitted:
		return "READ COMMITTED"
	case sql.LevelSerializable:
		return "SERIALIZABLE"
	case sql.LevelReadUncommitted:
		return "READ UNCOMMITTED"
	}
	return "REPEATABLE READ"
}

func (e *schedEnv) ledger(ctx context.Context, x schedExecer, tok uint64, touched map[int64]string) error {
	keys := make([]int64, 0, len(touched))
	for k := range touched {
		keys = append(keys, k)
	}
	sort.Slice(keys, func(i, j int) bool { return keys[i] < keys[j] })
	for _, k := range keys {
		if _, err := x.ExecContext(ctx, "INSERT INTO sched_ledger (k, maxtok, viol, log) VALUES (?, 0, 0, '') ON DUPLICATE KEY UPDATE k = k", k); err != nil {
			return err
		}
		if _, err := x.ExecContext(ctx, "UPDATE sched_ledger SET viol = viol + (? < maxtok AND ? <> 'claimabs'), log = CONCAT(log, ?), maxtok = GREATEST(maxtok, ?), last_op = ?, last_tok = ? WHERE k = ?",
			tok, touched[k], fmt.Sprintf(" %s@%d", touched[k], tok), tok, touched[k], tok, k); err != nil {
			return err
		}
	}
	return nil
}

func (e *schedEnv) run(x schedTx, xid string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	touched := map[int64]string{}
	record := func(o schedOp, keys []int64) {
		for i, k := range keys {
			name := o.name
			if k < 0 {
				k, name = -k, "claimabs"
			}
			if o.name == "mclaim" || o.name == "mupd" {
				name = o.name // present rows only
			}
			if o.name == "claim" && x.kind != "fenced" {
				continue // a plain SELECT … FOR UPDATE carries no token: it only locks
			}
			if (o.name == "chg" || o.name == "pchg" || o.name == "odkuchg" && len(keys) == 2) && i == 0 {
				name = "chgfrom" // the old key: deleted
			}
			touched[k] = name
		}
	}
	switch x.kind {
	case "fenced", "plain":
		db, opCtx := e.plain, ctx
		if x.kind == "fenced" {
			db, opCtx = e.fenced, fencedsql.WithToken(ctx, x.tok)
		}
		tx, err := db.BeginTx(opCtx, &sql.TxOptions{Isolation: x.iso})
		if err != nil {
			e.note(x, "begin", err)
			return
		}
		defer tx.Rollback() //nolint:errcheck
		for i, o := range x.ops {
			time.Sleep(time.Duration(x.pause[i]) * time.Millisecond)
			keys, err := e.runOp(opCtx, tx, x.tok, o)
			if err != nil {
				e.note(x, o.name, err)
				if x.kind == "fenced" && x.cont && (errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrDuplicate) || errors.Is(err, fencedsql.ErrClaimConflict)) {
					continue // an application that goes on after a refusal and commits the rest
				}
				return
			}
			record(o, keys)
		}
		if x.end == "rollback" {
			return
		}
		if err := e.ledger(opCtx, tx, x.tok, touched); err != nil {
			e.note(x, "ledger", err)
			return
		}
		if err := tx.Commit(); err != nil {
			e.note(x, "commit", err)
		} else {
			e.mu.Lock()
			e.commits++
			e.mu.Unlock()
		}
	case "xa":
		c, err := e.plain.Conn(ctx)
		if err != nil {
			e.note(x, "conn", err)
			return
		}
		defer c.Close()
		if _, err := c.ExecContext(ctx, "SET SESSION TRANSACTION ISOLATION LEVEL "+schedIsoName(x.iso)); err != nil {
			e.note(x, "iso", err)
			return
		}
		if _, err := c.ExecContext(ctx, "XA START '"+xid+"'"); err != nil {
			e.note(x, "xa start", err)
			return
		}
		fail := func() {
			c.ExecContext(context.Background(), "XA END '"+xid+"'")      //nolint:errcheck
			c.ExecContext(context.Background(), "XA ROLLBACK '"+xid+"'") //nolint:errcheck
		}
		for i, o := range x.ops {
			time.Sleep(time.Duration(x.pause[i]) * time.Millisecond)
			keys, err := e.runOp(ctx, c, x.tok, o)
			if err != nil {
				e.note(x, o.name, err)
				fail()
				return
			}
			record(o, keys)
		}
		if err := e.ledger(ctx, c, x.tok, touched); err != nil {
			e.note(x, "ledger", err)
			fail()
			return
		}
		for _, q := range []string{"XA END '" + xid + "'", "XA PREPARE '" + xid + "'"} {
			if _, err := c.ExecContext(ctx, q); err != nil {
				e.note(x, q, err)
				fail()
				return
			}
		}
		time.Sleep(30 * time.Millisecond)
		end := "XA COMMIT '" + xid + "'"
		if x.end == "rollback" {
			end = "XA ROLLBACK '" + xid + "'"
		}
		if _, err := c.ExecContext(context.Background(), end); err != nil {
			e.note(x, end, err)
		}
	}
}

// TestSchedulesRandom runs randomized concurrent schedules on acc and checks that
// deleted stays deleted and tokens never go back (the file's leading comment; knobs
// FENCEDSQL_SCHEDULES_*).
func TestSchedulesRandom(t *testing.T) { schedRun(t, false) }

// TestSchedulesRandomPair is TestSchedulesRandom on pair, its string key part spelled
// with random case and trailing spaces.
func TestSchedulesRandomPair(t *testing.T) { schedRun(t, true) }

// schedKnobs are the FENCEDSQL_SCHEDULES_* variables (the file's leading comment).
type schedKnobs struct {
	seed     int64
	iters    int
	itersSet bool
	isos     []sql.IsolationLevel
	mutant   bool
}

func schedKnobsFromEnv(t *testing.T, defaultIters int) schedKnobs {
	t.Helper()
	env := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), defaultIters)
	k := schedKnobs{seed: env.Seed, iters: env.Iters, itersSet: env.ItersSet,
		isos: []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable, sql.LevelReadUncommitted}}
	if l, ok := fencetest.ReadScheduleIso(t, map[string]sql.IsolationLevel{"RC": sql.LevelReadCommitted, "RR": sql.LevelRepeatableRead,
		"SER": sql.LevelSerializable, "RU": sql.LevelReadUncommitted}); ok {
		k.isos = []sql.IsolationLevel{l}
	}
	k.mutant = os.Getenv("FENCEDSQL_SCHEDULES_MUTANT") == "1"
	return k
}

// schedDefaultBudget bounds the default run's time (CI); with ITERS set there is none.
const schedDefaultBudget = 10 * time.Second

func schedRun(t *testing.T, pair bool) {
	k := schedKnobsFromEnv(t, 200)
	dsn, admin, _ := absentMy(t)
	testdb.Exec(t, admin, "CREATE TABLE sched_ledger (k BIGINT PRIMARY KEY, maxtok BIGINT NOT NULL, viol INT NOT NULL, log TEXT NOT NULL, last_op VARCHAR(16), last_tok BIGINT) ENGINE=InnoDB")
	e := &schedEnv{t: t,
		fenced: schedOpen(t, "fenced-mysql", fencetest.WithParam(fencetest.WithParam(dsn, "fenced_tables=acc,pair"), "innodb_lock_wait_timeout=2")),
		plain:  schedOpen(t, "mysql", fencetest.WithParam(dsn, "innodb_lock_wait_timeout=2")),
		pair:   pair,
	}
	plainOps := schedPlainOps
	if k.mutant {
		// The checker's sanity check: a plain DELETE carries no token (its tombstone
		// records the row's), so counting it as a touch under the transaction's token
		// must show up as a violation when an older plain INSERT follows.
		plainOps = append(append([]string(nil), schedPlainOps...), "pdel", "pdel", "pins")
	}
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d), %d rounds", k.seed, k.seed, k.iters)
	start := time.Now()
	defer func() {
		t.Logf("%d commits in %v", e.commits, time.Since(start).Round(time.Millisecond))
		cov := map[string]int{}
		rows, err := admin.Query("SELECT log FROM sched_ledger")
		if err != nil {
			return
		}
		defer rows.Close()
		for rows.Next() {
			var l string
			rows.Scan(&l) //nolint:errcheck
			for _, f := range strings.Fields(l) {
				cov[strings.SplitN(f, "@", 2)[0]]++
			}
		}
		t.Logf("committed touches by op: %v", cov)
	}()
	e.commits = schedRounds(t, k, admin, e.fenced, pair, plainOps, schedDefaultBudget, nil, func(_ *rand.Rand, txs []schedTx) []schedWorker {
		ws := make([]schedWorker, len(txs))
		for i := range ws {
			ws[i].env = &schedEnv{t: t, fenced: e.fenced, plain: e.plain, pair: pair}
		}
		return ws
	})
}

// schedWorker is the environment (pools) a round's transaction runs in, and its label
// in the log ("" for none).
type schedWorker struct {
	env   *schedEnv
	label string
}

// schedRounds runs k's rounds on acc (or pair): each seeds its keys (schedSeed, seeder
// deleting), runs schedGen's transactions concurrently, each in the worker draw gives
// it (draw may draw from the round's random source after the schedule), and checks the
// ledger (schedCheck); for at most budget unless FENCEDSQL_SCHEDULES_ITERS is set. It
// fails t on a violation or an error of no expected kind (excused, if not nil, passes
// over some), naming the seed that replays it, and returns the commits.
func schedRounds(t *testing.T, k schedKnobs, admin, seeder *sql.DB, pair bool, plainOps []string, budget time.Duration, excused func(odd string) bool, draw func(r *rand.Rand, txs []schedTx) []schedWorker) (commits int) {
	t.Helper()
	// XA transaction ids are the server's, not the database's: this run's own.
	runID := time.Now().UnixNano()
	start := time.Now()
	const nkeys = 3
	bad := 0
	var odd []string
	for round := 0; round < k.iters; round++ {
		if !k.itersSet && time.Since(start) > budget {
			t.Logf("time budget %v reached after %d rounds", budget, round)
			break
		}
		seed := k.seed + int64(round)
		r := rand.New(rand.NewSource(seed))
		base := int64(round+1) * 10000
		schedSeed(t, admin, seeder, r, base, nkeys, pair)
		txs := schedGen(r, base, nkeys, k.isos, plainOps)
		ws := draw(r, txs)
		var wg sync.WaitGroup
		for i, x := range txs {
			wg.Add(1)
			go func(i int, x schedTx) {
				defer wg.Done()
				ws[i].env.run(x, fmt.Sprintf("fsql_%d_%d_%d", runID, round, i))
			}(i, x)
		}
		wg.Wait()
		for _, w := range ws {
			commits += w.env.commits
			for _, o := range w.env.odd {
				if excused == nil || !excused(o) {
					odd = append(odd, fmt.Sprintf("round %d (seed %d) %s: %s", round, seed, w.label, o))
				}
			}
		}
		if msg := schedCheck(t, admin, base, pair); msg != "" {
			bad++
			var sched []string
			for i, x := range txs {
				sched = append(sched, ws[i].label+" "+x.String())
			}
			t.Errorf("round %d: replay with FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=1: %s\nschedule:\n  %s", round, seed, msg, strings.Join(sched, "\n  "))
			if bad > 3 {
				break
			}
		}
	}
	if len(odd) > 0 {
		sort.Strings(odd)
		if len(odd) > 30 {
			odd = odd[:30]
		}
		t.Errorf("errors of no expected kind (run seed %d):\n  %s", k.seed, strings.Join(odd, "\n  "))
	}
	return commits
}

// schedSeed seeds a round's keys base..base+nkeys-1 of acc (or pair) and their ledger
// rows: each key absent, present under token st, or deleted under st by fenced (a
// tombstone); st is 1 or, in half of the rounds, any token the workers draw too.
func schedSeed(t *testing.T, admin, fenced *sql.DB, r *rand.Rand, base, nkeys int64, pair bool) {
	t.Helper()
	anySeedTok := r.Intn(2) == 0
	for i := int64(0); i < nkeys; i++ {
		st := 1
		if anySeedTok {
			st = 1 + r.Intn(7)
		}
		if mode := r.Intn(3); mode > 0 {
			q, args := "INSERT INTO acc (id, balance, fence_token, version) VALUES (?, 0, ?, 1)", []any{base + i, st}
			if pair {
				q, args = "INSERT INTO pair (`Region`, n, balance, fence_token, version) VALUES ('a', ?, 0, ?, 1)", []any{base + i, st}
			}
			if _, err := admin.Exec(q, args...); err != nil {
				t.Fatal(err)
			}
			op := "seed"
			if mode == 2 {
				op = "seeddel"
				q, args := "DELETE FROM acc WHERE id = ?", []any{base + i}
				if pair {
					q, args = "DELETE FROM pair WHERE `Region` = 'a' AND n = ?", []any{base + i}
				}
				if _, err := fenced.ExecContext(fencedsql.WithToken(context.Background(), uint64(st)), q, args...); err != nil {
					t.Fatal(err)
				}
			}
			if _, err := admin.Exec("INSERT INTO sched_ledger (k, maxtok, viol, log, last_op, last_tok) VALUES (?, ?, 0, ?, ?, ?)", base+i, st, fmt.Sprintf(" %s@%d", op, st), op, st); err != nil {
				t.Fatal(err)
			}
		}
	}
}

func schedOpen(t *testing.T, driver, dsn string) *sql.DB {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatal(err)
	}
	db.SetMaxOpenConns(12)
	t.Cleanup(func() { db.Close() })
	return db
}

// schedCheck checks the ledger of the round's keys (and the keys a key change moved to)
// against the invariant and the final rows.
func schedCheck(t *testing.T, admin *sql.DB, base int64, pair bool) string {
	join := "acc a ON a.id = l.k"
	if pair {
		join = "pair a ON a.`Region` = 'a' AND a.n = l.k"
	}
	rows, err := admin.Query("SELECT l.k, l.viol, l.log, l.last_op, l.last_tok, a.fence_token FROM sched_ledger l LEFT JOIN "+join+" WHERE l.k BETWEEN ? AND ? OR l.k BETWEEN ? AND ?", base, base+999, base+1000, base+1999)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	var msgs []string
	for rows.Next() {
		var k, viol, lastTok int64
		var log, lastOp string
		var ft sql.NullInt64
		if err := rows.Scan(&k, &viol, &log, &lastOp, &lastTok, &ft); err != nil {
			t.Fatal(err)
		}
		if viol > 0 {
			msgs = append(msgs, fmt.Sprintf("key %d: a committed touch under an older token after a newer one: ledger%s", k, log))
		}
		switch lastOp {
		case "del", "pdel", "chgfrom", "seeddel":
			if ft.Valid {
				msgs = append(msgs, fmt.Sprintf("key %d: row present (token %d) after the last committed touch %s@%d: ledger%s", k, ft.Int64, lastOp, lastTok, log))
			}
		case "claimabs":
			if ft.Valid && ft.Int64 < lastTok {
				msgs = append(msgs, fmt.Sprintf("key %d: row token %d below the last committed absent claim @%d: ledger%s", k, ft.Int64, lastTok, log))
			}
		case "claim", "seed", "sp", "mclaim":
			if ft.Valid && ft.Int64 > lastTok {
				msgs = append(msgs, fmt.Sprintf("key %d: row token %d above the last committed touch %s@%d: ledger%s", k, ft.Int64, lastOp, lastTok, log))
			}
		default:
			if !ft.Valid || ft.Int64 != lastTok {
				msgs = append(msgs, fmt.Sprintf("key %d: row token %v, last committed write %s@%d: ledger%s", k, ft, lastOp, lastTok, log))
			}
		}
	}
	return strings.Join(msgs, "\n")
}

// TestPreparedXABranchThenNewerClaim (red-team rt51b): a plain connection's XA branch
// inserts a key under token 3 and is prepared (XA PREPARE gives up its shared locks:
// the tombstone check's), its connection goes away (the branch survives, detached), and a newer
// holder (6) claims the key: the claim waits for the branch's row lock; the branch is
// committed from another connection; the claim then stamps the committed row with 6,
// and a later write under 3 (plain or fenced) is refused. Through the fenced pool the
// XA statements themselves are refused (ErrUnsupported).
func TestPreparedXABranchThenNewerClaim(t *testing.T) {
	dsn, admin, db := absentMy(t)
	xid := fmt.Sprintf("fsql_xa_%d", time.Now().UnixNano()) // XA ids are the server's: this run's own
	plain := schedOpen(t, "mysql", fencetest.WithParam(dsn, "innodb_lock_wait_timeout=20"))
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 6), "XA START '"+xid+"'"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("XA START through the fenced pool: %v, want ErrUnsupported", err)
	}
	c, err := plain.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"XA START '" + xid + "'", "INSERT INTO acc (id, balance, fence_token, version) VALUES (77, 1, 3, 1)", "XA END '" + xid + "'", "XA PREPARE '" + xid + "'"} {
		if _, err := c.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	c.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // drop the connection: the branch is detached
	c.Close()
	t.Cleanup(func() { admin.Exec("XA ROLLBACK '" + xid + "'") }) //nolint:errcheck

	done := make(chan error, 1)
	go func() {
		fctx := fencedsql.WithToken(ctx, 6)
		tx, err := db.BeginTx(fctx, nil)
		if err != nil {
			done <- err
			return
		}
		defer tx.Rollback() //nolint:errcheck
		var id int64
		if err := tx.QueryRowContext(fctx, "SELECT id FROM acc WHERE id = 77 FOR UPDATE").Scan(&id); err != nil {
			done <- fmt.Errorf("claim: %w", err)
			return
		}
		done <- tx.Commit()
	}()
	time.Sleep(500 * time.Millisecond)
	select {
	case err := <-done:
		t.Fatalf("the claim did not wait for the prepared branch's row: %v", err)
	default:
	}
	if _, err := admin.ExecContext(ctx, "XA COMMIT '"+xid+"'"); err != nil {
		t.Fatalf("XA COMMIT from another connection: %v", err)
	}
	if err := <-done; err != nil {
		t.Fatalf("newer claim after the branch committed: %v", err)
	}
	var tok int64
	if err := admin.QueryRow("SELECT fence_token FROM acc WHERE id = 77").Scan(&tok); err != nil || tok != 6 {
		t.Fatalf("row 77 token %d (%v), want 6 (stamped by the claim)", tok, err)
	}
	if _, err := plain.ExecContext(ctx, "UPDATE acc SET balance = 9, fence_token = 3, version = version + 1 WHERE id = 77"); err == nil {
		t.Fatal("a plain write under 3 after the claim under 6 went through")
	}
	if err := writeAs(db, 3, "UPDATE acc SET balance = 9 WHERE id = 77"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("a fenced write under 3 after the claim under 6: %v, want ErrFenced", err)
	}
}
