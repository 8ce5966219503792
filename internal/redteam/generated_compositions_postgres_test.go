// Generated compositions of PostgreSQL statements that reach the guarded table from inside
// one text (kept from red-team rt55a; no finding): a core write of accounts (UPDATE,
// DELETE, upsert, TABLESAMPLE, LATERAL, a row subquery, MERGE; spelled ONLY, *,
// qualified, quoted) wrapped 1–4 deep by EXPLAIN ANALYZE (three spellings), a
// data-modifying CTE read by SELECT, TABLE or VALUES, CREATE TEMP TABLE … AS (with and
// without parentheses), SELECT … INTO TEMP, COPY (… RETURNING) TO STDOUT directly or
// through a CTE, PREPARE/EXECUTE/DEALLOCATE, CREATE TABLE … AS EXECUTE, SAVEPOINT /
// RELEASE / ROLLBACK TO, BEGIN … COMMIT, SET search_path / SET LOCAL / set_config /
// SET ROLE, LOCK TABLE, a SELECT before or after, an open cursor; and the WHERE
// CURRENT OF family (DECLARE … FOR UPDATE, FETCH/MOVE variants, UPDATE or DELETE of the
// cursor's row). Each text is sent one way (Exec, Query, Prepare+Exec, Tx.Exec,
// Tx.Query) on a connection of its own, in both pgx exec modes, on the wrapper-only
// guard (no database trigger).
//
// Oracle: each text runs on the raw driver first (does it run at all?), then through
// the fenced pool with the stale token: the seeded rows of accounts unchanged and
// present, a new row only with the stale token stamped (judgeAccounts), or else
// FAIL-OPEN; an error that is not a typed refusal (typedRefusal) on a text the raw
// driver runs is a WRONG-ERROR. With FENCEDSQL_SCHEDULES_LOG=1 each text the raw driver
// runs and that changes accounts there is also sent with a fresh token and a refusal
// is logged (over-refusal is measured, not judged).
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed is time-based and logged with
// its replay line; the default run is cut at genCompBudget; the long form is in the
// test's doc comment.

package redteam

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// genCompBudget bounds the default run of both exec modes (about 10 s with set-up on
// two loaded cores).
const genCompBudget = 7 * time.Second

type genCompCore struct {
	sql string // {T} is the target spelling
	dml bool   // a single DML statement that takes RETURNING
}

var genCompCores = []genCompCore{
	{"UPDATE {T} SET balance = 0 WHERE id = 1", true},
	{"UPDATE {T} SET balance = balance + 1", true},
	{"DELETE FROM {T} WHERE id = 2", true},
	{"INSERT INTO {T} (id, balance) VALUES (3, 0) ON CONFLICT (id) DO UPDATE SET balance = 0", true},
	{"UPDATE {T} SET balance = 0 WHERE id IN (SELECT id FROM ledger TABLESAMPLE BERNOULLI (100))", true},
	{"UPDATE {T} SET balance = s.v FROM ledger l, LATERAL (SELECT l.amount AS v) s WHERE l.account_id = {T}.id", true},
	{"DELETE FROM {T} USING ledger l, LATERAL (SELECT l.account_id AS k) s WHERE {T}.id = s.k", true},
	{"UPDATE {T} SET (balance, version) = (SELECT 0, 0) WHERE id = 4", true},
	{"MERGE INTO {T} a USING (SELECT 4 AS id) s ON a.id = s.id WHEN MATCHED THEN UPDATE SET balance = 0", false},
}

var genCompTargets = []string{"accounts", "ONLY accounts", "public.accounts", "accounts *", "ONLY public.accounts", `"accounts"`}

// genCompWrap wraps inner (a text) in one composition element; n makes names unique.
type genCompWrap struct {
	name   string
	needML bool // needs a single DML inner (RETURNING added)
	f      func(inner string, n int) string
}

func genCompWraps() []genCompWrap {
	return []genCompWrap{
		{"explain", false, func(in string, n int) string { return "EXPLAIN (ANALYZE) " + in }},
		{"explain_json", false, func(in string, n int) string { return "EXPLAIN (ANALYZE true, COSTS false, FORMAT JSON) " + in }},
		{"explain_plain", false, func(in string, n int) string { return "EXPLAIN ANALYZE VERBOSE " + in }},
		{"cte", true, func(in string, n int) string { return "WITH x AS (" + in + " RETURNING 1) SELECT 1" }},
		{"cte_table", true, func(in string, n int) string { return "WITH x AS (" + in + " RETURNING id) TABLE x" }},
		{"cte_values", true, func(in string, n int) string { return "WITH x AS (" + in + " RETURNING id) VALUES (1)" }},
		{"ctas", true, func(in string, n int) string {
			return fmt.Sprintf("CREATE TEMP TABLE gc_t%d AS WITH x AS (%s RETURNING id) SELECT * FROM x", n, in)
		}},
		{"ctas_noparen", true, func(in string, n int) string {
			return fmt.Sprintf("CREATE TEMP TABLE gc_u%d AS (WITH x AS (%s RETURNING id) SELECT * FROM x)", n, in)
		}},
		{"selinto", true, func(in string, n int) string {
			return fmt.Sprintf("WITH x AS (%s RETURNING id) SELECT * INTO TEMP gc_s%d FROM x", in, n)
		}},
		{"copy_direct", true, func(in string, n int) string { return "COPY (" + in + " RETURNING id) TO STDOUT" }},
		{"copy_cte", true, func(in string, n int) string {
			return "COPY (WITH x AS (" + in + " RETURNING id) SELECT * FROM x) TO STDOUT"
		}},
		{"prepare", false, func(in string, n int) string {
			return fmt.Sprintf("PREPARE gc_p%d AS %s; EXECUTE gc_p%d; DEALLOCATE gc_p%d", n, in, n, n)
		}},
		{"ctas_exec", false, func(in string, n int) string {
			return fmt.Sprintf("PREPARE gc_q%d AS %s RETURNING id; CREATE TEMP TABLE gc_e%d AS EXECUTE gc_q%d", n, in, n, n)
		}},
		{"savepoint", false, func(in string, n int) string { return "SAVEPOINT gc_sp; " + in + "; RELEASE SAVEPOINT gc_sp" }},
		{"rollback_to", false, func(in string, n int) string {
			return "SAVEPOINT gc_sp; SELECT 1; ROLLBACK TO SAVEPOINT gc_sp; " + in
		}},
		{"begin_commit", false, func(in string, n int) string { return "BEGIN; " + in + "; COMMIT" }},
		{"set_sp", false, func(in string, n int) string { return "SET search_path = public, pg_catalog; " + in }},
		{"set_local", false, func(in string, n int) string { return "SET LOCAL statement_timeout = 0; " + in }},
		{"set_config", false, func(in string, n int) string { return "SELECT set_config('application_name', 'gc', false); " + in }},
		{"set_role", false, func(in string, n int) string { return "SET ROLE NONE; " + in + "; RESET ROLE" }},
		{"lock", false, func(in string, n int) string { return "LOCK TABLE ledger IN SHARE MODE; " + in }},
		{"lock_acc", false, func(in string, n int) string { return "LOCK TABLE accounts IN ROW EXCLUSIVE MODE; " + in }},
		{"sel_before", false, func(in string, n int) string { return "SELECT 1; " + in }},
		{"sel_after", false, func(in string, n int) string { return in + "; SELECT 1" }},
		{"cursor_before", false, func(in string, n int) string {
			return fmt.Sprintf("DECLARE gc_c%d CURSOR FOR SELECT id FROM ledger; %s; CLOSE gc_c%d", n, in, n)
		}},
	}
}

// genCompCursor is the WHERE CURRENT OF family: a cursor over the guarded table and an
// UPDATE or DELETE of the row it is on.
func genCompCursor(r *rand.Rand, n int) string {
	sel := []string{
		"SELECT * FROM accounts WHERE id = 1 FOR UPDATE",
		"SELECT * FROM accounts FOR UPDATE",
		"SELECT id FROM ONLY accounts WHERE id >= 1 FOR NO KEY UPDATE",
		"SELECT * FROM accounts",
		"SELECT * FROM public.accounts a WHERE a.id = 2",
	}[r.Intn(5)]
	mv := []string{"FETCH gc_k%d", "FETCH NEXT FROM gc_k%d", "MOVE gc_k%d", "FETCH 1 gc_k%d", "MOVE FORWARD 2 IN gc_k%d", "FETCH ABSOLUTE 1 FROM gc_k%d"}[r.Intn(6)]
	wr := []string{
		"UPDATE accounts SET balance = 0 WHERE CURRENT OF gc_k%d",
		"DELETE FROM accounts WHERE CURRENT OF gc_k%d",
		"UPDATE accounts SET balance = 0 WHERE CURRENT OF gc_k%d RETURNING id",
		"DELETE FROM public.accounts WHERE CURRENT OF gc_k%d",
		"UPDATE ONLY accounts SET version = version + 1 WHERE CURRENT OF gc_k%d",
	}[r.Intn(5)]
	body := fmt.Sprintf("DECLARE gc_k%d CURSOR FOR %s; %s; %s", n, sel, fmt.Sprintf(mv, n), fmt.Sprintf(wr, n))
	if r.Intn(2) == 0 {
		return "BEGIN; " + body + "; COMMIT"
	}
	return body
}

// genCompText builds one text of 1–4 composition elements around a core write.
func genCompText(r *rand.Rand, n int) string {
	ws := genCompWraps()
	onlyOnce := func(w genCompWrap) bool {
		return strings.HasPrefix(w.name, "explain") || w.name == "prepare" || w.name == "ctas_exec"
	}
	if r.Intn(6) == 0 {
		t := genCompCursor(r, n)
		if r.Intn(2) == 0 {
			for _, i := range r.Perm(len(ws)) {
				if !ws[i].needML && !onlyOnce(ws[i]) {
					return ws[i].f(t, n)
				}
			}
		}
		return t
	}
	c := genCompCores[r.Intn(len(genCompCores))]
	t := strings.ReplaceAll(c.sql, "{T}", genCompTargets[r.Intn(len(genCompTargets))])
	single, dml := true, c.dml
	depth := 1 + r.Intn(4)
	for d := 0; d < depth; d++ {
		w := ws[r.Intn(len(ws))]
		if w.needML && !dml || onlyOnce(w) && !single || w.name == "ctas_exec" && !dml {
			continue
		}
		t = w.f(t, n*10+d)
		// after one element the text is no single DML any more
		dml = false
		single = !strings.Contains(t, ";") && !strings.HasPrefix(t, "EXPLAIN") && !strings.HasPrefix(t, "COPY") &&
			!strings.HasPrefix(t, "CREATE") && !strings.Contains(t, " INTO TEMP ")
		if strings.HasPrefix(t, "WITH") && !strings.Contains(t, " INTO TEMP ") {
			single = true // a WITH … SELECT can be EXPLAINed or PREPAREd
		}
	}
	return t
}

type genCompSend int

const (
	genCompExec genCompSend = iota
	genCompQuery
	genCompPrepExec
	genCompTxExec
	genCompTxQuery
)

func (s genCompSend) String() string {
	return [...]string{"Exec", "Query", "Prepare+Exec", "Tx.Exec", "Tx.Query"}[s]
}

// genCompRun sends text on db through send, on a connection discarded afterwards.
func genCompRun(ctx context.Context, db *sql.DB, text string, send genCompSend) error {
	conn, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer func() {
		_ = conn.Raw(func(any) error { return driver.ErrBadConn })
		conn.Close()
	}()
	switch send {
	case genCompExec, genCompQuery:
		_, err = runStep(ctx, conn, step{sql: text, query: send == genCompQuery})
	case genCompPrepExec:
		var st *sql.Stmt
		if st, err = conn.PrepareContext(ctx, text); err == nil {
			_, err = st.ExecContext(ctx)
			st.Close()
		}
	default:
		var tx *sql.Tx
		if tx, err = conn.BeginTx(ctx, nil); err != nil {
			return err
		}
		if _, err = runStep(ctx, tx, step{sql: text, query: send == genCompTxQuery}); err != nil {
			_ = tx.Rollback()
			return err
		}
		err = tx.Commit()
	}
	return err
}

// TestGeneratedCompositionsPostgres: the generator with the stale token, per exec mode
// (the file's leading comment). CI form: a time-based seed, both modes within
// genCompBudget. Long form (the red-team sweep; any seed, or a logged one to replay):
//
//	source /tmp/fsql_env.sh && FENCEDSQL_SCHEDULES_SEED=5501 FENCEDSQL_SCHEDULES_ITERS=400 \
//	  go test -timeout 30m -count=1 -run '^TestGeneratedCompositionsPostgres$' ./internal/redteam/
func TestGeneratedCompositionsPostgres(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 1<<30)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<texts run> go test -run '^TestGeneratedCompositionsPostgres$' ./internal/redteam/)", k.Seed, k.Seed)
	b := postgresBackend()
	start := time.Now()
	for m, mode := range []string{"default_query_exec_mode=simple_protocol", ""} {
		t.Run("mode="+mode, func(t *testing.T) {
			d := freshDB(t, b, entry{dsn: mode})
			ctx0, cancel := context.WithTimeout(context.Background(), 30*time.Minute)
			defer cancel()
			d.ctx = ctx0
			fenced, _ := d.open(true, nil)
			r := rand.New(rand.NewSource(k.Seed))
			stats := map[string]int{}
			// each mode gets half of the budget
			i := 0
			for ; i < k.Iters && (k.ItersSet || time.Since(start) < genCompBudget*time.Duration(m+1)/2); i++ {
				text := genCompText(r, i)
				send := genCompSend(r.Intn(5))
				// the raw driver first: does the text run at all?
				ctx, c1 := context.WithTimeout(ctx0, genTimeout)
				rawErr := genCompRun(ctx, d.raw, text, send)
				c1()
				rawRows, err := genRows(ctx0, d.raw, genAccountsQuery)
				if err != nil {
					t.Fatal(err)
				}
				rawChanged := judgeAccounts(rawRows, 0) != ""
				resetGenerated(ctx0, t, d.raw, true)

				ctx, c1 = context.WithTimeout(tokenCtx(ctx0, staleToken), genTimeout)
				err = genCompRun(ctx, fenced, text, send)
				c1()
				rows, rerr := genRows(ctx0, d.raw, genAccountsQuery)
				if rerr != nil {
					t.Fatal(rerr)
				}
				if what := judgeAccounts(rows, staleToken); what != "" {
					t.Errorf("FAIL-OPEN (stale %d) via %s: %s\n    %q\n    err=%v", staleToken, send, what, text, err)
					stats["failopen"]++
				} else if err != nil && !typedRefusal(err) && rawErr == nil {
					t.Errorf("WRONG-ERROR (stale %d) via %s: %q\n    err=%v", staleToken, send, text, err)
					stats["wrongerr"]++
				}
				resetGenerated(ctx0, t, d.raw, true)
				switch {
				case rawErr != nil:
					stats["raw-error"]++
				case err == nil:
					stats["stale-accepted"]++
				default:
					stats["stale-refused"]++
				}
				if k.ShowLog && rawErr == nil && rawChanged {
					ctx, c1 = context.WithTimeout(tokenCtx(ctx0, freshToken), genTimeout)
					if ferr := genCompRun(ctx, fenced, text, send); ferr != nil {
						t.Logf("fresh token refused via %s: %q: %v", send, text, ferr)
					}
					c1()
					resetGenerated(ctx0, t, d.raw, true)
				}
			}
			t.Logf("%d texts: %v", i, stats)
		})
	}
}
