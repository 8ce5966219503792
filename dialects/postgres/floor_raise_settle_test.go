package postgres_test

// Red-team rt20t: G16 "Tokens never go back" — the token floor against a transaction
// that is open across RaiseTokenFloor.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
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

// rt20tRaiseDuringOpenTx runs the race: a holder of token 8 writes row 1 through the
// fenced pool in a transaction (accepted: no floor yet), then RaiseTokenFloor(10) runs
// on a plain connection, then the holder commits. It returns whether the raise had
// returned before the commit, the commit's error, and row 1's token afterwards.
func rt20tRaiseDuringOpenTx(t *testing.T, iso sql.IsolationLevel, q string) (raisedFirst bool, commitErr error, token int64) {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	raw := testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	g := postgres.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1), (2, 0, 5, 1)")
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()

	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 8), &sql.TxOptions{Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if rows, err := tx.QueryContext(ctx, q); err != nil {
		t.Fatalf("%s under 8 before any floor: %v", q, err)
	} else if err := rows.Close(); err != nil {
		t.Fatalf("%s under 8 before any floor: %v", q, err)
	}
	done := make(chan error, 1)
	go func() { done <- schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 10) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RaiseTokenFloor: %v", err)
		}
		raisedFirst = true
	case <-time.After(1500 * time.Millisecond):
		// The raise waits for the open writer: the right behaviour.
	}
	commitErr = tx.Commit()
	if !raisedFirst {
		if err := <-done; err != nil {
			t.Fatalf("RaiseTokenFloor: %v", err)
		}
	}
	// The stale holder's effect: row 1 stamped 8 (UPDATE, claim), row 7 inserted under 8,
	// or row 1 gone (DELETE); token is 8 when it is there, else -1.
	var stamped, inserted, gone bool
	if err := raw.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM accounts WHERE id = 1 AND fence_token = 8),
		EXISTS (SELECT 1 FROM accounts WHERE id = 7 AND fence_token = 8), NOT EXISTS (SELECT 1 FROM accounts WHERE id = 1)`).Scan(&stamped, &inserted, &gone); err != nil {
		t.Fatal(err)
	}
	token = -1
	if stamped || inserted || gone {
		token = 8
	}
	// Sanity: once everything has settled, the floor refuses token 8.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 9), "UPDATE accounts SET balance = 1 WHERE id = 2"); err == nil {
		t.Fatal("a write under 9 passed the floor 10")
	}
	return raisedFirst, commitErr, token
}

// TestRT20tFloorRaisedUnderOpenWriter (fail-open, race). G16: "A token … below the
// database's token floor never writes", and the switch/failover procedures promise
// that once `fencedsql-schema -raise-floor` (RaiseTokenFloor) has run, "a holder of the
// old service that is still running gets ErrBelowFloor". On PostgreSQL the guards take
// no lock on the floor (the fast path reads the copy with pg_sequence_last_value, the
// slow path a plain SELECT), so RaiseTokenFloor does not wait for a transaction that
// already wrote a guarded row under the old floor: it returns at once, and that
// transaction — a holder paused between its write and its COMMIT, the textbook stale
// holder — then commits its write under token 8 with the floor at 10 in force: a fenced
// UPDATE, INSERT, DELETE (one statement) or claim (SELECT … FOR UPDATE, whose fencing
// UPDATE stamps the row). The same
// happens under REPEATABLE READ. (MariaDB under REPEATABLE READ does not: its trigger's
// read of the floor row is a locking read, so the raise waits for the writer, see
// mysql: TestRT20tFloorRaisedUnderOpenWriterReadCommitted for its READ COMMITTED hole.)
//
// Right behaviour: when RaiseTokenFloor returns, no transaction that wrote under a token
// below the new floor may still commit — e.g. RaiseTokenFloor, after committing the
// raise, waits for every transaction that holds a write lock on a guarded table
// (LOCK TABLE … IN SHARE MODE on each guarded table in a fresh transaction, or waiting
// out the virtual xids older than the raise, as CREATE INDEX CONCURRENTLY does), or the
// guard reads the floor row with FOR SHARE on its slow path and RaiseTokenFloor takes
// the row lock before touching the copy. Nothing here needs the old holder to be
// well-behaved: it only has to commit late.
func TestRT20tFloorRaisedUnderOpenWriter(t *testing.T) {
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead} {
		for _, q := range []string{
			"UPDATE accounts SET balance = 99 WHERE id = 1",
			"INSERT INTO accounts (id, balance) VALUES (7, 1)",
			"DELETE FROM accounts WHERE id = 1",
			"SELECT id FROM accounts WHERE id = 1 FOR UPDATE",
		} {
			t.Run(iso.String()+"/"+q, func(t *testing.T) {
				raisedFirst, commitErr, token := rt20tRaiseDuringOpenTx(t, iso, q)
				if raisedFirst && commitErr == nil && token == 8 {
					t.Errorf("RaiseTokenFloor(10) returned while a transaction under token 8 was open (%s), and that transaction then committed: its write under 8 landed after the floor 10 was raised", q)
				}
			})
		}
	}
}

// rt20tForeignFloorSetup: accounts with the guard (one row, token 5), the floor raised
// to 50, the postgres_fdw extension installed by the administrator (as it would be for
// an application that reads another database), and a fenced pool on the naive layout
// (the application's account owns what the guards' installer created: here the test's
// account for both). It returns the raw and fenced pools and the loopback server's
// OPTIONS.
func rt20tForeignFloorSetup(t *testing.T) (ctx context.Context, raw, db *sql.DB, server string) {
	t.Helper()
	dsn := testdb.Postgres(t)
	ctx = context.Background()
	raw = testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE EXTENSION postgres_fdw")
	g := postgres.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	pw, _ := u.User.Password()
	server = fmt.Sprintf("host '%s', port '%s', dbname '%s'", u.Hostname(), u.Port(), strings.TrimPrefix(u.Path, "/"))
	db, err = sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	for _, q := range []string{
		"CREATE SERVER rt20t_loop FOREIGN DATA WRAPPER postgres_fdw OPTIONS (" + server + ")",
		fmt.Sprintf("CREATE USER MAPPING FOR CURRENT_USER SERVER rt20t_loop OPTIONS (user '%s', password '%s')", u.User.Username(), pw),
	} {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("through the fenced pool: %v", err)
		}
	}
	return ctx, raw, db, server
}

// TestRT20tFloorLoweredThroughForeignTable (fail-open; naive layout, postgres_fdw
// installed). The wrapper refuses a CREATE FOREIGN TABLE whose table_name option names
// a reserved object when the option is a plain string ('fencedsql_floor', also split
// into adjacent literals or upper-cased), but not when the same string is spelled as a
// Unicode-escape literal with its own escape character (U&'fenced!0073ql_floor'
// UESCAPE '!', which decodeLoose does not decode: it knows only the backslash) or as a
// dollar-quoted string ($$fencedsql_floor$$, which the prefix check treats as a code
// body and lexes as SQL instead of reading it as a name). Neither needs WithDDL. The
// foreign table is then written through the fenced pool under a name without the
// prefix: an UPDATE sets the token floor to 0 (the floor's sync trigger copies it into
// the sequence), a TRUNCATE empties the floor table (no floor at all); either way a
// write under token 40 with the floor at 50 is accepted. The loopback connection is
// postgres_fdw's own, like dblink's, which the wrapper refuses for that reason
// (sqlTextFuncs); "writes through imported tables are fenced by name" (docs/design.md
// §5, "Not refused") holds for guarded tables, not for the floor and tombstone tables.
//
// Right behaviour: a statement through a pool with guarded tables that names a
// reserved object in any string spelling — U&'…' with or without UESCAPE, E'…',
// dollar-quoted, adjacent literals — is refused like the plain spelling (decode the
// literal as the server does before the prefix test); better, refuse CREATE/ALTER
// FOREIGN TABLE and IMPORT FOREIGN SCHEMA whose remote name cannot be read, as dblink is.
func TestRT20tFloorLoweredThroughForeignTable(t *testing.T) {
	for _, c := range []struct{ name, spelling, write string }{
		{"uescape/update", "U&'fenced!0073ql_floor' UESCAPE '!'", "UPDATE rt20t_floor SET floor = 0"},
		{"dollar/update", "$$fencedsql_floor$$", "UPDATE rt20t_floor SET floor = 0"},
		{"dollar/truncate", "$t$fencedsql_floor$t$", "TRUNCATE rt20t_floor"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, raw, db, _ := rt20tForeignFloorSetup(t)
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1"); err == nil {
				t.Fatal("control: a write under 40 passed the floor 50")
			}
			create := "CREATE FOREIGN TABLE rt20t_floor (id int, floor bigint) SERVER rt20t_loop OPTIONS (table_name " + c.spelling + ")"
			if _, err := db.ExecContext(ctx, create); err != nil {
				rt20tRefused(t, err)
				return
			}
			if _, err := db.ExecContext(ctx, c.write); err != nil {
				t.Fatalf("%s refused after the foreign table was created: %v; want the CREATE refused", c.write, err)
			}
			var floor sql.NullInt64
			_ = raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor)
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1")
			if err == nil {
				var tok int64
				_ = raw.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tok)
				t.Errorf("through the fenced pool: %q then %q (floor table now %v); a write under token 40 below the floor 50 was then accepted (row token %d)", create, c.write, floor, tok)
			}
		})
	}
}

// TestRT20tFloorLoweredThroughLiteralBody (fail-open under WithDDL or WithDynamicSQL;
// naive layout). docs/design.md §5: the protect checks "apply to the statements in the
// string literals and dollar-quoted bodies of a statement whose strings are code — DO,
// CREATE/ALTER (routine bodies) … so that WithDDL/WithDynamicSQL do not let DO $$ BEGIN
// UPDATE pg_proc … $$ … through"; only "a body built at run time" is not seen. A body
// written as a Unicode-escape literal with its own escape character — U&'…' UESCAPE '!'
// — is a literal, not built at run time, but the body check does not decode it (the
// plain, E'…' and U&'\…' spellings of the same body are refused). Under WithDDL a SQL
// function whose body is `UPDATE fenced!0073ql_floor SET floor = 0` is created and
// called through the fenced pool; under WithDynamicSQL a DO block does the same. The
// floor goes to 0 and a write under token 40 with the floor at 50 is accepted.
//
// Right behaviour: decode every string form the server decodes (U&'…' with UESCAPE,
// E'…', dollar quotes, adjacent literals) before the body checks, or refuse a body in a
// form the checks cannot read, as a body built at run time would be with dynamic SQL off.
func TestRT20tFloorLoweredThroughLiteralBody(t *testing.T) {
	const lower = "UPDATE fenced!0073ql_floor SET floor = 0 WHERE id = 1"
	const plain = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
	requireFloorBodiesRefused(t, []floorBodyCase{
		{name: "ddl", allow: "ddl", create: "CREATE FUNCTION rt20t_f() RETURNS void LANGUAGE sql AS U&'" + lower + "' UESCAPE '!'", call: "SELECT rt20t_f()",
			controls: []string{"CREATE FUNCTION rt20t_f() RETURNS void LANGUAGE sql AS '" + plain + "'"}},
		{name: "dynamic_sql", allow: "dynamic_sql", create: "DO U&'BEGIN " + lower + "; END' UESCAPE '!'",
			controls: []string{"DO 'BEGIN " + plain + "; END'"}},
	})
}

// rt20tRefused requires err, the answer to a statement whose literal spells a write of
// the floor in a form the checks must decode, to be the planner's refusal.
func rt20tRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported (the decoded literal names the floor)", err)
	}
}

// RaiseTokenFloor whose context ends while a transaction that wrote a guarded table
// before the raise is still open: it fails with a *schema.SettleError (errors.Is
// ErrFloorUnsettled and the context's error) naming that session, the floor raised
// all the same (a write that starts now is refused); a transaction that has only read
// is not waited for (the REPEATABLE READ snapshot case of G16).
func TestRaiseTokenFloorSettleTimesOut(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw := testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	testdb.Exec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1), (2, 0, 5, 1)")
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))

	reader, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelRepeatableRead})
	if err != nil {
		t.Fatal(err)
	}
	defer reader.Rollback() //nolint:errcheck
	var n int
	if err := reader.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 7); err != nil {
		t.Fatalf("RaiseTokenFloor with only a reader open: %v; want it to return at once", err)
	}

	writer, err := db.BeginTx(fencedsql.WithToken(ctx, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer writer.Rollback() //nolint:errcheck
	if _, err := writer.ExecContext(ctx, "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	short, cancel := context.WithTimeout(ctx, 300*time.Millisecond)
	defer cancel()
	err = schema.RaiseTokenFloor(short, raw, postgres.Dialect, 10)
	var se *schema.SettleError
	if !errors.As(err, &se) || !errors.Is(err, schema.ErrFloorUnsettled) || !errors.Is(err, context.DeadlineExceeded) || len(se.Open) != 1 {
		t.Fatalf("RaiseTokenFloor with a writer open and a short context: %v; want a *SettleError naming one session", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 9), "UPDATE accounts SET balance = 2 WHERE id = 2"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("a write under 9 after the unsettled raise to 10: %v; want ErrBelowFloor (the floor is raised)", err)
	}
	if err := writer.Rollback(); err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 10); err != nil {
		t.Fatalf("RaiseTokenFloor again once the writer ended: %v", err)
	}
}
