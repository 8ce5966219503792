package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// DDL through a fenced_allow=ddl pool that replaces the token column (renamed or
// dropped, and a column of its name added or renamed into place) is refused with
// ErrUnsupported, nothing sent, and a stale UPDATE under token 10 of a row written
// under 60 stays refused (red-team rt42a F1: the new column's DEFAULT 0 reset every
// token and the stale write landed).
func TestTokenColumnReplacedThroughDDLPoolRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		ddl  []string
	}{
		{"rename_then_add", []string{"ALTER TABLE accounts RENAME COLUMN fence_token TO fence_token_old", "ALTER TABLE accounts ADD COLUMN fence_token bigint NOT NULL DEFAULT 0"}},
		{"rename_quoted_then_add", []string{`ALTER TABLE public."accounts" RENAME "fence_token" TO "ft_old"`, `ALTER TABLE accounts ADD fence_token bigint NOT NULL DEFAULT 0`}},
		{"drop_cascade_then_add", []string{"ALTER TABLE accounts DROP COLUMN fence_token CASCADE", "ALTER TABLE accounts ADD COLUMN fence_token bigint NOT NULL DEFAULT 0"}},
		{"rename_other_column_into_place", []string{"ALTER TABLE accounts ADD COLUMN zero bigint NOT NULL DEFAULT 0", "ALTER TABLE accounts RENAME COLUMN fence_token TO fence_token_old", "ALTER TABLE accounts RENAME COLUMN zero TO fence_token"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t) // row 1 at token 60, balance 5
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
			refused := false
			for _, q := range c.ddl {
				if _, err := db.ExecContext(ctx, q); err != nil {
					if !errors.Is(err, fencedsql.ErrUnsupported) {
						t.Fatalf("%s: %v, want success or ErrUnsupported", q, err)
					}
					refused = true
					break
				}
			}
			if !refused {
				t.Errorf("DDL %q passed through the pool", c.ddl)
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 666 WHERE id = 1")
			var bal int64
			if err := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
				t.Fatal(err)
			}
			if err == nil || bal == 666 {
				t.Errorf("after DDL %q: a stale UPDATE under token 10 of a row written under 60 succeeded (err %v, balance %d)", c.ddl, err, bal)
			}
		})
	}
}

// The same replacement run on a plain connection (the migration role), which the pool
// cannot refuse, is reported by schema.Check as a guard-column door, and the lazy check
// refuses the table with ErrSchema (red-team rt42a F1: schema.Check reported the table
// OK while the guard's DELETE trigger read the renamed column).
func TestTokenColumnReplacedOnPlainConnectionReported(t *testing.T) {
	for _, c := range []struct {
		name string
		ddl  []string
	}{
		{"rename_then_add", []string{"ALTER TABLE accounts RENAME COLUMN fence_token TO fence_token_old", "ALTER TABLE accounts ADD COLUMN fence_token bigint NOT NULL DEFAULT 0"}},
		{"rename_other_column_into_place", []string{"ALTER TABLE accounts ADD COLUMN zero bigint NOT NULL DEFAULT 0", "ALTER TABLE accounts RENAME COLUMN fence_token TO fence_token_old", "ALTER TABLE accounts RENAME COLUMN zero TO fence_token"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			testdb.Exec(t, raw, c.ddl...)
			requireDoorNoFix(t, ctx, dsn, dialect.SideDoorGuardColumn, "trigger fencedsql_guard_delete")
		})
	}
}

// A key column renamed through a fenced_allow=ddl pool is refused (ErrUnsupported),
// so the key cannot be renamed away under the tombstones and a column of its name
// added: key 1, deleted under 70, stays deleted for a plain writer under 40
// (red-team rt42a F2: the tombstone function read the new, NULL id column).
func TestKeyColumnRenameThroughDDLPoolRefused(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{"ALTER TABLE accounts RENAME COLUMN id TO acc_id", "ALTER TABLE accounts DROP COLUMN id"} {
		if _, err := db.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "column the guards read") {
			t.Fatalf("%s through the ddl pool: %v, want ErrUnsupported (a column the guards read)", q, err)
		}
	}
	if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token) VALUES (1, 666, 40)"); err == nil {
		t.Errorf("key 1, deleted under 70, came back under 40 on a plain connection")
	}
}
