package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"

	"github.com/jackc/pgx/v5/stdlib"
)

// TestTriggerDynamicSQLIsADoor (red-team rt44d F3): a trigger on another table whose
// function writes the guarded table by dynamic SQL — the name in a DECLAREd string
// EXECUTEd later, in format()'s argument, or spelled by E'…' escapes — is a door, by
// the judgement routines get (bodyWrites: dynamicSQLWrites, red-team rt36b F2): the
// lazy check refuses the guarded table's writes (ErrSchema). Control: a trigger that
// EXECUTEs a write of another table only is no door.
func TestTriggerDynamicSQLIsADoor(t *testing.T) {
	for _, c := range []struct{ name, body string }{
		{"control", `BEGIN EXECUTE 'UPDATE door_other2 SET y = ' || NEW.x; RETURN NEW; END`},
		{"declared text", `DECLARE q text := 'UPDATE accounts SET balance = '; BEGIN EXECUTE q || NEW.x || ', version = version + 1 WHERE id = 1'; RETURN NEW; END`},
		{"E escape", `BEGIN EXECUTE E'UPDATE \x61ccounts SET balance = ' || NEW.x || ', version = version + 1 WHERE id = 1'; RETURN NEW; END`},
		{"format", `DECLARE tbl text := 'accounts'; BEGIN EXECUTE format('UPDATE %I SET balance = %s, version = version + 1 WHERE id = 1', tbl, NEW.x); RETURN NEW; END`},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			raw := rawWith(t, dsn,
				`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
				`CREATE TABLE door_other (x BIGINT)`, `CREATE TABLE door_other2 (y BIGINT)`,
				`INSERT INTO accounts (id, balance) VALUES (1, 0)`)
			fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			testdb.Exec(t, raw,
				`CREATE FUNCTION door_trg() RETURNS trigger LANGUAGE plpgsql AS $b$`+c.body+`$b$`,
				`CREATE TRIGGER door_trg AFTER INSERT ON door_other FOR EACH ROW EXECUTE FUNCTION door_trg()`)
			db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
				fencedsql.Guard("accounts"))
			defer db.Close()
			_, newerErr := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 1")
			_, staleErr := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO door_other (x) VALUES (666)")
			var bal, tok int64
			if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
				t.Fatal(err)
			}
			if c.name == "control" {
				if newerErr != nil || staleErr != nil {
					t.Fatalf("a trigger EXECUTEing a write of another table only was taken for a door: newer write %v, stale INSERT %v", newerErr, staleErr)
				}
				return
			}
			// The lazy check finds the door and refuses the guarded table's writes
			// (ErrSchema), as it does for a routine with the same body.
			if !errors.Is(newerErr, fencedsql.ErrSchema) {
				t.Fatalf("a trigger whose function writes accounts by dynamic SQL was no door (newer write: %v, want ErrSchema); the stale INSERT (%v) left balance %d token %d",
					newerErr, staleErr, bal, tok)
			}
		})
	}
}
