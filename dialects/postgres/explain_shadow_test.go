package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const explainAccounts = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`

// TestExplainAnalyzeCreateTempTableShadowRechecked (red-team rt39a F1, fail-open, no
// option enabled).
// `EXPLAIN ANALYZE CREATE TEMP TABLE accounts AS SELECT …` and `EXPLAIN (ANALYZE) SELECT
// … INTO TEMP accounts FROM …` execute the CREATE TABLE AS they explain. On a default
// pool (no fenced_allow: DDL naming a guarded table should be refused) both are
// accepted, and plan.ShadowsNames does not count them either (it looks at statement
// heads: CREATE/ALTER/RENAME/DROP/IMPORT, SELECT/WITH … INTO; here the head is
// EXPLAIN), so neither the pool's verdicts nor the connection's checks are re-armed:
// the cached verdict on public.accounts covers pg_temp.accounts (nullable
// fence_token), and a stale UPDATE (token 10 over a row at 50) stores the fencing NULL
// there and succeeds.
//
// Right behaviour: EXPLAIN ANALYZE of a CREATE … AS / SELECT INTO is judged as the
// statement it runs: refused without WithDDL (DDL naming a guarded table), and counted
// by ShadowsNames with it, so the stale write is refused with ErrSchema/ErrFenced.
func TestExplainAnalyzeCreateTempTableShadowRechecked(t *testing.T) {
	for name, q := range map[string]string{
		"CreateTableAs": `EXPLAIN ANALYZE CREATE TEMP TABLE accounts AS SELECT id, balance, 50::bigint AS fence_token, version FROM public.accounts`,
		"SelectInto":    `EXPLAIN (ANALYZE) SELECT id, balance, 50::bigint AS fence_token, version INTO TEMP accounts FROM public.accounts`,
	} {
		t.Run(name, func(t *testing.T) {
			ctx := context.Background()
			dsn := testdb.Postgres(t)
			testdb.Open(t, "pgx", dsn, explainAccounts, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
			db.SetMaxOpenConns(1)
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE accounts SET balance = 2 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(ctx, q); err != nil {
				t.Logf("refused: %v", err)
				return
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = -1 WHERE id = 1")
			if err == nil {
				var bal, tok any
				_ = db.QueryRowContext(ctx, "SELECT balance, fence_token FROM pg_temp.accounts WHERE id = 1").Scan(&bal, &tok)
				t.Fatalf("%s on a pool without fenced_allow: accepted; stale UPDATE (token 10) then accepted; pg_temp.accounts row now balance %v fence_token %v (was 50); want the EXPLAIN refused, or ErrSchema/ErrFenced", q, bal, tok)
			}
			if !errors.Is(err, fencedsql.ErrSchema) && !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale UPDATE: %v", err)
			}
		})
	}
}
