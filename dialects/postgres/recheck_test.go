package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"

	"github.com/jackc/pgx/v5/stdlib"
)

// A door made while a pool runs (here a BEFORE trigger that swallows the fencing NULL,
// which lets a stale write through) is found by the lazy check again once the pool's
// verdict is older than WithSchemaRecheck: the stale write is refused with ErrSchema
// and the row keeps its newer token. With the re-check off the old verdict stands
// for the pool's life and the stale write goes through — the hole the re-check closes.
func TestSchemaRecheckFindsLaterDoor(t *testing.T) {
	for _, c := range []struct {
		name    string
		recheck time.Duration
		refused bool
	}{{"recheck", 200 * time.Millisecond, true}, {"never", fencedsql.NeverRecheck, false}} {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn,
				`CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
				`INSERT INTO acc (id, balance) VALUES (1, 0)`)
			db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
				fencedsql.Guard("acc"), fencedsql.WithSchemaRecheck(c.recheck))
			defer db.Close()
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			upd := func(tok uint64, bal int) error {
				_, err := db.ExecContext(fencedsql.WithToken(ctx, tok), "UPDATE acc SET balance = $1 WHERE id = 1", bal)
				return err
			}
			if err := upd(10, 1); err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, raw, keepTokenTrigger...)
			time.Sleep(300 * time.Millisecond)
			err := upd(5, 666) // a stale holder
			var bal int
			if qerr := raw.QueryRowContext(ctx, "SELECT balance FROM acc WHERE id = 1").Scan(&bal); qerr != nil {
				t.Fatal(qerr)
			}
			if c.refused {
				if !errors.Is(err, fencedsql.ErrSchema) || bal != 1 {
					t.Fatalf("stale write after the door was made: %v, balance %d; want ErrSchema and balance 1", err, bal)
				}
			} else if err != nil || bal != 666 {
				t.Fatalf("with the re-check off: %v, balance %d (the hole this test shows: a stale write through a later door)", err, bal)
			}
		})
	}
}

// WithSchemaRecheck bounds a connection's own verdicts too: once its name resolution
// moved (SET search_path through the pool, sql.Conn.Raw) its checks are its own
// (c.checkedNames), and a door made after them (the BEFORE trigger of
// TestSchemaRecheckFindsLaterDoor) is found once the interval passed (a red-team
// pass: they were trusted for the connection's life).
func TestSchemaRecheckPerConnection(t *testing.T) {
	for _, move := range []string{"set", "raw"} {
		t.Run(move, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn,
				`CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
				`INSERT INTO acc (id, balance) VALUES (1, 0)`)
			db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
				fencedsql.Guard("acc"), fencedsql.WithSchemaRecheck(200*time.Millisecond))
			defer db.Close()
			db.SetMaxOpenConns(1)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			c, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer c.Close()
			if move == "set" {
				if _, err := c.ExecContext(ctx, "SET search_path TO public"); err != nil {
					t.Fatal(err)
				}
			} else if err := c.Raw(func(dc any) error { _ = fencedsql.Unwrap(dc); return nil }); err != nil {
				t.Fatal(err)
			}
			upd := func(tok uint64, bal int) error {
				_, err := c.ExecContext(fencedsql.WithToken(ctx, tok), "UPDATE acc SET balance = $1 WHERE id = 1", bal)
				return err
			}
			if err := upd(10, 1); err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, raw, keepTokenTrigger...)
			time.Sleep(400 * time.Millisecond)
			err = upd(5, 666) // a stale holder
			var bal int
			if qerr := raw.QueryRowContext(ctx, "SELECT balance FROM acc WHERE id = 1").Scan(&bal); qerr != nil {
				t.Fatal(qerr)
			}
			if !errors.Is(err, fencedsql.ErrSchema) || bal != 1 {
				t.Fatalf("stale write on a connection whose names moved, after the door was made and the re-check interval passed: %v, balance %d; want ErrSchema and balance 1", err, bal)
			}
		})
	}
}

// keepTokenTrigger makes a door on acc: a BEFORE UPDATE trigger that keeps the row's
// token when the fenced rewrite sets it to NULL (a stale write then stores its other
// columns).
var keepTokenTrigger = []string{
	`CREATE FUNCTION keep_tok() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN NEW.fence_token := COALESCE(NEW.fence_token, OLD.fence_token); RETURN NEW; END $$`,
	`CREATE TRIGGER keep_tok BEFORE UPDATE ON acc FOR EACH ROW EXECUTE FUNCTION keep_tok()`,
}
