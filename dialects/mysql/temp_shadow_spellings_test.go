package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTempShadowSpellings (red-team rt57a, held: every spelling is refused: EXECUTE/PREPARE of a text naming a guarded table, a compound statement mentioning one). A TEMPORARY table named like
// the guarded table, created through the fenced pool itself with the name spelled out
// in the text, in forms other than a statement whose head is CREATE (plan.ShadowsNames
// reads only a statement's head word: CREATE/ALTER/RENAME/DROP/IMPORT): EXECUTE
// IMMEDIATE of a literal, PREPARE … FROM a literal then EXECUTE, a compound statement
// (BEGIN NOT ATOMIC … END). Generator: the spelling × the pool's options × the write
// that follows × a prepared statement or not, on a one-connection pool. Oracle: after
// the shadow exists, a guarded write of the name on that connection is refused typed
// (ErrSchema, as for a plain CREATE TEMPORARY TABLE: rt37b) or lands on the base table
// and is fenced; a stale write never succeeds.
func TestTempShadowSpellings(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 12)
	t.Logf("seed %d", k.Seed)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn, shadowAccountsTable)
	const tmp = "CREATE TEMPORARY TABLE accounts (id INT PRIMARY KEY, balance BIGINT, fence_token BIGINT NULL, version BIGINT NULL) SELECT 1 AS id, 100 AS balance, 50 AS fence_token, 1 AS version"
	spellings := []struct {
		name  string
		stmts []string
	}{
		{"control-plain-create", []string{tmp}},
		{"execute-immediate-literal", []string{"EXECUTE IMMEDIATE '" + tmp + "'"}},
		{"prepare-literal-execute", []string{"PREPARE tmpspell_s FROM '" + tmp + "'", "EXECUTE tmpspell_s", "DEALLOCATE PREPARE tmpspell_s"}},
		{"compound", []string{"BEGIN NOT ATOMIC " + tmp + "; END"}},
		{"compound-if", []string{"IF 1 = 1 THEN " + tmp + "; END IF"}},
	}
	allows := []string{"ddl", "ddl,dynamic_sql", "dynamic_sql"}
	var problems []string
	rng := rand.New(rand.NewSource(k.Seed))
	for trial := 0; trial < k.Iters; trial++ {
		sp := spellings[trial%len(spellings)]
		allow := allows[rng.Intn(len(allows))]
		prepared := rng.Intn(2) == 0
		desc := fmt.Sprintf("trial %d: %s allow=%s prepared=%v", trial, sp.name, allow, prepared)
		testdb.Exec(t, admin, "DELETE FROM accounts", "INSERT INTO accounts VALUES (1, 1, 10, 1)")
		db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow="+allow)
		db.SetMaxOpenConns(1)
		const stale = "UPDATE accounts SET balance = -1 WHERE id = ?"
		st, err := db.PrepareContext(ctx, stale)
		if err != nil {
			t.Fatalf("%s: prepare: %v", desc, err)
		}
		if _, err := st.ExecContext(fencedsql.WithToken(ctx, 20), 1); err != nil {
			t.Fatalf("%s: warm: %v", desc, err)
		}
		var refused error
		for _, s := range sp.stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				refused = err
				break
			}
		}
		if refused != nil {
			if !errors.Is(refused, fencedsql.ErrUnsupported) && !errors.Is(refused, fencedsql.ErrSchema) {
				problems = append(problems, fmt.Sprintf("%s: creation refused untyped: %v", desc, refused))
			}
			t.Logf("%s: creation refused: %v", desc, refused)
			_, _ = db.ExecContext(ctx, "DROP TEMPORARY TABLE IF EXISTS accounts")
			_ = st.Close()
			_ = db.Close()
			continue
		}
		// The shadow holds id 1 at token 50 with nullable fencing columns; the base
		// table holds id 1 at token 20. A stale write (token 10) must fail.
		if prepared {
			_, err = st.ExecContext(fencedsql.WithToken(ctx, 10), 1)
		} else {
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), stale, 1)
		}
		var bal, tok any
		_ = db.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok)
		if err == nil {
			problems = append(problems, fmt.Sprintf("%s: stale UPDATE (token 10) accepted; the name's row (the temporary table's) now balance %v fence_token %v (was 100/50)", desc, bal, tok))
		} else if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
			problems = append(problems, fmt.Sprintf("%s: stale UPDATE: untyped %v", desc, err))
		}
		_, _ = db.ExecContext(ctx, "DROP TEMPORARY TABLE IF EXISTS accounts")
		_ = st.Close()
		_ = db.Close()
	}
	if len(problems) > 0 {
		t.Errorf("seed %d:\n%s", k.Seed, strings.Join(problems, "\n"))
	}
}

// TestSetStatementTempShadow (red-team rt57a, held: refused: "SET STATEMENT … FOR a statement the wrapper must rewrite or watch"). MariaDB's `SET STATEMENT var=value
// FOR <statement>` runs <statement> with the variable set for it alone. With <statement>
// `CREATE TEMPORARY TABLE accounts …` sent through a pool allowed to run DDL
// (fenced_allow=ddl), the temporary table shadows the guarded table for the session as
// the plain CREATE does (rt37b F1), but plan.ShadowsNames reads the statement's head
// word (SET, not CREATE), so the connection's name checks are not re-armed and the
// temporary-table probe never runs: the pool's cached verdict (the base table's)
// covers the temporary table, whose fencing columns are nullable. Oracle: a stale write
// of the name after it is refused (ErrSchema as after the plain CREATE, or ErrFenced);
// never accepted. Each spelling on a fresh one-connection pool, the guarded write run
// before (the pool verdict cached) and the statement after either unprepared or
// prepared before the shadow.
func TestSetStatementTempShadow(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn, shadowAccountsTable)
	const cols = "(id INT PRIMARY KEY, balance BIGINT, fence_token BIGINT NULL, version BIGINT NULL) SELECT 1 AS id, 100 AS balance, 50 AS fence_token, 1 AS version"
	spellings := []string{
		"CREATE TEMPORARY TABLE accounts " + cols, // control: refused since rt37b
		"SET STATEMENT max_statement_time = 0 FOR CREATE TEMPORARY TABLE accounts " + cols,
		"SET STATEMENT sql_mode = 'STRICT_TRANS_TABLES' FOR CREATE TEMPORARY TABLE accounts " + cols,
		"SET STATEMENT max_statement_time = 0 FOR CREATE OR REPLACE TEMPORARY TABLE accounts " + cols,
		"SET STATEMENT max_statement_time = 0, lock_wait_timeout = 5 FOR CREATE TEMPORARY TABLE IF NOT EXISTS accounts " + cols,
	}
	var problems []string
	for i, sp := range spellings {
		for _, prepared := range []bool{false, true} {
			desc := fmt.Sprintf("%d prepared=%v %q", i, prepared, sp)
			testdb.Exec(t, admin, "DELETE FROM accounts", "INSERT INTO accounts VALUES (1, 1, 10, 1)")
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
			db.SetMaxOpenConns(1)
			const stale = "UPDATE accounts SET balance = -1 WHERE id = ?"
			st, err := db.PrepareContext(ctx, stale)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := st.ExecContext(fencedsql.WithToken(ctx, 20), 1); err != nil {
				t.Fatalf("%s: warm: %v", desc, err)
			}
			if _, err := db.ExecContext(ctx, sp); err != nil {
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					problems = append(problems, fmt.Sprintf("%s: creation refused untyped: %v", desc, err))
				}
				t.Logf("%s: creation refused: %v", desc, err)
			} else {
				if prepared {
					_, err = st.ExecContext(fencedsql.WithToken(ctx, 10), 1)
				} else {
					_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), stale, 1)
				}
				var bal, tok any
				_ = db.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok)
				switch {
				case err == nil:
					problems = append(problems, fmt.Sprintf("%s: stale UPDATE (token 10) accepted; the name's row (the temporary table's, token 50) now balance %v fence_token %v", desc, bal, tok))
				case !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced):
					problems = append(problems, fmt.Sprintf("%s: stale UPDATE: untyped %v", desc, err))
				default:
					t.Logf("%s: stale UPDATE refused: %v", desc, err)
				}
			}
			_, _ = db.ExecContext(ctx, "DROP TEMPORARY TABLE IF EXISTS accounts")
			_ = st.Close()
			_ = db.Close()
		}
	}
	if len(problems) > 0 {
		t.Errorf("\n%s", strings.Join(problems, "\n"))
	}
}
