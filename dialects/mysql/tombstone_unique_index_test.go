package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt46a F1: a unique index of the guards' own tables besides their PRIMARY
// KEY makes the tombstone trigger's INSERT … ON DUPLICATE KEY UPDATE update another
// key's tombstone (a UNIQUE KEY on fence_token: key 2's tombstone lands on key 1's row;
// a prefix id(1): 'bx' on 'by'), and a stale holder re-inserts the deleted key. It is a
// guard-table door (guardTableIndexes): schema.Check reports it with a Fix that drops
// it, and the lazy check refuses the table until then.

// foldedTombstone deletes first then second under token 20, then inserts second under
// token 15 and checks that no row of second is there; it returns the first error.
func foldedTombstone(t *testing.T, admin *sql.DB, dsn, table string, first, second any) error {
	t.Helper()
	ctx := context.Background()
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables="+table)
	for _, k := range []any{first, second} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "DELETE FROM "+table+" WHERE id = ?", k); err != nil {
			return err
		}
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 15), "INSERT INTO "+table+" (id, balance, version) VALUES (?, 666, 1)", second)
	var n int
	if qerr := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+table+" WHERE id = ?", second).Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if err == nil || n != 0 {
		t.Fatalf("a stale (token 15) INSERT of %v, deleted under token 20, landed (err %v, rows %d)", second, err, n)
	}
	return err
}

// requireIndexDoorFixed checks that schema.Check reports a unique index besides the
// key of a guard table (of kind in) of table, and applies its Fix, after which
// schema.Check reports nothing.
func requireIndexDoorFixed(t *testing.T, admin *sql.DB, table, in string) {
	t.Helper()
	rep := triggerNamesReport(t, admin, table)
	if p := strings.Join(rep.Problems, "\n"); !strings.Contains(p, in+" ") || !strings.Contains(p, "has a unique index besides its PRIMARY KEY") {
		t.Fatalf("schema.Check problems %q: want a unique index besides the key of %s", rep.Problems, in)
	}
	testdb.Exec(t, admin, rep.Fix...)
	if rep := triggerNamesReport(t, admin, table); len(rep.Problems) != 0 {
		t.Fatalf("after the Fix: %q", rep.Problems)
	}
}

func TestTombstoneTableUniqueIndexFoldingTombstonesRefused(t *testing.T) {
	for name, v := range map[string]struct {
		create, index string
		first, second any
	}{
		"unique key on fence_token": {"CREATE TABLE ti_ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
			"ALTER TABLE fencedsql_tomb_ti_ledger ADD UNIQUE KEY ti_tok (fence_token)", 1, 2},
		"unique prefix of the key": {"CREATE TABLE ti_ledger (id VARCHAR(20) NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
			"ALTER TABLE fencedsql_tomb_ti_ledger ADD CONSTRAINT ti_prefix UNIQUE (id(1))", "by", "bx"},
	} {
		t.Run(name, func(t *testing.T) {
			admin, dsn := triggerNamesSetup(t, "ti_ledger", v.create)
			// triggerNamesSetup inserted the keys 1, 2 and 3 (under token 10).
			testdb.Exec(t, admin, fmt.Sprintf("INSERT IGNORE INTO ti_ledger (id, fence_token, version) VALUES ('%v', 10, 1), ('%v', 10, 1)", v.first, v.second), v.index)
			if err := foldedTombstone(t, admin, dsn, "ti_ledger", v.first, v.second); !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("with the index: %v, want ErrSchema (the lazy check refuses the table)", err)
			}
			requireIndexDoorFixed(t, admin, "ti_ledger", "the tombstone table")
			if err := foldedTombstone(t, admin, dsn, "ti_ledger", v.first, v.second); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("after the Fix: %v, want ErrFenced", err)
			}
		})
	}
}

// The floor's form, and a unique key on the tombstone table's deleted_at: reported
// alike (the guards create none).
func TestGuardTableOtherUniqueIndexesReported(t *testing.T) {
	for name, v := range map[string]struct{ index, in string }{
		"unique key on deleted_at":  {"ALTER TABLE fencedsql_tomb_ti_acc ADD UNIQUE KEY ti_at (deleted_at)", "the tombstone table"},
		"unique index on the floor": {"CREATE UNIQUE INDEX ti_floor ON fencedsql_floor (floor)", "the token floor"},
	} {
		t.Run(name, func(t *testing.T) {
			admin, dsn := triggerNamesSetup(t, "ti_acc", "CREATE TABLE ti_acc (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
			testdb.Exec(t, admin, v.index)
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ti_acc")
			if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 20), "DELETE FROM ti_acc WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("a DELETE through the pool: %v, want ErrSchema", err)
			}
			requireIndexDoorFixed(t, admin, "ti_acc", v.in)
		})
	}
}
