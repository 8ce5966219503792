package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Under pgx synchronous_commit is read once per connection and kept (TrackedSession).
// CALL and DO, allowed with fenced_allow=dynamic_sql, may change it for the session (a
// procedure's SET outlives the CALL; set_config(…, false) in a DO block): the wrapper
// flags them ResetsSession, and the re-check that follows must read the server again
// rather than the kept value, so the next guarded write is refused.
func TestSyncCommitOffByCallOrDoRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { admin.Close() })
	pgExec(t, admin,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts VALUES (1, 100, 5, 0)",
		"CREATE PROCEDURE tune_off() LANGUAGE plpgsql AS $$ BEGIN SET synchronous_commit = off; END $$",
		"CREATE FUNCTION tune_off_fn() RETURNS int LANGUAGE plpgsql AS $$ BEGIN PERFORM set_config('synchronous_commit', 'off', false); RETURN 1; END $$",
	)
	for i, stmt := range []string{
		"CALL tune_off()",
		"DO $$ BEGIN PERFORM tune_off_fn(); END $$",
	} {
		t.Run(stmt, func(t *testing.T) {
			db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=dynamic_sql")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			token := uint64(10*i + 10)
			if _, err := conn.ExecContext(fencedsql.WithToken(ctx, token), "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); err != nil {
				t.Fatalf("first guarded write: %v", err)
			}
			if _, err := conn.ExecContext(ctx, stmt); err != nil {
				t.Fatalf("%s: %v", stmt, err)
			}
			var setting string
			if err := conn.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&setting); err != nil || setting != "off" {
				t.Fatalf("after %s synchronous_commit = %q (%v), want off (set-up)", stmt, setting, err)
			}
			_, err = conn.ExecContext(fencedsql.WithToken(ctx, token+1), "UPDATE accounts SET balance = balance + 1 WHERE id = 1")
			var se *fencedsql.SessionError
			if !errors.As(err, &se) || se.Setting != "synchronous_commit" || !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("guarded write after %s turned synchronous_commit off: %v, want a *SessionError naming synchronous_commit", stmt, err)
			}
		})
	}
}
