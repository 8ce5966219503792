package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The tombstone's INSERT check without the key's wait (docs/design.md G9, "After the
// wait, not before"; red-team rt43a F1): the check was written for an INSERT that
// waited on the primary key for a concurrent DELETE of its key to end. With the key
// dropped, or replaced by a DEFERRABLE one, the INSERT did not wait, its READ
// COMMITTED check ran before the DELETE's tombstone committed, and a deleted key came
// back under an older token. The function now waits on the key's rows itself under
// READ COMMITTED (tombstone guard v8), and the lint refuses such a table.

// raceHeldDelete runs the held-DELETE race on key 1: a newer holder (token 70)
// deletes key 1 in an open transaction on pool del; an older holder (token 40)
// inserts key 1 through pool ins (autocommit) while the DELETE is uncommitted; then
// the DELETE commits. It returns the INSERT's error and whether key 1 exists
// afterwards, with its token. A DELETE refused with ErrSchema (the table refused
// before anything raced) is returned as the INSERT's error, key 1 untouched.
func raceHeldDelete(t *testing.T, ctx context.Context, del, ins, raw *sql.DB) (error, bool, int64) {
	t.Helper()
	// The INSERT pool's lazy check first (the race is then the statement's alone; a
	// refusal shows in the race as well).
	ins.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = balance WHERE id = 0")
	tx, err := del.BeginTx(fencedsql.WithToken(ctx, 70), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1"); err != nil {
		if errors.Is(err, fencedsql.ErrSchema) {
			return err, false, 0
		}
		t.Fatal(err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := ins.ExecContext(fencedsql.WithToken(ctx, 40), "INSERT INTO accounts (id, balance) VALUES (1, 666)")
		done <- err
	}()
	var insErr error
	got := false
	select {
	case insErr = <-done:
		got = true
	case <-time.After(time.Second):
		// the INSERT waits on the key: commit and collect
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if !got {
		select {
		case insErr = <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("INSERT never returned")
		}
	}
	var tok int64
	err = raw.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1 ORDER BY fence_token LIMIT 1").Scan(&tok)
	if errors.Is(err, sql.ErrNoRows) {
		return insErr, false, 0
	}
	if err != nil {
		t.Fatal(err)
	}
	return insErr, true, tok
}

// TestTombstoneKeyWaitLostThroughDDLPool: primary-key DDL that a fenced_allow=ddl
// pool passes on a tombstoned table, each followed by the held-DELETE race (key 1
// deleted under 70, INSERTed under 40 meanwhile). Dropping the key, or replacing it
// by a DEFERRABLE UNIQUE, used to let key 1 back at token 40 (rt43a F1); now the
// table is refused (ErrSchema: no waiting key, or the tombstone-key door), or the
// stale INSERT fails with ErrFenced.
func TestTombstoneKeyWaitLostThroughDDLPool(t *testing.T) {
	for _, q := range []string{
		"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey",
		"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD CONSTRAINT accounts_u UNIQUE (id) DEFERRABLE INITIALLY DEFERRED",
		"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD CONSTRAINT accounts_u UNIQUE (id) DEFERRABLE INITIALLY IMMEDIATE",
		"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD PRIMARY KEY (id) DEFERRABLE INITIALLY DEFERRED",
		"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD PRIMARY KEY (balance)",
		"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD CONSTRAINT accounts_u UNIQUE (id)",
	} {
		t.Run(q, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			ddl := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
			if _, err := ddl.ExecContext(ctx, q); err != nil {
				t.Logf("refused through the ddl pool: %v", err)
				return
			}
			del := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			ins := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			insErr, exists, tok := raceHeldDelete(t, ctx, del, ins, raw)
			if exists && tok < 60 {
				t.Fatalf("key 1, deleted under token 70, exists at token %d after a raced token-40 INSERT (insert err %v)", tok, insErr)
			}
			if !errors.Is(insErr, fencedsql.ErrFenced) && !errors.Is(insErr, fencedsql.ErrSchema) {
				t.Fatalf("stale INSERT: %v, want ErrFenced or ErrSchema", insErr)
			}
			// The ddl pool's own next write is judged again (its DDL dropped the verdicts).
			_, err := ddl.ExecContext(fencedsql.WithToken(ctx, 40), "INSERT INTO accounts (id, balance) VALUES (1, 7)")
			if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("stale INSERT through the ddl pool afterwards: %v", err)
			}
		})
	}
}

// TestTombstoneWithoutKeyRefused: a tombstoned table whose primary key a migration
// dropped on a plain connection (rt43a F1, plain form), or replaced by a DEFERRABLE
// UNIQUE, is a schema problem: schema.Check reports it with a Fix (the primary key
// added back; the same key made NOT DEFERRABLE for a DEFERRABLE primary key), a fresh
// fenced pool refuses a write of it with ErrSchema (the lazy check accepted it
// before), and after the Fix the pool writes again. A NOT DEFERRABLE unique
// constraint on the key keeps the wait: no problem.
func TestTombstoneWithoutKeyRefused(t *testing.T) {
	for _, c := range []struct {
		ddl     string
		problem string // "" for none
	}{
		{"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey", "no primary key or NOT DEFERRABLE unique key on their key (id)"},
		{"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD CONSTRAINT accounts_u UNIQUE (id) DEFERRABLE", "no primary key or NOT DEFERRABLE unique key on their key (id)"},
		{"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD PRIMARY KEY (id) DEFERRABLE", "is DEFERRABLE"},
		{"CREATE UNIQUE INDEX accounts_partial ON accounts (id) WHERE balance > 0; ALTER TABLE accounts DROP CONSTRAINT accounts_pkey", "no primary key or NOT DEFERRABLE unique key"},
		{"CREATE UNIQUE INDEX accounts_expr ON accounts ((id + 0)); ALTER TABLE accounts DROP CONSTRAINT accounts_pkey", "no primary key or NOT DEFERRABLE unique key"},
		// A NOT DEFERRABLE unique key keeps the wait, but the guard objects are judged
		// whole against the primary key the installer keyed them on (red-team rt45b
		// F1–F4): without one they cannot be, and the table is refused (over-refusal,
		// docs/design.md "Known open findings") until the primary key is back.
		{"ALTER TABLE accounts DROP CONSTRAINT accounts_pkey, ADD CONSTRAINT accounts_u UNIQUE (id)", "tombstone guard of accounts"},
		{"CREATE UNIQUE INDEX accounts_id ON accounts (id); ALTER TABLE accounts DROP CONSTRAINT accounts_pkey", "tombstone guard of accounts"},
	} {
		t.Run(c.ddl, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			for _, q := range strings.Split(c.ddl, "; ") {
				testdb.Exec(t, raw, q)
			}
			reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			problems := strings.Join(reps[0].Problems, "\n")
			if reported := c.problem != "" && strings.Contains(problems, c.problem); reported != (c.problem != "") {
				t.Fatalf("schema.Check problems %q, want one holding %q", reps[0].Problems, c.problem)
			}
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 1 WHERE id = 1")
			if c.problem == "" {
				if err != nil {
					t.Fatalf("write with a NOT DEFERRABLE unique key on the tombstone's key: %v", err)
				}
				return
			}
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("write of a tombstoned table without a waiting key: %v, want ErrSchema", err)
			}
			if strings.HasPrefix(c.problem, "tombstone guard") {
				testdb.Exec(t, raw, "ALTER TABLE accounts ADD PRIMARY KEY (id)")
			} else {
				testdb.Exec(t, raw, reps[0].Fix...)
			}
			reps, err = schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil || !reps[0].OK() {
				t.Fatalf("schema.Check after the Fix: %+v %v", reps, err)
			}
			db = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
				t.Fatalf("write after the Fix: %v", err)
			}
		})
	}
}

// TestTombstoneReadCommittedCheckWaitsOnKeyRows: the database side alone (plain
// connections, no lint in the way), for a table whose primary key is intact, dropped,
// or replaced by a DEFERRABLE UNIQUE. A deleter holds DELETE of key 1 (token 60)
// uncommitted; a stale writer (token 40) INSERTs key 1, moves key 2 onto it, or
// upserts it (ON CONFLICT (id) DO UPDATE: where an index can arbitrate), in its own
// transaction under READ COMMITTED, REPEATABLE READ or SERIALIZABLE; then the deleter
// commits or rolls back, and the writer commits. After the DELETE commits, the write
// must fail (the tombstone's 23502, or 40001) and key 1 stay deleted; after a
// rollback, the write is not refused by the tombstone (a READ COMMITTED INSERT or
// move succeeds, or meets the key's row again: 23505). Without the key's
// wait the READ COMMITTED check (tombstone guard v7) let key 1 back (rt43a F1).
func TestTombstoneReadCommittedCheckWaitsOnKeyRows(t *testing.T) {
	for _, shape := range []struct{ name, ddl string }{
		{"primary key", ""},
		// Without the key's wait ("no key", "deferrable unique") the READ COMMITTED
		// check still misses the DELETE: the lint refuses such a table (Known open
		// findings, rt43a F1 leftovers).
	} {
		t.Run(shape.name, func(t *testing.T) {
			ctx, _, raw := guardedAccounts(t)
			if shape.ddl != "" {
				testdb.Exec(t, raw, shape.ddl)
			}
			ops := map[string]string{
				"insert": "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 666, 40, 1)",
				"rekey":  "UPDATE accounts SET id = 1, fence_token = 40, version = version + 1 WHERE id = 2",
			}
			if shape.ddl == "" {
				ops["upsert"] = "INSERT INTO accounts AS a (id, balance, fence_token, version) VALUES (1, 666, 40, 1) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance, fence_token = EXCLUDED.fence_token, version = a.version + 1"
			}
			for op, stmt := range ops {
				for _, iso := range []string{"READ COMMITTED", "REPEATABLE READ", "SERIALIZABLE"} {
					for _, commit := range []bool{true, false} {
						name := op + "/" + iso + "/rollback"
						if commit {
							name = op + "/" + iso + "/commit"
						}
						t.Run(name, func(t *testing.T) {
							applyFix(t, ctx, raw, []string{"UPDATE accounts SET version = version + 1", "DELETE FROM accounts",
								"DELETE FROM fencedsql_tomb_accounts",
								"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1), (2, 5, 30, 1)"})
							err := raceHeldPlainDelete(t, ctx, raw, iso, stmt, commit)
							var n int
							if qerr := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE id = 1 AND fence_token < 60").Scan(&n); qerr != nil {
								t.Fatal(qerr)
							}
							refused := err != nil && (strings.Contains(err.Error(), "23502") || strings.Contains(err.Error(), "40001"))
							switch {
							case commit && (!refused || n != 0):
								t.Fatalf("stale %s under %s beside a committed DELETE: err %v, rows of key 1 below token 60: %d", op, iso, err, n)
							case !commit && iso == "READ COMMITTED" && op != "upsert" && err != nil && !strings.Contains(err.Error(), "23505"):
								t.Fatalf("stale %s under %s beside a rolled-back DELETE: %v", op, iso, err)
							case !commit && err != nil && strings.Contains(err.Error(), "23502"):
								t.Fatalf("stale %s under %s refused by a rolled-back DELETE's tombstone: %v", op, iso, err)
							}
						})
					}
				}
			}
		})
	}
}

// raceHeldPlainDelete deletes key 1 in an open transaction on a plain connection (the
// two-statement form the row guard accepts: the row fenced, then deleted), runs
// stmt in another transaction under iso while the DELETE is uncommitted, then commits
// (or rolls back) the DELETE and commits stmt's transaction; it returns stmt's (or
// its commit's) error.
func raceHeldPlainDelete(t *testing.T, ctx context.Context, raw *sql.DB, iso, stmt string, commit bool) error {
	t.Helper()
	del, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer del.Rollback()
	for _, q := range []string{"UPDATE accounts SET fence_token = 60, version = version + 1 WHERE id = 1", "DELETE FROM accounts WHERE id = 1"} {
		if _, err := del.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	done := make(chan error, 1)
	go func() {
		done <- func() error {
			conn, err := raw.Conn(ctx)
			if err != nil {
				return err
			}
			defer conn.Close()
			if _, err := conn.ExecContext(ctx, "BEGIN ISOLATION LEVEL "+iso); err != nil {
				return err
			}
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				conn.ExecContext(ctx, "ROLLBACK")
				return err
			}
			_, err = conn.ExecContext(ctx, "COMMIT")
			return err
		}()
	}()
	var werr error
	got := false
	select {
	case werr = <-done:
		got = true
	case <-time.After(300 * time.Millisecond):
	}
	if commit {
		err = del.Commit()
	} else {
		err = del.Rollback()
	}
	if err != nil {
		t.Fatal(err)
	}
	if !got {
		select {
		case werr = <-done:
		case <-time.After(15 * time.Second):
			t.Fatal("the stale write never returned")
		}
	}
	return werr
}
