package postgres_test

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

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestPreparedAcrossPoolDDLShadow (red-team rt57a F1): a same-named table created
// through the fenced pool itself (fenced_allow=ddl) in a schema earlier on the
// search_path moves what an unqualified guarded name resolves to, for every connection.
// PostgreSQL does not analyse a prepared statement again when a new table appears
// earlier on the path (no table it uses changed), and pgx keeps one per text it ran:
// before the fix, the application's prepared statements and the pgx-cached texts kept
// writing the old table while every verdict was asked of the new one. Now each
// connection, before its next statement after the move, prepares its forms again and
// has the driver forget its cached statements (driverstatements.go). Generator: the
// statement × how the shadow appears (CREATE TABLE on the same connection, on another,
// in a transaction of another committed before, CREATE TABLE … LIKE, CREATE SCHEMA …
// CREATE TABLE, and a SET search_path control) × stale/fresh × a user trigger on the
// old table. Oracle (G13): a prepared execution writes the table an unprepared
// statement on that connection writes now (the old table never changes after the
// move), a stale execution changes no row, every error is typed, a fresh one works.
func TestPreparedAcrossPoolDDLShadow(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 8)
	t.Logf("seed %d", k.Seed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testdb.Postgres(t)
	cols := "(id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, touched bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)"
	admin := testdb.Open(t, "pgx", dsn)
	stmts := []struct{ name, text string }{
		{"update", "UPDATE accounts SET balance = balance + 1 WHERE id = $1"},
		{"upsert", "INSERT INTO accounts (id, balance) VALUES ($1, 5) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance"},
		{"nothing", "INSERT INTO accounts (id, balance) VALUES ($1, 5) ON CONFLICT (id) DO NOTHING"},
		{"delete", "DELETE FROM accounts WHERE id = $1"},
		{"returning", "UPDATE accounts SET balance = balance + 1 WHERE id = $1 RETURNING *"},
	}
	moves := []string{"create-same-conn", "create-other-conn", "create-in-tx-other-conn", "like-other-conn", "schema-with-table-other-conn", "control-set-path"}
	rng := rand.New(rand.NewSource(k.Seed))
	var problems []string
	start := time.Now()
	for trial := 0; trial < k.Iters && (k.ItersSet || time.Since(start) < 40*time.Second); trial++ {
		st := stmts[rng.Intn(len(stmts))]
		move := moves[rng.Intn(len(moves))]
		stale := trial%2 == 1 // every other trial fresh: the failure shows on fresh writes
		trigger := rng.Intn(2) == 0
		a, b := fmt.Sprintf("shadowddl_a%d", trial), fmt.Sprintf("shadowddl_b%d", trial)
		desc := fmt.Sprintf("trial %d: %s move=%s stale=%v trigger-on-old=%v", trial, st.name, move, stale, trigger)
		if move == "schema-with-table-other-conn" {
			a = fmt.Sprintf("shadowddl_c%d", trial) // created by the move itself, with its table
		} else {
			testdb.Exec(t, admin, "CREATE SCHEMA "+a, "CREATE TABLE "+a+".staging "+cols)
		}
		testdb.Exec(t, admin, "CREATE SCHEMA "+b, "CREATE TABLE "+b+".accounts "+cols)
		if trigger {
			testdb.Exec(t, admin,
				"CREATE FUNCTION "+b+".touch() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN NEW.touched := OLD.touched + 1; RETURN NEW; END$$",
				"CREATE TRIGGER accounts_touch BEFORE UPDATE ON "+b+".accounts FOR EACH ROW EXECUTE FUNCTION "+b+".touch()")
		}
		fencetest.Guard(t, ctx, admin, postgres.Dialect, schema.GuardSpec{Table: b + ".accounts"})
		path := a + ",public," + b
		if move == "control-set-path" {
			path = b
		}
		db := testdb.Open(t, "fenced-pgx", dsn+"&search_path="+path+"&fenced_tables=accounts&fenced_allow=ddl")
		db.SetMaxOpenConns(2)
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO accounts (id, balance) VALUES (1, 10)"); err != nil {
			t.Fatalf("%s: seed row: %v", desc, err)
		}
		read := func(s string) string {
			var bal, tc, tk, v int64
			err := admin.QueryRowContext(ctx, "SELECT balance, touched, fence_token, version FROM "+s+".accounts WHERE id = 1").Scan(&bal, &tc, &tk, &v)
			if err == sql.ErrNoRows {
				return "absent"
			}
			return fmt.Sprint(bal, " ", tc, " ", tk, " ", v, " ", err)
		}
		func() {
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			s, err := c.PrepareContext(ctx, st.text)
			if err != nil {
				t.Fatalf("%s: prepare: %v", desc, err)
			}
			defer s.Close()
			if _, err := s.ExecContext(fencedsql.WithToken(ctx, 150), 99); err != nil {
				t.Fatalf("%s: first run: %v", desc, err)
			}
			// The same unprepared text once before the move: pgx's statement cache
			// (its default query mode) keeps the server statement by text.
			if _, err := c.ExecContext(fencedsql.WithToken(ctx, 150), "UPDATE accounts SET balance = balance + 1000 WHERE id = $1", 1); err != nil {
				t.Fatalf("%s: unprepared before the move: %v", desc, err)
			}
			var other *sql.Conn
			if strings.Contains(move, "other") {
				if other, err = db.Conn(ctx); err != nil {
					t.Fatal(err)
				}
				defer other.Close()
			}
			switch move {
			case "create-same-conn":
				_, err = c.ExecContext(ctx, "CREATE TABLE "+a+".accounts "+cols)
			case "create-other-conn":
				_, err = other.ExecContext(ctx, "CREATE TABLE "+a+".accounts "+cols)
			case "create-in-tx-other-conn":
				var tx *sql.Tx
				if tx, err = other.BeginTx(ctx, nil); err == nil {
					if _, err = tx.ExecContext(ctx, "CREATE TABLE "+a+".accounts "+cols); err == nil {
						err = tx.Commit()
					} else {
						_ = tx.Rollback()
					}
				}
			case "like-other-conn":
				_, err = other.ExecContext(ctx, "CREATE TABLE "+a+".accounts (LIKE "+a+".staging INCLUDING ALL)")
			case "schema-with-table-other-conn":
				_, err = other.ExecContext(ctx, "CREATE SCHEMA "+a+" CREATE TABLE accounts "+cols)
			case "control-set-path":
				testdb.Exec(t, admin, "CREATE TABLE "+a+".accounts "+cols)
				_, err = c.ExecContext(ctx, "SET search_path = "+a+","+b)
			}
			if err != nil {
				t.Fatalf("%s: move: %v", desc, err)
			}
			fencetest.Guard(t, ctx, admin, postgres.Dialect, schema.GuardSpec{Table: a + ".accounts"})
			testdb.Exec(t, admin, "INSERT INTO "+a+".accounts (id, balance, fence_token) VALUES (1, 10, 100)")
			tok := uint64(200)
			if stale {
				tok = 50
			}
			ba, bb := read(a), read(b)
			_, err = s.ExecContext(fencedsql.WithToken(ctx, tok), 1)
			aa, ab := read(a), read(b)
			if err != nil && !searchPathTyped(err) {
				problems = append(problems, fmt.Sprintf("%s: untyped %T %v", desc, err, err))
			}
			if ab != bb {
				problems = append(problems, fmt.Sprintf("%s: the old table %s.accounts (no longer what the name resolves to) changed: %s -> %s (new %s.accounts %s -> %s; err %v)", desc, b, bb, ab, a, ba, aa, err))
			}
			if stale && (aa != ba || ab != bb) {
				problems = append(problems, fmt.Sprintf("%s: stale write changed rows: new %s -> %s, old %s -> %s (err %v)", desc, ba, aa, bb, ab, err))
			}
			if !stale && err != nil {
				problems = append(problems, fmt.Sprintf("%s: fresh refused: %v", desc, err))
			}
			if !stale && move != "control-set-path" {
				b2a, b2b := read(a), read(b)
				_, uerr := c.ExecContext(fencedsql.WithToken(ctx, 300), "UPDATE accounts SET balance = balance + 1000 WHERE id = $1", 1)
				if a2a, a2b := read(a), read(b); a2b != b2b || (a2a == b2a && b2a != "absent") {
					problems = append(problems, fmt.Sprintf("%s: an unprepared UPDATE (its text run once before the move) did not write the table the name resolves to: err %v; new %s.accounts %s -> %s, old %s -> %s", desc, uerr, a, b2a, a2a, b2b, a2b))
				}
			}
			if !stale && err == nil && st.name != "nothing" && aa == ba {
				problems = append(problems, fmt.Sprintf("%s: fresh write did not reach the table the name resolves to (%s.accounts %s)", desc, a, aa))
			}
		}()
		_ = db.Close()
	}
	if len(problems) > 0 {
		t.Errorf("seed %d:\n%s", k.Seed, strings.Join(problems, "\n"))
	}
}

// TestDiscardAllKeepsConnectionWriting (red-team rt57a F2): DISCARD ALL (DEALLOCATE
// ALL, …) sent through a fenced-pgx pool deallocates every prepared statement of the
// session, among them those pgx's statement cache keeps for the wrapper's own check
// queries, which the wrapper runs again after DISCARD ALL. Before the fix each check
// query failed once (26000) and each failure ended the caller's guarded write as a
// *SchemaError with the mock-driver hint, about 26 attempts in a row. Now the planner
// flags the statement (plan.Plan.DropsStatements) and the connection has pgx forget its
// cached statements before its next one; a check query that still meets a lost
// statement (a DISCARD ALL sent through Raw) is sent again once, and never reads as a
// schema problem. Generator: the reset statement (DISCARD ALL, DEALLOCATE ALL,
// DEALLOCATE PREPARE ALL, DISCARD PLANS, DISCARD ALL through Raw) × pgx query mode ×
// the guarded write. Oracle (parity with the bare driver, no ErrSchema for a schema
// that did not change): no attempt fails with ErrSchema, and a fresh guarded write
// succeeds by its second attempt (by its first when the statement went through the
// pool).
func TestDiscardAllKeepsConnectionWriting(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 6)
	t.Logf("seed %d", k.Seed)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn := testdb.Postgres(t)
	admin := testdb.Open(t, "pgx", dsn, "CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	fencetest.Guard(t, ctx, admin, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	resets := []string{"DISCARD ALL", "DEALLOCATE ALL", "DEALLOCATE PREPARE ALL", "DISCARD PLANS", "raw DISCARD ALL"}
	modes := []string{"", "&default_query_exec_mode=cache_statement"}
	writes := []string{
		"UPDATE accounts SET balance = balance + 1 WHERE id = $1",
		"INSERT INTO accounts (id, balance) VALUES ($1, 1) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + 1",
	}
	rng := rand.New(rand.NewSource(k.Seed))
	var problems []string
	tok := uint64(100)
	for trial := 0; trial < k.Iters; trial++ {
		reset, mode, w := resets[trial%len(resets)], modes[rng.Intn(len(modes))], writes[rng.Intn(len(writes))]
		desc := fmt.Sprintf("trial %d: %s mode=%q %q", trial, reset, mode, w)
		id := trial + 1
		testdb.Exec(t, admin, fmt.Sprintf("INSERT INTO accounts (id) VALUES (%d)", id))
		db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts"+mode)
		db.SetMaxOpenConns(1)
		tok++
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, tok), w, id); err != nil {
			t.Fatalf("%s: warm: %v", desc, err)
		}
		var err error
		if raw, ok := strings.CutPrefix(reset, "raw "); ok {
			err = rawExec(ctx, db, raw)
		} else {
			_, err = db.ExecContext(ctx, reset)
		}
		if err != nil {
			t.Fatalf("%s: reset: %v", desc, err)
		}
		var errs []string
		ok := false
		for attempt := 0; attempt < 40 && !ok; attempt++ {
			tok++
			_, err := db.ExecContext(fencedsql.WithToken(ctx, tok), w, id)
			if err == nil {
				ok = attempt == 0 || attempt == 1 && strings.HasPrefix(reset, "raw ")
				if !ok {
					problems = append(problems, fmt.Sprintf("%s: a fresh write succeeded only at attempt %d; before: %s", desc, attempt+1, strings.Join(errs, " | ")))
				}
				break
			}
			if errors.Is(err, fencedsql.ErrSchema) && len(errs) < 3 {
				errs = append(errs, fmt.Sprintf("#%d ErrSchema: %.150s", attempt+1, err.Error()))
			} else if len(errs) < 3 {
				errs = append(errs, fmt.Sprintf("#%d %T: %.120s", attempt+1, err, err.Error()))
			}
			if attempt == 39 {
				problems = append(problems, fmt.Sprintf("%s: 40 attempts refused: %s", desc, strings.Join(errs, " | ")))
			}
		}
		_ = db.Close()
	}
	if len(problems) > 0 {
		t.Errorf("seed %d:\n%s", k.Seed, strings.Join(problems, "\n"))
	}
}

// rawExec runs q on the driver's connection under one of db's, unseen by the wrapper.
func rawExec(ctx context.Context, db *sql.DB, q string) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	return c.Raw(func(dc any) error {
		_, err := fencedsql.Unwrap(dc).(driver.ExecerContext).ExecContext(ctx, q, nil)
		return err
	})
}
