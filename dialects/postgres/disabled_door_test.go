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

// TestDisabledDoorCountsAndCannotBeEnabledThroughPool (red-team rt44d F1): a disabled
// trigger or rule on another table that writes a guarded table is a door all the same
// — the lazy check refuses the guarded table's writes (ErrSchema) — and the pool
// refuses to switch it on (ALTER TABLE other ENABLE TRIGGER t|ALL, ENABLE RULE r:
// ErrUnsupported, as DISABLE TRIGGER), so a stale holder cannot turn it on and fire
// it to write the guarded row under the newer holder's token.
func TestDisabledDoorCountsAndCannotBeEnabledThroughPool(t *testing.T) {
	for _, c := range []struct {
		name   string
		door   []string
		enable string
	}{
		{"trigger", []string{
			`CREATE FUNCTION door_trg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE accounts SET balance = NEW.x, version = version + 1 WHERE id = 1; RETURN NEW; END$$`,
			`CREATE TRIGGER door_trg AFTER INSERT ON door_other FOR EACH ROW EXECUTE FUNCTION door_trg()`,
			`ALTER TABLE door_other DISABLE TRIGGER door_trg`,
		}, "ALTER TABLE door_other ENABLE TRIGGER door_trg"},
		{"trigger all", []string{
			`CREATE FUNCTION door_trg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE accounts SET balance = NEW.x, version = version + 1 WHERE id = 1; RETURN NEW; END$$`,
			`CREATE TRIGGER door_trg AFTER INSERT ON door_other FOR EACH ROW EXECUTE FUNCTION door_trg()`,
			`ALTER TABLE door_other DISABLE TRIGGER USER`,
		}, "ALTER TABLE door_other ENABLE TRIGGER ALL"},
		{"rule", []string{
			`CREATE RULE door_trg AS ON INSERT TO door_other DO ALSO UPDATE accounts SET balance = NEW.x, version = version + 1 WHERE id = 1`,
			`ALTER TABLE door_other DISABLE RULE door_trg`,
		}, "ALTER TABLE door_other ENABLE RULE door_trg"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			raw := rawWith(t, dsn,
				`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
				`CREATE TABLE door_other (x BIGINT)`,
				`INSERT INTO accounts (id, balance) VALUES (1, 0)`)
			fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			testdb.Exec(t, raw, c.door...)
			db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
				fencedsql.Guard("accounts"))
			defer db.Close()
			// The newer holder (token 10): the lazy check counts the disabled door.
			_, newerErr := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 1")
			if !errors.Is(newerErr, fencedsql.ErrSchema) {
				t.Errorf("a disabled door was not counted by the lazy check: newer write %v, want ErrSchema", newerErr)
			}
			// The stale holder (token 5), through the same pool.
			stale := fencedsql.WithToken(ctx, 5)
			if _, err := db.ExecContext(stale, c.enable); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%q through the pool: %v, want ErrUnsupported", c.enable, err)
			}
			_, insErr := db.ExecContext(stale, "INSERT INTO door_other (x) VALUES (666)")
			var bal, tok int64
			if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
				t.Fatal(err)
			}
			if bal == 666 {
				t.Fatalf("a stale holder switched a disabled door on through the pool (%q) and wrote the guarded row through it (INSERT: %v): balance %d token %d",
					c.enable, insErr, bal, tok)
			}
		})
	}
}
