package postgres_test

// Red-team dsd: deleted stays deleted, second catalogue (PostgreSQL, installed guards,
// plain connections outside the wrapper). A generator builds statements of SQL classes
// (MERGE with mixed actions, writable CTEs deleting and inserting one key, ON CONFLICT DO
// UPDATE re-keying, cross-partition UPDATEs, COPY FROM, INSERT … SELECT, a user's
// deferred constraint trigger, temp tables shadowing the name) under isolation levels and
// session settings, written by a stale holder that stamps its own token (30) or none.
// Oracle (checked inside the transaction, after SET CONSTRAINTS ALL IMMEDIATE, then
// rolled back): no row whose key has a tombstone above the row's token; rows 5 (40) and
// 6 (80) unchanged; no tombstone lowered or removed.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const dsdStale = 30

func dsdCheck(t *testing.T, raw *sql.DB, dsn, table string) {
	t.Helper()
	reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		rawWith(t, dsn, r.Fix...)
	}
	reps, err = schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: table})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		if len(r.Problems) > 0 {
			t.Fatalf("%s after Fix: %q", table, r.Problems)
		}
	}
}

// dsdSetup: acc (plain) and accp (partitioned: accp_lo [0,10), accp_hi [10,1000)),
// both guarded with tombstones; rows 5@40, 6@80, 8@0, 9@30; key 20 written under 70
// and deleted under 70 through the wrapper.
func dsdSetup(t *testing.T) (raw *sql.DB, dsn string) {
	t.Helper()
	dsn = testdb.Postgres(t)
	cols := "(id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"
	raw = rawWith(t, dsn,
		"CREATE TABLE acc "+cols,
		"CREATE TABLE accp "+cols+" PARTITION BY RANGE (id)",
		"CREATE TABLE accp_lo PARTITION OF accp FOR VALUES FROM (0) TO (10)",
		"CREATE TABLE accp_hi PARTITION OF accp FOR VALUES FROM (10) TO (1000)",
		"CREATE TABLE src (k bigint, v bigint)",
		"INSERT INTO src VALUES (20, 1), (9, 2)",
	)
	dsdCheck(t, raw, dsn, "acc")
	dsdCheck(t, raw, dsn, "accp")
	for _, tb := range []string{"acc", "accp"} {
		rawWith(t, dsn, "INSERT INTO "+tb+" (id, fence_token, version) VALUES (5, 40, 1), (6, 80, 1), (8, 0, 1), (9, 30, 1), (20, 70, 1)")
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc,accp")
	for _, tb := range []string{"acc", "accp"} {
		if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 70), "DELETE FROM "+tb+" WHERE id = 20"); err != nil {
			t.Fatal(err)
		}
	}
	return raw, dsn
}

type dsdState struct {
	rows  map[string]map[int64][3]int64 // table -> id -> {balance, token, version}
	tombs map[string]map[int64]int64
}

type dsdQ interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}

func dsdRead(ctx context.Context, q dsdQ) (dsdState, error) {
	st := dsdState{rows: map[string]map[int64][3]int64{}, tombs: map[string]map[int64]int64{}}
	for _, tb := range []string{"acc", "accp"} {
		st.rows[tb] = map[int64][3]int64{}
		st.tombs[tb] = map[int64]int64{}
		rs, err := q.QueryContext(ctx, "SELECT id, balance, fence_token, version FROM public."+tb)
		if err != nil {
			return st, err
		}
		for rs.Next() {
			var id int64
			var v [3]int64
			if err := rs.Scan(&id, &v[0], &v[1], &v[2]); err != nil {
				rs.Close()
				return st, err
			}
			if _, dup := st.rows[tb][id]; dup {
				v[0] = -999 // duplicate key marker
			}
			st.rows[tb][id] = v
		}
		rs.Close()
		rs, err = q.QueryContext(ctx, "SELECT id, fence_token FROM public.fencedsql_tomb_"+tb)
		if err != nil {
			return st, err
		}
		for rs.Next() {
			var id, tok int64
			if err := rs.Scan(&id, &tok); err != nil {
				rs.Close()
				return st, err
			}
			st.tombs[tb][id] = tok
		}
		rs.Close()
	}
	return st, nil
}

// dsdJudge compares after with base: the violations.
func dsdJudge(base, after dsdState) []string {
	var bad []string
	for _, tb := range []string{"acc", "accp"} {
		for id, v := range after.rows[tb] {
			if v[0] == -999 {
				bad = append(bad, fmt.Sprintf("%s: key %d twice", tb, id))
			}
			for _, tombs := range []map[int64]int64{base.tombs[tb], after.tombs[tb]} {
				if tk, ok := tombs[id]; ok && tk > v[1] {
					bad = append(bad, fmt.Sprintf("%s: key %d present under token %d, tombstone %d (resurrected)", tb, id, v[1], tk))
				}
			}
		}
		for _, id := range []int64{5, 6} {
			if after.rows[tb][id] != base.rows[tb][id] {
				bad = append(bad, fmt.Sprintf("%s: row %d %v -> %v (newer token's row changed or removed)", tb, id, base.rows[tb][id], after.rows[tb][id]))
			}
		}
		for id, v := range after.rows[tb] {
			if b, ok := base.rows[tb][id]; ok && v[1] < b[1] {
				bad = append(bad, fmt.Sprintf("%s: row %d token lowered %d -> %d", tb, id, b[1], v[1]))
			}
		}
		for id, tk := range base.tombs[tb] {
			if a, ok := after.tombs[tb][id]; !ok || a < tk {
				bad = append(bad, fmt.Sprintf("%s: tombstone %d lowered/removed %d -> %d (present %v)", tb, id, tk, a, ok))
			}
		}
	}
	return bad
}

// dsdCores: {T} table, {TOK} the stale token (or 0), {K} a key: 20 (tombstoned 70),
// 9 (own row, 30), 8 (row at 0), 7 (absent). Each core is a list of statements.
var dsdCores = [][]string{
	{"INSERT INTO {T} (id, balance, fence_token, version) VALUES ({K}, 1, {TOK}, 1)"},
	{"INSERT INTO {T} (id, balance, fence_token, version) VALUES ({K}, 1, {TOK}, 1) ON CONFLICT (id) DO UPDATE SET balance = 2, fence_token = {TOK}, version = {T}.version + 1"},
	{"INSERT INTO {T} (id, balance, fence_token, version) VALUES (9, 1, {TOK}, 1) ON CONFLICT (id) DO UPDATE SET id = {K}, fence_token = {TOK}, version = {T}.version + 1"},
	{"UPDATE {T} SET id = {K}, fence_token = {TOK}, version = version + 1 WHERE id = 9"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9", "UPDATE {T} SET id = {K}, fence_token = {TOK}, version = version + 1 WHERE id = 9"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9", "DELETE FROM {T} WHERE id = 9", "INSERT INTO {T} (id, balance, fence_token, version) VALUES (9, 1, 0, 1)"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9", "WITH d AS (DELETE FROM {T} WHERE id = 9 RETURNING id) INSERT INTO {T} (id, balance, fence_token, version) SELECT id, 1, 0, 1 FROM d"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9", "WITH d AS (DELETE FROM {T} WHERE id = 9 RETURNING id) INSERT INTO {T} (id, balance, fence_token, version) SELECT {K}, 1, {TOK}, 1 FROM d"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9", "WITH i AS (INSERT INTO {T} (id, balance, fence_token, version) VALUES (9, 1, 0, 1) RETURNING id) DELETE FROM {T} WHERE id = 9"},
	{"WITH u AS (UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9 RETURNING id) INSERT INTO {T} (id, balance, fence_token, version) SELECT {K}, 1, {TOK}, 1 FROM u"},
	{"WITH u AS (UPDATE {T} SET id = {K}, fence_token = {TOK}, version = version + 1 WHERE id = 9 RETURNING id) INSERT INTO {T} (id, balance, fence_token, version) VALUES (9, 1, 0, 1)"},
	{"MERGE INTO {T} t USING (VALUES ({K}), (9)) s(k) ON t.id = s.k WHEN MATCHED THEN UPDATE SET id = {K}, fence_token = {TOK}, version = t.version + 1 WHEN NOT MATCHED THEN INSERT (id, balance, fence_token, version) VALUES (s.k, 1, {TOK}, 1)"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9", "MERGE INTO {T} t USING (SELECT 9 AS k UNION ALL SELECT {K}) s ON t.id = s.k WHEN MATCHED THEN DELETE WHEN NOT MATCHED THEN INSERT (id, balance, fence_token, version) VALUES (s.k, 1, {TOK}, 1)"},
	{"MERGE INTO {T} t USING src s ON t.id = s.k WHEN NOT MATCHED THEN INSERT (id, balance, fence_token, version) VALUES (s.k, s.v, {TOK}, 1) WHEN MATCHED THEN UPDATE SET balance = s.v, fence_token = {TOK}, version = t.version + 1"},
	{"MERGE INTO {T} t USING (VALUES (9, {K})) s(k, n) ON t.id = s.k WHEN MATCHED AND t.fence_token <= {TOK} THEN UPDATE SET id = s.n, fence_token = {TOK}, version = t.version + 1"},
	{"INSERT INTO {T} (id, balance, fence_token, version) SELECT g, 1, {TOK}, 1 FROM generate_series(19, 21) g ON CONFLICT DO NOTHING"},
	{"INSERT INTO {T} (id, balance, fence_token, version) SELECT id, 1, {TOK}, 1 FROM public.fencedsql_tomb_{T}"},
	{"INSERT INTO {T} (id, balance, fence_token, version) SELECT id + 0, 1, {TOK}, 1 FROM public.fencedsql_tomb_{T} ON CONFLICT (id) DO UPDATE SET fence_token = {TOK}, version = {T}.version + 1"},
	{"COPY {T} (id, balance, fence_token, version) FROM STDIN"},
	{"CREATE TEMP TABLE {T} (id bigint PRIMARY KEY, balance bigint, fence_token bigint, version bigint)", "SET LOCAL search_path = pg_temp, public", "INSERT INTO public.{T} (id, balance, fence_token, version) VALUES ({K}, 1, {TOK}, 1)"},
	{"SAVEPOINT a", "UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9", "RELEASE SAVEPOINT a", "SAVEPOINT b", "DELETE FROM {T} WHERE id = 9", "ROLLBACK TO SAVEPOINT b", "UPDATE {T} SET id = {K}, fence_token = {TOK}, version = version + 1 WHERE id = 9"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id IN (8, 9)", "UPDATE {T} SET id = CASE id WHEN 9 THEN {K} ELSE 9 END, fence_token = {TOK}, version = version + 1 WHERE id IN (8, 9)"},
	{"UPDATE {T} SET id = id + 11, fence_token = {TOK}, version = version + 1 WHERE id = 9"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 9", "UPDATE {T} SET id = id + 11, fence_token = {TOK}, version = version + 1 WHERE id = 9"},
	{"UPDATE {T} SET fence_token = {TOK}, version = version + 1 WHERE id = 8", "UPDATE {T} SET id = 9 + 0 * id, fence_token = 90, version = version + 1 WHERE id = 9", "UPDATE {T} SET id = 9, fence_token = {TOK}, version = version + 1 WHERE id = 8"},
}

var dsdSettings = []string{
	"",
	"SET LOCAL lock_timeout = '1ms'",
	"SET LOCAL statement_timeout = '5s'",
	"SET LOCAL plpgsql.variable_conflict = 'use_variable'",
	"SET LOCAL search_path = pg_temp, public",
	"SET LOCAL TimeZone = 'Pacific/Kiritimati'",
	"SET LOCAL enable_indexscan = off; SET LOCAL enable_bitmapscan = off",
	"SET LOCAL plan_cache_mode = force_generic_plan",
	"SET LOCAL jit = on; SET LOCAL jit_above_cost = 0",
	"SET CONSTRAINTS ALL DEFERRED",
}

var dsdLevels = []string{"READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE", "READ UNCOMMITTED"}

type dsdTrial struct {
	level, setting string
	stmts          []string
	copyRow        string
	label          string
}

func dsdGen(r *rand.Rand) dsdTrial {
	ci := r.Intn(len(dsdCores))
	core := dsdCores[ci]
	tb := []string{"acc", "accp"}[r.Intn(2)]
	tok := []string{strconv.Itoa(dsdStale), "0"}[r.Intn(2)]
	k := []string{"20", "20", "9", "8", "7"}[r.Intn(5)]
	rep := strings.NewReplacer("{T}", tb, "{TOK}", tok, "{K}", k)
	tr := dsdTrial{level: dsdLevels[r.Intn(len(dsdLevels))], setting: dsdSettings[r.Intn(len(dsdSettings))]}
	for _, s := range core {
		tr.stmts = append(tr.stmts, rep.Replace(s))
	}
	if strings.HasPrefix(core[0], "COPY") {
		tr.copyRow = k + "\t1\t" + tok + "\t1\n"
	}
	tr.label = fmt.Sprintf("core=%d table=%s tok=%s key=%s", ci, tb, tok, k)
	return tr
}

func dsdRun(ctx context.Context, c *sql.Conn, base dsdState, tr dsdTrial) (bad []string, err error) {
	if _, err := c.ExecContext(ctx, "BEGIN ISOLATION LEVEL "+tr.level); err != nil {
		return nil, err
	}
	defer c.ExecContext(context.Background(), "ROLLBACK")
	if tr.setting != "" {
		if _, err := c.ExecContext(ctx, tr.setting); err != nil {
			return nil, fmt.Errorf("setting: %w", err)
		}
	}
	for _, s := range tr.stmts {
		if tr.copyRow != "" && strings.HasPrefix(s, "COPY") {
			err = c.Raw(func(dc any) error {
				pc := dc.(*stdlib.Conn).Conn().PgConn()
				_, err := pc.CopyFrom(ctx, strings.NewReader(tr.copyRow), s)
				return err
			})
		} else {
			_, err = c.ExecContext(ctx, s)
		}
		if err != nil {
			return nil, err
		}
	}
	if _, err := c.ExecContext(ctx, "SET CONSTRAINTS ALL IMMEDIATE"); err != nil {
		return nil, err
	}
	if _, err := c.ExecContext(ctx, "SET LOCAL search_path = public"); err != nil {
		return nil, err
	}
	after, err := dsdRead(ctx, c)
	if err != nil {
		return nil, fmt.Errorf("oracle read: %w", err)
	}
	return dsdJudge(base, after), nil
}

// TestPlainStatementsKeepDeletedKeysGenerated: the generator over the installed guard.
func TestPlainStatementsKeepDeletedKeysGenerated(t *testing.T) {
	raw, dsn := dsdSetup(t)
	// a user's deferred constraint trigger (trusted DDL, the application's code) that
	// writes acc with the stale token when key 7 is inserted
	rawWith(t, dsn, `CREATE FUNCTION dsd_def() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
  IF NEW.id = 7 THEN
    INSERT INTO public.acc (id, balance, fence_token, version) VALUES (20, 5, `+strconv.Itoa(dsdStale)+`, 1) ON CONFLICT DO NOTHING;
  END IF;
  RETURN NULL;
END $$`, "CREATE CONSTRAINT TRIGGER dsd_def AFTER INSERT ON acc DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION dsd_def()")
	ctx := context.Background()
	base, err := dsdRead(ctx, raw)
	if err != nil {
		t.Fatal(err)
	}
	if len(base.tombs["acc"]) == 0 || len(base.tombs["accp"]) == 0 {
		t.Fatalf("no tombstones seeded: %v", base.tombs)
	}
	c, err := raw.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer c.Close()
	seed, n := dsdKnobs(t, 200, 4000)
	r := rand.New(rand.NewSource(seed))
	stats := map[string]int{}
	var fails []string
	for i := 0; i < n; i++ {
		tr := dsdGen(r)
		tctx, cancel := context.WithTimeout(ctx, 10*time.Second)
		bad, err := dsdRun(tctx, c, base, tr)
		cancel()
		if len(bad) > 0 {
			fails = append(fails, fmt.Sprintf("FAIL-OPEN [%s] level=%s setting=%q stmts=%q: %s", tr.label, tr.level, tr.setting, tr.stmts, strings.Join(bad, "; ")))
		}
		if err != nil {
			msg := err.Error()
			if i := strings.Index(msg, "(SQLSTATE"); i >= 0 {
				msg = msg[i:]
			}
			stats["err "+msg]++
			if os.Getenv("FENCEDSQL_SCHEDULES_LOG") != "" {
				t.Logf("[%s] %s %q: %v", tr.label, tr.level, tr.stmts, err)
			}
		} else {
			stats["accepted"]++
		}
		// the state must be unchanged after the rollback
		now, err := dsdRead(ctx, raw)
		if err != nil {
			t.Fatal(err)
		}
		if b := dsdJudge(base, now); len(b) > 0 {
			t.Fatalf("state changed after rollback of [%s]: %v", tr.label, b)
		}
	}
	t.Logf("stats: %v", stats)
	if len(fails) > 0 {
		if len(fails) > 10 {
			fails = fails[:10]
		}
		t.Fatalf("%d violations, first: \n%s", len(fails), strings.Join(fails, "\n"))
	}
}

// Concurrent schedules: B (the newer holder, token 90, through the wrapper or plain)
// deletes or re-keys away key k (a row under 30); A (the stale holder, token 30,
// plain or through the wrapper) re-creates k: INSERT, upsert, MERGE, re-key onto k,
// COPY. Isolation levels of both vary; three interleavings. Oracle once both ended:
// when B committed its DELETE/move, k is absent or its row carries a token >= 90, and
// k's tombstone holds >= 90.

type dsdSched struct {
	table, aLevel, bLevel, bKind, aKind string
	aWrapper                            bool
	order                               int
}

var dsdBKinds = []string{"wrap1", "wrap2", "plain", "rekey", "mergedel"}
var dsdAKinds = []string{"insert", "upsert", "merge", "rekey", "copy", "upsertrekey", "ctedelins"}

func dsdAStmts(kind, tb string, k, spare int) []string {
	ks, sp := strconv.Itoa(k), strconv.Itoa(spare)
	switch kind {
	case "insert":
		return []string{"INSERT INTO " + tb + " (id, balance, fence_token, version) VALUES (" + ks + ", 7, 30, 1)"}
	case "upsert":
		return []string{"INSERT INTO " + tb + " (id, balance, fence_token, version) VALUES (" + ks + ", 7, 30, 1) ON CONFLICT (id) DO UPDATE SET balance = 7, fence_token = 30, version = " + tb + ".version + 1"}
	case "merge":
		return []string{"MERGE INTO " + tb + " t USING (VALUES (" + ks + ")) s(k) ON t.id = s.k WHEN MATCHED THEN UPDATE SET balance = 7, fence_token = 30, version = t.version + 1 WHEN NOT MATCHED THEN INSERT (id, balance, fence_token, version) VALUES (s.k, 7, 30, 1)"}
	case "rekey":
		return []string{"UPDATE " + tb + " SET id = " + ks + ", balance = 7, fence_token = 30, version = version + 1 WHERE id = " + sp}
	case "upsertrekey":
		return []string{"INSERT INTO " + tb + " (id, balance, fence_token, version) VALUES (" + sp + ", 7, 30, 1) ON CONFLICT (id) DO UPDATE SET id = " + ks + ", balance = 7, fence_token = 30, version = " + tb + ".version + 1"}
	case "ctedelins":
		return []string{"UPDATE " + tb + " SET fence_token = 30, version = version + 1 WHERE id = " + sp,
			"WITH d AS (DELETE FROM " + tb + " WHERE id = " + sp + " RETURNING id) INSERT INTO " + tb + " (id, balance, fence_token, version) SELECT " + ks + ", 7, 30, 1 FROM d"}
	case "copy":
		return []string{"COPY " + tb + " (id, balance, fence_token, version) FROM STDIN"}
	}
	panic(kind)
}

func dsdExec(ctx context.Context, c *sql.Conn, q string, copyRow string) error {
	if strings.HasPrefix(q, "COPY") {
		return c.Raw(func(dc any) error {
			_, err := dc.(*stdlib.Conn).Conn().PgConn().CopyFrom(ctx, strings.NewReader(copyRow), q)
			return err
		})
	}
	_, err := c.ExecContext(ctx, q)
	return err
}

func TestConcurrentDeleteRecreateSchedules(t *testing.T) {
	dsn := testdb.Postgres(t)
	cols := "(id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"
	raw := rawWith(t, dsn,
		"CREATE TABLE cacc "+cols,
		"CREATE TABLE caccp "+cols+" PARTITION BY RANGE (id)",
		"CREATE TABLE caccp_lo PARTITION OF caccp FOR VALUES FROM (0) TO (5000)",
		"CREATE TABLE caccp_hi PARTITION OF caccp FOR VALUES FROM (5000) TO (1000000)")
	dsdCheck(t, raw, dsn, "cacc")
	dsdCheck(t, raw, dsn, "caccp")
	wrapB := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=cacc,caccp")
	wrapA := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=cacc,caccp")
	ctx := context.Background()
	seed, n := dsdKnobs(t, 80, 1500)
	r := rand.New(rand.NewSource(seed))
	levels := []string{"READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"}
	stats := map[string]int{}
	var fails []string
	for i := 0; i < n; i++ {
		s := dsdSched{table: []string{"cacc", "caccp"}[r.Intn(2)], aLevel: levels[r.Intn(3)], bLevel: levels[r.Intn(3)],
			bKind: dsdBKinds[r.Intn(len(dsdBKinds))], aKind: dsdAKinds[r.Intn(len(dsdAKinds))], aWrapper: r.Intn(4) == 0, order: r.Intn(3)}
		if s.aWrapper && (s.aKind == "copy" || s.aKind == "ctedelins" || s.aKind == "merge") {
			s.aWrapper = false
		}
		k, spare, away := 100+i, 2500+i, 6000+i
		tb := s.table
		if _, err := raw.ExecContext(ctx, fmt.Sprintf("INSERT INTO %s (id, balance, fence_token, version) VALUES (%d, 1, 30, 1), (%d, 1, 0, 1)", tb, k, spare)); err != nil {
			t.Fatal(err)
		}
		label := fmt.Sprintf("%+v k=%d", s, k)
		// B's connection and statements
		var bConn *sql.Conn
		var bStmts []string
		bCtx := ctx
		var err error
		if strings.HasPrefix(s.bKind, "wrap") {
			bCtx = fencedsql.WithToken(ctx, 90)
			bConn, err = wrapB.Conn(bCtx)
			if s.bKind == "wrap1" {
				bStmts = []string{fmt.Sprintf("DELETE FROM %s WHERE id = %d", tb, k)}
			} else {
				bStmts = []string{fmt.Sprintf("DELETE FROM %s WHERE id IN (SELECT %d)", tb, k)}
			}
		} else {
			bConn, err = raw.Conn(ctx)
			switch s.bKind {
			case "plain":
				bStmts = []string{fmt.Sprintf("UPDATE %s SET fence_token = 90, version = version + 1 WHERE id = %d", tb, k), fmt.Sprintf("DELETE FROM %s WHERE id = %d", tb, k)}
			case "rekey":
				bStmts = []string{fmt.Sprintf("UPDATE %s SET fence_token = 90, version = version + 1 WHERE id = %d", tb, k), fmt.Sprintf("UPDATE %s SET id = %d, fence_token = 90, version = version + 1 WHERE id = %d", tb, away, k)}
			case "mergedel":
				bStmts = []string{fmt.Sprintf("UPDATE %s SET fence_token = 90, version = version + 1 WHERE id = %d", tb, k), fmt.Sprintf("MERGE INTO %s t USING (VALUES (%d)) s(k) ON t.id = s.k WHEN MATCHED THEN DELETE", tb, k)}
			}
		}
		if err != nil {
			t.Fatal(err)
		}
		var aConn *sql.Conn
		aCtx := ctx
		if s.aWrapper {
			aCtx = fencedsql.WithToken(ctx, 30)
			aConn, err = wrapA.Conn(aCtx)
		} else {
			aConn, err = raw.Conn(ctx)
		}
		if err != nil {
			t.Fatal(err)
		}
		aStmts := dsdAStmts(s.aKind, tb, k, spare)
		copyRow := fmt.Sprintf("%d\t7\t30\t1\n", k)
		tctx, cancel := context.WithTimeout(ctx, 15*time.Second)
		bCtx2, aCtx2 := tctx, tctx
		if strings.HasPrefix(s.bKind, "wrap") {
			bCtx2 = fencedsql.WithToken(tctx, 90)
		}
		if s.aWrapper {
			aCtx2 = fencedsql.WithToken(tctx, 30)
		}
		_ = bCtx
		_ = aCtx
		var bErr, aErr error
		var aTx, bTx *sql.Tx
		runB := func() error {
			for _, q := range bStmts {
				var err error
				if bTx != nil {
					_, err = bTx.ExecContext(bCtx2, q)
				} else {
					_, err = bConn.ExecContext(bCtx2, q)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
		runA := func() error {
			for _, q := range aStmts {
				var err error
				if aTx != nil {
					_, err = aTx.ExecContext(aCtx2, q)
				} else {
					err = dsdExec(aCtx2, aConn, q, copyRow)
				}
				if err != nil {
					return err
				}
			}
			return nil
		}
		lv := map[string]sql.IsolationLevel{"READ COMMITTED": sql.LevelReadCommitted, "REPEATABLE READ": sql.LevelRepeatableRead, "SERIALIZABLE": sql.LevelSerializable}
		begin := func(c *sql.Conn, cctx context.Context, level string) error {
			if c == bConn && strings.HasPrefix(s.bKind, "wrap") || c == aConn && s.aWrapper {
				tx, err := c.BeginTx(cctx, &sql.TxOptions{Isolation: lv[level]})
				if c == bConn {
					bTx = tx
				} else {
					aTx = tx
				}
				return err
			}
			_, err := c.ExecContext(cctx, "BEGIN ISOLATION LEVEL "+level)
			return err
		}
		// begin both; A takes its snapshot
		if err := begin(bConn, bCtx2, s.bLevel); err != nil {
			t.Fatalf("%s: B begin: %v", label, err)
		}
		if err := begin(aConn, aCtx2, s.aLevel); err != nil {
			t.Fatalf("%s: A begin: %v", label, err)
		}
		snap := aConn.QueryRowContext
		if aTx != nil {
			snap = aTx.QueryRowContext
		}
		var nrows int
		if err := snap(aCtx2, "SELECT count(*) FROM "+tb).Scan(&nrows); err != nil {
			t.Fatalf("%s: A snapshot: %v", label, err)
		}
		commit := func(c *sql.Conn, cctx context.Context, failed error) error {
			tx := aTx
			if c == bConn {
				tx = bTx
			}
			if tx != nil {
				if failed != nil {
					tx.Rollback()
					return failed
				}
				return tx.Commit()
			}
			if failed != nil {
				c.ExecContext(context.Background(), "ROLLBACK")
				return failed
			}
			_, err := c.ExecContext(cctx, "COMMIT")
			return err
		}
		switch s.order {
		case 0: // B deletes and commits, then A writes and commits
			bErr = commit(bConn, bCtx2, runB())
			aErr = commit(aConn, aCtx2, runA())
		case 1: // B deletes; A writes (may wait); B commits; A commits
			bErr = runB()
			done := make(chan error, 1)
			go func() { done <- runA() }()
			time.Sleep(30 * time.Millisecond)
			bErr = commit(bConn, bCtx2, bErr)
			aErr = commit(aConn, aCtx2, <-done)
		case 2: // A writes; B deletes (may wait); A commits; B commits
			aErr = runA()
			done := make(chan error, 1)
			go func() { done <- runB() }()
			time.Sleep(30 * time.Millisecond)
			aErr = commit(aConn, aCtx2, aErr)
			bErr = commit(bConn, bCtx2, <-done)
		}
		cancel()
		bConn.Close()
		aConn.Close()
		// oracle
		var tok sql.NullInt64
		err = raw.QueryRow(fmt.Sprintf("SELECT max(fence_token) FROM %s WHERE id = %d", tb, k)).Scan(&tok)
		if err != nil {
			t.Fatal(err)
		}
		var tomb sql.NullInt64
		if err := raw.QueryRow(fmt.Sprintf("SELECT max(fence_token) FROM fencedsql_tomb_%s WHERE id = %d", tb, k)).Scan(&tomb); err != nil {
			t.Fatal(err)
		}
		var cnt int
		raw.QueryRow(fmt.Sprintf("SELECT count(*) FROM %s WHERE id = %d", tb, k)).Scan(&cnt)
		outcome := fmt.Sprintf("B=%v A=%v", bErr == nil, aErr == nil)
		for who, e := range map[string]error{"A": aErr, "B": bErr} {
			if e == nil || (who == "A" && !s.aWrapper) || (who == "B" && !strings.HasPrefix(s.bKind, "wrap")) {
				continue
			}
			cls := "other"
			switch {
			case errors.Is(e, fencedsql.ErrFenced):
				cls = "ErrFenced"
			case errors.Is(e, fencedsql.ErrDuplicate):
				cls = "ErrDuplicate"
			case strings.Contains(e.Error(), "40001"):
				cls = "40001"
			case strings.Contains(e.Error(), "40P01"):
				cls = "40P01"
			}
			stats["wrapper "+who+" "+cls]++
			if cls == "other" || os.Getenv("FENCEDSQL_SCHEDULES_LOGCLS") == cls {
				t.Logf("%s wrapper %s: %s: %v", who, cls, label, e)
			}
		}
		stats[outcome]++
		var bad []string
		if cnt > 1 {
			bad = append(bad, fmt.Sprintf("key %d twice", k))
		}
		if bErr == nil {
			if !tomb.Valid || tomb.Int64 < 90 {
				bad = append(bad, fmt.Sprintf("B's delete committed but tombstone %v", tomb))
			}
			if tok.Valid && tok.Int64 < 90 {
				bad = append(bad, fmt.Sprintf("key %d back under token %d after B (90) deleted it (A err %v)", k, tok.Int64, aErr))
			}
		}
		if tok.Valid && tomb.Valid && tomb.Int64 > tok.Int64 {
			bad = append(bad, fmt.Sprintf("key %d present under %d with tombstone %d", k, tok.Int64, tomb.Int64))
		}
		if len(bad) > 0 {
			fails = append(fails, fmt.Sprintf("FAIL-OPEN %s: %s; bErr=%v aErr=%v", label, strings.Join(bad, "; "), bErr, aErr))
		}
		if os.Getenv("FENCEDSQL_SCHEDULES_LOG") != "" {
			t.Logf("%s: bErr=%v aErr=%v", label, bErr, aErr)
		}
	}
	t.Logf("stats %v", stats)
	if len(fails) > 0 {
		if len(fails) > 10 {
			fails = fails[:10]
		}
		t.Fatalf("%d violations:\n%s", len(fails), strings.Join(fails, "\n"))
	}
}

// dsdKnobs returns the generators' seed (FENCEDSQL_SCHEDULES_SEED, else the clock) and
// how many schedules to run: FENCEDSQL_SCHEDULES_ITERS, else long under FENCEDSQL_LONG=1,
// else ci (the CI form). A knob that does not parse fails the test.
func dsdKnobs(t *testing.T, ci, long int) (seed int64, n int) {
	t.Helper()
	if testdb.Long() {
		ci = long
	}
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), ci)
	t.Logf("seed %d", k.Seed)
	return k.Seed, k.Iters
}
