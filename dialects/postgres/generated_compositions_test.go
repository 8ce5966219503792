package postgres_test

// Generated compositions against the installed guard (kept from red-team rt55a; no
// finding). A seeded generator builds writes of acc — guarded with schema.Check's Fix
// (guard triggers, tombstones, floor) — from a core (re-keying onto a tombstoned key,
// ON CONFLICT DO NOTHING / ON CONSTRAINT / DO UPDATE SET id = 20, OVERRIDING SYSTEM
// VALUE, DEFAULT keys, INSERT … SELECT, LATERAL, = ANY(ARRAY…), TABLESAMPLE, MERGE),
// a spelling of the table (ONLY, *, qualified, quoted, aliased), literal keys or
// placeholders, and a wrapper (RETURNING, a data-modifying CTE, a CTE before the write,
// EXPLAIN without ANALYZE, SAVEPOINT, SET LOCAL, set_config, LOCK TABLE,
// PREPARE/EXECUTE, COPY (… RETURNING) TO STDOUT, CREATE TEMP TABLE AS). Each text is
// sent one way: fenced-pgx Exec, Query, Prepare+Exec, Tx.Exec, Tx.Query, or the native
// fencedpgx pool's Exec, Query, SendBatch; in the extended and the simple protocol.
//
// Oracle, with the stale token compStale (30): row 5 (token 40) and row 6 (token 80)
// unchanged, key 20 (deleted under 70) not back, no tombstone lowered or removed, a
// new row only stamped with 30. The outcomes are counted: accepted, a typed refusal
// (compTyped), or another error (an invalid text, a unique violation, …; each logged
// with FENCEDSQL_SCHEDULES_LOG=1).
//
// TestNativeMatchesDatabaseSQL (native_differential_test.go) sends the same texts
// through database/sql and through the native pool.
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed is time-based and logged
// with its replay line; the default run is cut at compBudget; the long form is in the
// test's doc comment.

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

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

const compStale = 30

// compBudget bounds a default run (both protocols of TestGeneratedCompositionsGuarded,
// or TestNativeMatchesDatabaseSQL) so that it takes about 10 s on two loaded cores.
const compBudget = 5 * time.Second

var compTargets = []string{"acc", "ONLY acc", "public.acc", "acc *", `"acc"`, "acc AS a", "public.acc a"}

// compCores: {T} a spelling of acc, {K} a key the oracle knows (5, 6 or 20), {A} another.
var compCores = []string{
	"UPDATE {T} SET balance = 1 WHERE id = {K}",
	"UPDATE {T} SET balance = balance + 1 WHERE id IN ({K}, {A})",
	"UPDATE {T} SET id = 20 WHERE id = {K}",
	"UPDATE {T} SET id = id + 15 WHERE id = 5",
	"UPDATE {T} SET (balance, id) = (SELECT 1, {K}) WHERE id = {A}",
	"UPDATE {T} SET balance = s.v FROM (VALUES ({K}, 9)) s(k, v), LATERAL (SELECT s.k AS kk) l WHERE id = l.kk",
	"UPDATE {T} SET balance = 2 WHERE id IN (SELECT g FROM generate_series(1, 30) g TABLESAMPLE BERNOULLI (100))",
	"UPDATE {T} SET balance = 2 WHERE id = ANY (ARRAY[{K}, {A}])",
	"DELETE FROM {T} WHERE id = {K}",
	"DELETE FROM {T} WHERE id IN (SELECT k FROM (VALUES ({K}), ({A})) v(k))",
	"DELETE FROM {T} USING (VALUES ({K})) v(k), LATERAL (SELECT v.k AS kk) l WHERE id = l.kk",
	"INSERT INTO {T} (id, balance) VALUES ({K}, 1)",
	"INSERT INTO {T} (id, balance) VALUES ({K}, 1) ON CONFLICT DO NOTHING",
	"INSERT INTO {T} (id, balance) VALUES ({K}, 1) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance",
	"INSERT INTO {T} (id, balance) VALUES ({A}, 1) ON CONFLICT (id) DO UPDATE SET id = 20",
	"INSERT INTO {T} (id, balance) VALUES ({K}, 1) ON CONFLICT ON CONSTRAINT acc_pkey DO UPDATE SET balance = 3 WHERE EXCLUDED.id = {K}",
	"INSERT INTO {T} (id, balance) SELECT g, 1 FROM generate_series(19, 21) g",
	"INSERT INTO {T} (id, balance) SELECT k, 1 FROM (VALUES ({K}), ({A})) v(k), LATERAL (SELECT 1) l ON CONFLICT (id) DO NOTHING",
	"INSERT INTO {T} (id, balance) OVERRIDING SYSTEM VALUE VALUES ({K}, 1)",
	"INSERT INTO {T} (id) VALUES (DEFAULT), ({K})",
	"MERGE INTO {T} USING (VALUES ({K}), ({A})) s(k) ON id = s.k WHEN MATCHED THEN UPDATE SET balance = 1 WHEN NOT MATCHED THEN INSERT (id, balance) VALUES (s.k, 1)",
	"MERGE INTO {T} USING (VALUES ({K})) s(k) ON id = s.k WHEN MATCHED THEN DELETE",
}

type compWrap struct {
	name string
	dml  bool // needs a single DML that takes RETURNING
	f    func(string) string
}

var compWraps = []compWrap{
	{"plain", false, func(s string) string { return s }},
	{"ret", true, func(s string) string { return s + " RETURNING id" }},
	{"cte", true, func(s string) string { return "WITH x AS (" + s + " RETURNING id) SELECT * FROM x" }},
	{"cte_read", false, func(s string) string { return "WITH r AS (SELECT 1 AS n) " + s }},
	{"explain_off", false, func(s string) string { return "EXPLAIN (ANALYZE false, COSTS false) " + s }},
	{"sp", false, func(s string) string { return "SAVEPOINT comp; " + s + "; RELEASE SAVEPOINT comp" }},
	{"setl", false, func(s string) string { return "SET LOCAL lock_timeout = '5s'; " + s }},
	{"setcfg", false, func(s string) string { return "SELECT set_config('application_name', 'x', true); " + s }},
	{"lock", false, func(s string) string { return "LOCK TABLE acc IN ROW EXCLUSIVE MODE; " + s }},
	{"prepare", false, func(s string) string { return "PREPARE compw AS " + s + "; EXECUTE compw" }},
	{"copy", true, func(s string) string { return "COPY (" + s + " RETURNING id) TO STDOUT" }},
	{"ctas", true, func(s string) string {
		return "CREATE TEMP TABLE comp_w AS WITH x AS (" + s + " RETURNING id) SELECT * FROM x"
	}},
}

// compSend is how a trial is sent: through fenced-pgx (database/sql) or the native pool.
type compSend int

const (
	compExec compSend = iota
	compQuery
	compPrepExec
	compTxExec
	compTxQuery
	compNativeExec
	compNativeQuery
	compNativeBatch
	compNativeTxExec  // TestNativeMatchesDatabaseSQL only
	compNativeTxQuery // TestNativeMatchesDatabaseSQL only
)

func (s compSend) String() string {
	return [...]string{"Exec", "Query", "Prepare+Exec", "Tx.Exec", "Tx.Query", "native Exec", "native Query", "native SendBatch",
		"native Tx.Exec", "native Tx.Query"}[s]
}

type compTrial struct {
	text  string
	args  []any
	send  compSend
	label string // the wrapper's name
}

func compGen(r *rand.Rand) compTrial {
	core := compCores[r.Intn(len(compCores))]
	t := compTargets[r.Intn(len(compTargets))]
	if strings.HasPrefix(core, "INSERT") || strings.HasPrefix(core, "MERGE") {
		t = strings.TrimSuffix(strings.TrimSuffix(t, " AS a"), " a")
	}
	if strings.HasPrefix(core, "INSERT") && (strings.HasPrefix(t, "ONLY") || strings.HasSuffix(t, "*")) {
		t = "acc"
	}
	keys := []int64{5, 6, 20}
	kn, an := keys[r.Intn(3)], keys[r.Intn(3)]
	k, a := fmt.Sprint(kn), fmt.Sprint(an)
	var args []any
	if r.Intn(3) == 0 {
		args = []any{kn, an}
		k, a = "$1::bigint", "$2::bigint"
		if !strings.Contains(core, "{A}") {
			args = args[:1]
		}
		if !strings.Contains(core, "{K}") {
			args = nil
		}
	}
	s := strings.NewReplacer("{T}", t, "{K}", k, "{A}", a).Replace(core)
	w := compWraps[r.Intn(len(compWraps))]
	single := strings.HasPrefix(s, "UPDATE") || strings.HasPrefix(s, "DELETE") || strings.HasPrefix(s, "INSERT")
	if w.dml && !single {
		w = compWraps[0]
	}
	if len(args) > 0 && strings.Contains(w.f("x"), ";") {
		w = compWraps[0] // no placeholders in a multi-statement text
	}
	return compTrial{text: w.f(s), args: args, send: compSend(r.Intn(8)), label: w.name}
}

// compRows renders acc's rows by key ("b=… tok=… v=…").
func compRows(t *testing.T, raw *sql.DB) map[int64]string {
	t.Helper()
	rows := map[int64]string{}
	rs, err := raw.Query("SELECT id, format('b=%s tok=%s v=%s', balance, fence_token, version) FROM acc")
	if err != nil {
		t.Fatal(err)
	}
	defer rs.Close()
	for rs.Next() {
		var id int64
		var v string
		if err := rs.Scan(&id, &v); err != nil {
			t.Fatal(err)
		}
		rows[id] = v
	}
	if err := rs.Err(); err != nil {
		t.Fatal(err)
	}
	return rows
}

// compTombs renders acc's tombstones.
func compTombs(t *testing.T, raw *sql.DB) map[string]bool {
	t.Helper()
	var all string
	if err := raw.QueryRow("SELECT coalesce(string_agg(row_to_json(t)::text, E'\\n'), '') FROM fencedsql_tomb_acc t").Scan(&all); err != nil {
		t.Fatal(err)
	}
	tombs := map[string]bool{}
	for _, j := range strings.Split(all, "\n") {
		tombs[j] = true
	}
	return tombs
}

// compTyped: a typed refusal of the wrapper.
func compTyped(err error) bool {
	return cfgmTyped(err) || errors.Is(err, fencedsql.ErrVersionConflict)
}

// drain reads rows to the end.
func drain(rows interface {
	Next() bool
	Err() error
}, err error) error {
	if err != nil {
		return err
	}
	for rows.Next() {
	}
	return rows.Err()
}

// compRun sends tr on db (fenced-pgx, on a connection discarded afterwards) or np.
func compRun(ctx context.Context, db *sql.DB, np *fencedpgx.Pool, tr compTrial) error {
	switch tr.send {
	case compNativeExec, compNativeQuery, compNativeTxExec, compNativeTxQuery:
		return compRunNative(ctx, np, tr.text, tr.args, tr.send)
	case compNativeBatch:
		b := &pgx.Batch{}
		b.Queue("SELECT 1")
		b.Queue(tr.text, tr.args...)
		br := np.SendBatch(ctx, b)
		_, err1 := br.Exec()
		_, err2 := br.Exec()
		return errors.Join(err1, err2, br.Close())
	}
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}()
	switch tr.send {
	case compExec:
		_, err = conn.ExecContext(ctx, tr.text, tr.args...)
	case compQuery:
		err = sqlQuery(ctx, conn, tr.text, tr.args)
	case compPrepExec:
		var st *sql.Stmt
		if st, err = conn.PrepareContext(ctx, tr.text); err == nil {
			_, err = st.ExecContext(ctx, tr.args...)
			st.Close()
		}
	default:
		var tx *sql.Tx
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return err
		}
		if tr.send == compTxExec {
			_, err = tx.ExecContext(ctx, tr.text, tr.args...)
		} else {
			err = sqlQuery(ctx, tx, tr.text, tr.args)
		}
		if err != nil {
			_ = tx.Rollback()
			return err
		}
		err = tx.Commit()
	}
	return err
}

func sqlQuery(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}, text string, args []any) error {
	rows, err := q.QueryContext(ctx, text, args...)
	if err != nil {
		return err
	}
	defer rows.Close()
	return drain(rows, nil)
}

// compRunNative sends text through the native pool: Exec, Query, or either inside
// np.Begin … Commit.
func compRunNative(ctx context.Context, np *fencedpgx.Pool, text string, args []any, send compSend) error {
	query := func(q func(context.Context, string, ...any) (pgx.Rows, error)) error {
		rows, err := q(ctx, text, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		return drain(rows, nil)
	}
	switch send {
	case compNativeExec:
		_, err := np.Exec(ctx, text, args...)
		return err
	case compNativeQuery:
		return query(np.Query)
	}
	tx, err := np.Begin(ctx)
	if err != nil {
		return err
	}
	if send == compNativeTxExec {
		_, err = tx.Exec(ctx, text, args...)
	} else {
		err = query(tx.Query)
	}
	if err != nil {
		_ = tx.Rollback(ctx)
		return err
	}
	return tx.Commit(ctx)
}

// compNative opens the native fencedpgx pool on dsn guarding acc, in the simple
// protocol when simple is set.
func compNative(t *testing.T, dsn string, simple bool) *fencedpgx.Pool {
	t.Helper()
	pcfg, err := pgxpool.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if simple {
		pcfg.ConnConfig.DefaultQueryExecMode = pgx.QueryExecModeSimpleProtocol
	}
	pp, err := pgxpool.NewWithConfig(context.Background(), pcfg)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(pp.Close)
	np, err := fencedpgx.New(pp, fencedsql.Guard("acc"))
	if err != nil {
		t.Fatal(err)
	}
	return np
}

// compKnobs reads the schedule knobs and logs the seed with its replay line.
func compKnobs(t *testing.T, pkgTest string) fencetest.ScheduleKnobs {
	t.Helper()
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 1<<30)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<trials run> go test -run '^%s$' ./dialects/postgres/)", k.Seed, k.Seed, pkgTest)
	return k
}

// more reports whether trial i is to run: within the iterations, and within budget
// from start unless FENCEDSQL_SCHEDULES_ITERS is set.
func more(k fencetest.ScheduleKnobs, i int, start time.Time, budget time.Duration) bool {
	return i < k.Iters && (k.ItersSet || time.Since(start) < budget)
}

// TestGeneratedCompositionsGuarded: the generator with the stale token, in both
// protocols (the file's leading comment). CI form: a time-based seed, both protocols
// within compBudget. Long form (the red-team sweep; any seed, or a logged one to replay):
//
//	source /tmp/fsql_env.sh && FENCEDSQL_SCHEDULES_SEED=5502 FENCEDSQL_SCHEDULES_ITERS=300 \
//	  go test -timeout 30m -count=1 -run '^TestGeneratedCompositionsGuarded$' ./dialects/postgres/
func TestGeneratedCompositionsGuarded(t *testing.T) {
	k := compKnobs(t, "TestGeneratedCompositionsGuarded")
	// both protocols on one database: what the oracle holds must not change at all
	raw, dsn := wholeAcc(t, "INSERT INTO acc (id, balance, fence_token, version) VALUES (6, 0, 80, 1)")
	base, baseTombs := compRows(t, raw), compTombs(t, raw)
	start := time.Now()
	for i, mode := range []string{"", "&default_query_exec_mode=simple_protocol"} {
		ok := t.Run("mode="+mode, func(t *testing.T) {
			db, err := sql.Open("fenced-pgx", dsn+mode+"&fenced_tables=acc")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			np := compNative(t, dsn, mode != "")
			r := rand.New(rand.NewSource(k.Seed))
			stats := map[string]int{}
			n := 0
			// each protocol gets half of the budget
			for ; more(k, n, start, compBudget*time.Duration(i+1)/2); n++ {
				tr := compGen(r)
				ctx, cancel := context.WithTimeout(fencedsql.WithToken(context.Background(), compStale), 10*time.Second)
				err := compRun(ctx, db, np, tr)
				cancel()
				rows, tombs := compRows(t, raw), compTombs(t, raw)
				var bad []string
				for _, id := range []int64{5, 6} {
					if rows[id] != base[id] {
						bad = append(bad, fmt.Sprintf("row %d %q -> %q", id, base[id], rows[id]))
					}
				}
				if tok, back := wholeResurrected(t, raw); back {
					bad = append(bad, fmt.Sprintf("key 20 back under token %d", tok))
				}
				for j := range baseTombs {
					if !tombs[j] {
						bad = append(bad, "tombstone changed or removed: "+j)
					}
				}
				for id, v := range rows {
					if id != 5 && id != 6 && !strings.Contains(v, fmt.Sprintf("tok=%d ", compStale)) {
						bad = append(bad, fmt.Sprintf("new row %d not stamped with %d: %s", id, compStale, v))
					}
				}
				switch {
				case len(bad) > 0:
					t.Fatalf("FAIL-OPEN (token %d) via %s [%s] %q args=%v: %s; err=%v", compStale, tr.send, tr.label, tr.text, tr.args, strings.Join(bad, "; "), err)
				case err == nil:
					stats["accepted"]++
				case compTyped(err):
					stats["typed"]++
				default:
					stats["untyped"]++
					if k.ShowLog {
						t.Logf("untyped via %s [%s] %q args=%v: %v", tr.send, tr.label, tr.text, tr.args, err)
					}
				}
			}
			t.Logf("%d trials: %v", n, stats)
		})
		if !ok {
			return // the database no longer holds the oracle's seed
		}
	}
}
