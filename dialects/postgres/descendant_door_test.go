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

// TestDoorWritingDescendantByName (red-team rt44d F2): a trigger, rule or routine
// that writes a partition or an inheritance child of a guarded table by the
// descendant's own name is a door, as one naming the table is: otherTriggers, rules
// and routines look for the names of the table's pg_inherits descendants too
// (bodyWrites over familyNames, the list patchDoor already used), so the lazy check
// refuses the guarded table's writes (ErrSchema) and a stale holder's statement on the
// other table (or SELECT of the function) does not meet an open door unreported.
func TestDoorWritingDescendantByName(t *testing.T) {
	for _, c := range []struct {
		name  string
		inh   bool
		door  []string
		stale string
	}{
		{"trigger/partition", false, []string{
			`CREATE FUNCTION door_trg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE accounts_p1 SET balance = NEW.x, version = version + 1 WHERE id = 1; RETURN NEW; END$$`,
			`CREATE TRIGGER door_trg AFTER INSERT ON door_other FOR EACH ROW EXECUTE FUNCTION door_trg()`,
		}, "INSERT INTO door_other (x) VALUES (666)"},
		{"trigger/child", true, []string{
			`CREATE FUNCTION door_trg() RETURNS trigger LANGUAGE plpgsql AS $$BEGIN UPDATE accounts_p1 SET balance = NEW.x, version = version + 1 WHERE id = 1; RETURN NEW; END$$`,
			`CREATE TRIGGER door_trg AFTER INSERT ON door_other FOR EACH ROW EXECUTE FUNCTION door_trg()`,
		}, "INSERT INTO door_other (x) VALUES (666)"},
		{"rule/partition", false, []string{
			`CREATE RULE door_trg AS ON INSERT TO door_other DO ALSO UPDATE accounts_p1 SET balance = NEW.x, version = version + 1 WHERE id = 1`,
		}, "INSERT INTO door_other (x) VALUES (666)"},
		{"routine/partition", false, []string{
			`CREATE FUNCTION door_fn(v bigint) RETURNS bigint LANGUAGE sql AS $$UPDATE accounts_p1 SET balance = v, version = version + 1 WHERE id = 1 RETURNING balance$$`,
		}, "SELECT door_fn(666)"},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			stmts := []string{
				`CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) PARTITION BY RANGE (id)`,
				`CREATE TABLE accounts_p1 PARTITION OF accounts FOR VALUES FROM (0) TO (100)`,
				`INSERT INTO accounts (id, balance) VALUES (1, 0)`,
			}
			if c.inh {
				stmts = []string{
					`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
					`CREATE TABLE accounts_p1 (PRIMARY KEY (id)) INHERITS (accounts)`,
					`INSERT INTO accounts_p1 (id, balance) VALUES (1, 0)`,
				}
			}
			raw := rawWith(t, dsn, append(stmts, `CREATE TABLE door_other (x BIGINT)`)...)
			fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			testdb.Exec(t, raw, c.door...)
			db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect),
				fencedsql.Guard("accounts"))
			defer db.Close()
			// The newer holder (token 10) writes the row through the pool (the lazy check runs).
			_, newerErr := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 1")
			// The stale holder (token 5), through the same pool.
			_, staleErr := db.ExecContext(fencedsql.WithToken(ctx, 5), c.stale)
			var bal, tok int64
			if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
				t.Fatal(err)
			}
			// Fixed: the lazy check finds the door and refuses the guarded table's writes
			// (ErrSchema), as for a door naming accounts itself; schema.Check reports it.
			if !errors.Is(newerErr, fencedsql.ErrSchema) {
				t.Fatalf("a door writing the descendant accounts_p1 by name was not refused by the lazy check (newer write: %v, want ErrSchema); the stale %q (%v) left balance %d token %d",
					newerErr, c.stale, staleErr, bal, tok)
			}
		})
	}
}
