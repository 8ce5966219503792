package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A guarded table cannot be renamed or moved away through a fenced_allow=ddl pool, nor
// another relation moved onto its name — ALTER TABLE … RENAME TO, SET SCHEMA, ALTER
// VIEW … RENAME TO: ErrUnsupported, nothing sent (red-team rt43c F2: renamed away, its
// token column dropped with CASCADE and added again DEFAULT 0 under the new name, and
// renamed back, a stale UPDATE under token 10 of a row written under 60 landed).
func TestGuardedTableRenameThroughDDLPoolRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		ddl  []string // the last statement is the one refused
	}{
		{"rename_to", []string{"ALTER TABLE accounts RENAME TO accounts_tmp"}},
		{"if_exists_only_rename_to", []string{"ALTER TABLE IF EXISTS ONLY public.accounts RENAME TO accounts_tmp"}},
		{"set_schema", []string{"CREATE SCHEMA scratch", "ALTER TABLE accounts SET SCHEMA scratch"}},
		{"view_renamed_onto_name", []string{"CREATE SCHEMA scratch", "CREATE VIEW scratch.v AS SELECT 1 AS id", "ALTER VIEW scratch.v RENAME TO accounts"}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t) // row 1 at token 60, balance 5
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
			for k, q := range c.ddl {
				_, err := db.ExecContext(ctx, q)
				if k < len(c.ddl)-1 {
					if err != nil {
						t.Fatal(q, err)
					}
					continue
				}
				if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "moves a guarded table away from its name") {
					t.Fatalf("%s through the ddl pool: %v; want ErrUnsupported (a guarded table's name moved)", q, err)
				}
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 666 WHERE id = 1")
			var bal int64
			if e := raw.QueryRow("SELECT balance FROM public.accounts WHERE id = 1").Scan(&bal); e != nil {
				t.Fatal(e)
			}
			if !errors.Is(err, fencedsql.ErrFenced) || bal != 5 {
				t.Errorf("a stale UPDATE under token 10 of a row written under 60: err %v, balance %d; want ErrFenced, 5", err, bal)
			}
		})
	}
}

// The rt43c F2 sequences through one ddl pool — the token column dropped with CASCADE
// and added again under the new name; the key column renamed and another of its name
// added (rt42a F2's exploit) — stop at the rename away: the table keeps its name and
// columns, a stale UPDATE stays refused, and key 1, deleted under 70, does not come
// back under 40 on a plain connection.
func TestGuardedTableRenameAwayReplaceColumnRefused(t *testing.T) {
	t.Run("token_column", func(t *testing.T) {
		ctx, dsn, raw := guardedAccounts(t)
		db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
		if _, err := db.ExecContext(ctx, "ALTER TABLE accounts RENAME TO accounts_tmp"); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("rename away through the ddl pool: %v; want ErrUnsupported", err)
		}
		for _, q := range []string{"ALTER TABLE accounts_tmp DROP COLUMN fence_token CASCADE", "ALTER TABLE accounts_tmp ADD COLUMN fence_token bigint NOT NULL DEFAULT 0"} {
			if _, err := db.ExecContext(ctx, q); err == nil {
				t.Fatalf("%s: passed; want an error (accounts_tmp does not exist)", q)
			}
		}
		if _, err := db.ExecContext(ctx, "ALTER TABLE accounts_tmp RENAME TO accounts"); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("rename back through the ddl pool: %v; want ErrUnsupported", err)
		}
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 666 WHERE id = 1")
		var bal int64
		if e := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&bal); e != nil {
			t.Fatal(e)
		}
		if !errors.Is(err, fencedsql.ErrFenced) || bal != 5 {
			t.Errorf("a stale UPDATE under token 10 of a row written under 60: err %v, balance %d; want ErrFenced, 5", err, bal)
		}
	})
	t.Run("key_column", func(t *testing.T) {
		ctx, dsn, raw := guardedAccounts(t)
		db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(ctx, "ALTER TABLE accounts RENAME TO accounts_tmp"); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("rename away through the ddl pool: %v; want ErrUnsupported", err)
		}
		if _, err := raw.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token) VALUES (1, 666, 40)"); err == nil {
			t.Errorf("key 1, deleted under 70, came back under 40 on a plain connection")
		}
	})
}

// The token column dropped with CASCADE and added again on a plain connection (the
// migration role, which the pool cannot refuse) drops the guard's DELETE trigger (its
// WHEN clause reads the column): the pool's lazy check now refuses the table as a
// guard lost (fencedsql_guard_delete missing), where before only schema.Check
// reported it and a stale UPDATE under token 10 of a row written under 60 landed
// (red-team rt43c F2, the PostgreSQL half).
func TestTokenColumnDroppedCascadeOnPlainConnectionRefused(t *testing.T) {
	ctx, dsn, raw := guardedAccounts(t)
	testdb.Exec(t, raw, "ALTER TABLE accounts DROP COLUMN fence_token CASCADE",
		"ALTER TABLE accounts ADD COLUMN fence_token bigint NOT NULL DEFAULT 0")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 666 WHERE id = 1")
	var bal int64
	if e := raw.QueryRow("SELECT balance FROM accounts WHERE id = 1").Scan(&bal); e != nil {
		t.Fatal(e)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "fencedsql_guard_delete") || bal != 5 {
		t.Errorf("after DROP COLUMN fence_token CASCADE and ADD COLUMN on a plain connection, a stale UPDATE under 10 through a new pool: err %v, balance %d; want ErrSchema (guard lost: fencedsql_guard_delete), 5", err, bal)
	}
}
