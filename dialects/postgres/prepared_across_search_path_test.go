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
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestPreparedAcrossSearchPathGenerated: an application's prepared statement outliving
// a SET search_path on its connection (docs/design.md G13, "Prepared statements across
// a change of name resolution"; red-team rt56b, held on PostgreSQL, which re-analyzes a
// prepared statement under the current search_path; the wrapper prepares its forms
// again too). A generator over (the schema a statement is prepared under: a guarded
// table with a user BEFORE UPDATE trigger, or one without; the schema a later SET
// search_path moves to; the statement; whether it ran before; the token stale or
// fresh), on the pgx driver's default query mode and on
// default_query_exec_mode=cache_describe. Oracle: the schema prepared under never
// changes; a stale execution changes no row (every column, the trigger-maintained one
// included); every error typed; a fresh execution works.
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed (time-based by default) is
// logged; the default run has 12 trials per query mode within about 4 s each (CI); the long
// form runs FENCEDSQL_SCHEDULES_ITERS trials per mode with no time budget:
//
//	FENCEDSQL_SCHEDULES_ITERS=200 go test -run '^TestPreparedAcrossSearchPathGenerated$' ./dialects/postgres/
func TestPreparedAcrossSearchPathGenerated(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 12)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=%d go test -run '^TestPreparedAcrossSearchPathGenerated$' ./dialects/postgres/)", k.Seed, k.Seed, k.Iters)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	defer cancel()
	dsn := testdb.Postgres(t)
	tbl := "(id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, touched bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"
	admin := testdb.Open(t, "pgx", dsn,
		"CREATE SCHEMA prep_x", "CREATE SCHEMA prep_y",
		"CREATE TABLE prep_x.accounts "+tbl, "CREATE TABLE prep_y.accounts "+tbl,
		"CREATE FUNCTION prep_x.touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.touched := OLD.touched + 1; RETURN NEW; END$$",
		"CREATE TRIGGER accounts_touch BEFORE UPDATE ON prep_x.accounts FOR EACH ROW EXECUTE FUNCTION prep_x.touch()")
	fencetest.Guard(t, ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "prep_x.accounts"})
	fencetest.Guard(t, ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "prep_y.accounts"})
	stmts := []struct{ name, text string }{
		{"update", "UPDATE accounts SET balance = balance + 1 WHERE id = $1"},
		{"upsert", "INSERT INTO accounts (id, balance) VALUES ($1, 5) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance"},
		{"nothing", "INSERT INTO accounts (id, balance) VALUES ($1, 5) ON CONFLICT (id) DO NOTHING"},
		{"delete", "DELETE FROM accounts WHERE id = $1"},
		{"returning", "UPDATE accounts SET balance = balance + 1 WHERE id = $1 RETURNING *"},
	}
	rng := rand.New(rand.NewSource(k.Seed))
	var problems []string
	id := 0
	for _, mode := range []string{"", "&default_query_exec_mode=cache_describe"} {
		db := testdb.Open(t, "fenced-pgx", dsn+"&search_path=prep_x&fenced_tables=accounts"+mode)
		dbY := testdb.Open(t, "fenced-pgx", dsn+"&search_path=prep_y&fenced_tables=accounts"+mode)
		start := time.Now()
		for trial := 0; trial < k.Iters && (k.ItersSet || time.Since(start) < 4*time.Second); trial++ {
			st := stmts[rng.Intn(len(stmts))]
			from, to := "prep_x", "prep_y"
			if rng.Intn(2) == 0 {
				from, to = to, from
			}
			runFirst, stale := rng.Intn(2) == 0, rng.Intn(2) == 0
			id++
			for _, pool := range []*sql.DB{db, dbY} {
				if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO accounts (id, balance) VALUES ($1, 10)", id); err != nil {
					t.Fatal(err)
				}
			}
			desc := fmt.Sprintf("mode=%q %s from=%s to=%s runFirst=%v stale=%v", mode, st.name, from, to, runFirst, stale)
			read := func(s string) string {
				var b, tc, tk, v int64
				err := admin.QueryRowContext(ctx, "SELECT balance, touched, fence_token, version FROM "+s+".accounts WHERE id = $1", id).Scan(&b, &tc, &tk, &v)
				return fmt.Sprint(b, tc, tk, v, err)
			}
			func() {
				c, err := db.Conn(ctx)
				if err != nil {
					t.Fatal(err)
				}
				defer c.Close()
				if _, err := c.ExecContext(ctx, "SET search_path = "+from); err != nil {
					t.Fatal(err)
				}
				defer func() { _, _ = c.ExecContext(ctx, "SET search_path = prep_x") }()
				s, err := c.PrepareContext(ctx, st.text)
				if err != nil {
					t.Fatalf("%s: prepare: %v", desc, err)
				}
				defer s.Close()
				if runFirst {
					if _, err := s.ExecContext(fencedsql.WithToken(ctx, 150), id+100000); err != nil && !searchPathTyped(err) {
						problems = append(problems, desc+": first run untyped: "+err.Error())
					}
				}
				if _, err := c.ExecContext(ctx, "SET search_path = "+to); err != nil {
					t.Fatal(err)
				}
				tok := uint64(200)
				if stale {
					tok = 50
				}
				bx, by := read("prep_x"), read("prep_y")
				_, err = s.ExecContext(fencedsql.WithToken(ctx, tok), id)
				ax, ay := read("prep_x"), read("prep_y")
				if err != nil && !searchPathTyped(err) {
					problems = append(problems, fmt.Sprintf("%s: untyped %T %v", desc, err, err))
				}
				if (from == "prep_x" && ax != bx) || (from == "prep_y" && ay != by) {
					problems = append(problems, fmt.Sprintf("%s: the schema prepared under changed: x %s -> %s, y %s -> %s (err %v)", desc, bx, ax, by, ay, err))
				}
				if stale && (ax != bx || ay != by) {
					problems = append(problems, fmt.Sprintf("%s: stale write changed rows: x %s -> %s, y %s -> %s (err %v)", desc, bx, ax, by, ay, err))
				}
				if !stale && err != nil {
					problems = append(problems, fmt.Sprintf("%s: fresh refused: %v", desc, err))
				}
			}()
		}
	}
	if len(problems) > 0 {
		t.Errorf("seed %d:\n%s", k.Seed, strings.Join(problems, "\n"))
	}
}

// searchPathTyped reports whether err is one of the library's typed refusals.
func searchPathTyped(err error) bool {
	for _, e := range []error{fencedsql.ErrFenced, fencedsql.ErrNoToken, fencedsql.ErrSchema, fencedsql.ErrUnsupported, fencedsql.ErrDuplicate, fencedsql.ErrGuard, fencedsql.ErrVersionConflict} {
		if errors.Is(err, e) {
			return true
		}
	}
	return false
}
