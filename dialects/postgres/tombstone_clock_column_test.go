package postgres_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTombstoneClockColumnChecked (red-team rt46b F3, PostgreSQL's side): the
// tombstone table's deleted_at retyped date (a tombstone dated at midnight, which
// PurgeTombstones(1h) removes at once), timestamp without time zone (dated in the
// writing session's TimeZone), text, or made nullable is a guard-table door: the
// pool refuses the table (ErrSchema) and schema.Check's Fix restores timestamptz
// NOT NULL.
func TestTombstoneClockColumnChecked(t *testing.T) {
	for _, c := range []struct{ name, alter string }{
		{"Date", "ALTER COLUMN deleted_at TYPE date"},
		{"TimestampWithoutZone", "ALTER COLUMN deleted_at TYPE timestamp"},
		{"Text", "ALTER COLUMN deleted_at TYPE text"},
		{"Nullable", "ALTER COLUMN deleted_at DROP NOT NULL"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			testdb.Exec(t, raw, "ALTER TABLE fencedsql_tomb_accounts "+c.alter)
			requireGuardDoor(t, ctx, raw, dsn, dialect.SideDoorGuardTable)
			var typ string
			var notnull bool
			if err := raw.QueryRow("SELECT pg_catalog.format_type(atttypid, atttypmod), attnotnull FROM pg_attribute WHERE attrelid = 'fencedsql_tomb_accounts'::regclass AND attname = 'deleted_at'").Scan(&typ, &notnull); err != nil {
				t.Fatal(err)
			}
			if typ != "timestamp with time zone" || !notnull {
				t.Fatalf("after the Fix deleted_at is %q (NOT NULL %v)", typ, notnull)
			}
			tombAttack(t, ctx, dsn, true, 0)
		})
	}
}
