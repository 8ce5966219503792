package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const stockCols = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"

// TestGuardObjectsOfAnotherTableNotWritersOfWordNamedTable (red-team rt56a F1): the
// door checks' word test read the stock tombstone function and absence recorder of
// every guarded table (INSERT … AS t … ON CONFLICT … DO UPDATE SET … EXCLUDED …; IF NOT
// FOUND THEN …; NEW., OLD.) as writers of a guarded table named like one of their
// words, and the table's own tombstone function as a trigger that makes one of its
// keys exist again (keyMakers): every write of such a table was refused with
// ErrSchema and fencedsql-schema never reported it OK. A stock guard object, judged
// whole, writes its tombstone table only. The generator picks the words and which
// table is guarded first. Want: -apply OK, the current token's write accepted, a
// stale one ErrFenced, the other table's Check still OK.
func TestGuardObjectsOfAnotherTableNotWritersOfWordNamedTable(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn)
	rng := rand.New(rand.NewSource(5609))
	words := []string{"t", "excluded", "conflict", "update", "nothing", "found", "values", "into", "set", "new", "old", "then", "if", "do", "from", "where", "begin"}
	rng.Shuffle(len(words), func(i, j int) { words[i], words[j] = words[j], words[i] })
	for trial, word := range words[:4] {
		sch := fmt.Sprintf("stockwords_%d", trial)
		other, named := sch+".accounts", sch+"."+word
		quoted := sch + `."` + word + `"`
		testdb.Exec(t, raw, "CREATE SCHEMA "+sch, "CREATE TABLE "+other+stockCols, "CREATE TABLE "+quoted+stockCols)
		order := []string{other, named}
		if rng.Intn(2) == 0 {
			order[0], order[1] = order[1], order[0]
		}
		for _, tbl := range order {
			if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: tbl}); err != nil {
				t.Fatal(err, fencetest.ReportProblems(reps))
			}
		}
		for _, tbl := range order {
			if reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: tbl}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
				t.Errorf("trial %d: %s (the tables guarded in the order %q): Check after -apply: %v %.300q", trial, tbl, order, err, fencetest.ReportProblems(reps))
			}
		}
		pool := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables="+other+","+named)
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO "+quoted+" (id, balance) VALUES (1, 1)"); err != nil {
			t.Errorf("trial %d: table %q: the current token's INSERT: %.400v", trial, word, err)
		} else if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 90), "UPDATE "+quoted+" SET balance = 2 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("trial %d: table %q: stale UPDATE: %v; want ErrFenced", trial, word, err)
		}
		pool.Close()
	}
}

// TestUserBodiesWritingWordNamedTableStillDoors: what rt56a F1's fix recognises is
// only the stock guard object as installed, whole. A user's trigger on another table,
// a user's function, a stock tombstone function changed to write the table too, and
// the table's own AFTER trigger that re-inserts its rows — each writing a guarded
// table named set — are still doors of it (Check reports them; the pool refuses).
func TestUserBodiesWritingWordNamedTableStillDoors(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE SCHEMA userdoors", "CREATE TABLE userdoors.accounts"+stockCols, `CREATE TABLE userdoors."set"`+stockCols,
		"CREATE TABLE userdoors.audit (id BIGINT PRIMARY KEY)")
	for _, tbl := range []string{"userdoors.accounts", "userdoors.set"} {
		if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: tbl}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
			t.Fatal(err, fencetest.ReportProblems(reps))
		}
	}
	var tombFn string
	if err := raw.QueryRowContext(ctx, `SELECT p.oid::regprocedure::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'userdoors' AND p.proname = 'fencedsql_tombstone_accounts'`).Scan(&tombFn); err != nil {
		t.Fatal(err)
	}
	var stockBody string
	if err := raw.QueryRowContext(ctx, `SELECT prosrc FROM pg_proc WHERE oid = $1::regprocedure`, tombFn).Scan(&stockBody); err != nil {
		t.Fatal(err)
	}
	changed := strings.Replace(stockBody, "  RETURN NULL;\nEND", "  UPDATE userdoors.\"set\" SET balance = 0;\n  RETURN NULL;\nEND", 1)
	if changed == stockBody {
		t.Fatal("the stock tombstone body has no final RETURN NULL; END")
	}
	cases := []fencetest.DoorCase{
		{Name: "a user's trigger on another table",
			Setup: []string{`CREATE FUNCTION userdoors.audit_copy() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO userdoors."set" (id) VALUES (NEW.id); RETURN NULL; END$$`,
				"CREATE TRIGGER audit_copy AFTER INSERT ON userdoors.audit FOR EACH ROW EXECUTE FUNCTION userdoors.audit_copy()"},
			Kind: dialect.SideDoorTrigger, Undo: []string{"DROP TRIGGER audit_copy ON userdoors.audit", "DROP FUNCTION userdoors.audit_copy()"}},
		{Name: "a user's function",
			Setup: []string{`CREATE FUNCTION userdoors.reset_set() RETURNS void LANGUAGE plpgsql AS $$BEGIN UPDATE userdoors."set" SET balance = 0; END$$`},
			Kind:  dialect.SideDoorRoutine, Undo: []string{"DROP FUNCTION userdoors.reset_set()"}},
		{Name: "another table's tombstone function changed",
			Setup: []string{"CREATE OR REPLACE FUNCTION " + tombFn + " RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fencedsql_x$" + changed + "$fencedsql_x$"},
			Kind:  dialect.SideDoorTrigger, Undo: []string{"CREATE OR REPLACE FUNCTION " + tombFn + " RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS $fencedsql_x$" + stockBody + "$fencedsql_x$"}},
		{Name: "the table's own AFTER trigger re-inserting its rows",
			Setup: []string{`CREATE FUNCTION userdoors.reinsert() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN INSERT INTO userdoors."set" (id) VALUES (OLD.id + 1000); RETURN NULL; END$$`,
				`CREATE TRIGGER a_reinsert AFTER DELETE ON userdoors."set" FOR EACH ROW EXECUTE FUNCTION userdoors.reinsert()`},
			Kind: dialect.SideDoorOwnTrigger, Undo: []string{`DROP TRIGGER a_reinsert ON userdoors."set"`, "DROP FUNCTION userdoors.reinsert()"}},
	}
	fencetest.ExpectDoors(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "userdoors.set"},
		func() *sql.DB {
			return testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=userdoors.accounts,userdoors.set")
		},
		`UPDATE userdoors."set" SET balance = 1 WHERE id = 1`, cases)
}
