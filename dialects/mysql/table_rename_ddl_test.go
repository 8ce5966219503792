package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A guarded table cannot be renamed away through a fenced_allow=ddl pool, nor another
// table renamed onto its name — ALTER TABLE … RENAME [TO], RENAME TABLE (several pairs,
// another database): ErrUnsupported, nothing sent, the table still named ledger and
// guarded, and a stale UPDATE under token 10 of a row written under 60 stays refused
// (red-team rt43c F2: renamed away, its token column replaced under the new name and
// renamed back, every token was 0 and the stale write landed).
func TestGuardedTableRenameThroughDDLPoolRefused(t *testing.T) {
	for _, c := range []struct{ name, ddl string }{
		{"alter_rename_to", "ALTER TABLE ledger RENAME TO ledger_tmp"},
		{"alter_rename_bare", "ALTER TABLE ledger RENAME ledger_tmp"},
		{"alter_nowait_rename_with_other_action", "ALTER TABLE ledger NOWAIT ADD COLUMN note TEXT, RENAME AS ledger_tmp"},
		{"rename_table", "RENAME TABLE ledger TO ledger_tmp"},
		{"rename_table_pairs", "RENAME TABLE ledger TO ledger_tmp, ledger_other TO ledger"},
		{"rename_table_other_database", "RENAME TABLE ledger TO elsewhere.ledger"},
		{"rename_onto_guarded_name", "RENAME TABLE ledger_other TO ledger_x, ledger TO ledger_y, ledger_x TO ledger"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			admin, dsn := guardedLedger(t, "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO ledger (id, balance, fence_token, version) VALUES (1, 5, 60, 1)",
				"CREATE TABLE ledger_other (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger&fenced_allow=ddl")
			_, err := db.ExecContext(ctx, c.ddl)
			if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "moves a guarded table away from its name") {
				t.Fatalf("%s through the ddl pool: %v; want ErrUnsupported (a guarded table's name moved)", c.ddl, err)
			}
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE ledger SET balance = 666 WHERE id = 1")
			var bal int64
			if err := admin.QueryRow("SELECT balance FROM ledger WHERE id = 1").Scan(&bal); err != nil {
				t.Fatalf("ledger after the refused %s: %v", c.ddl, err)
			}
			if !errors.Is(err, fencedsql.ErrFenced) || bal != 5 {
				t.Errorf("a stale UPDATE under token 10 of a row written under 60: err %v, balance %d; want ErrFenced, 5", err, bal)
			}
		})
	}
}

// The whole rt43c F2 sequence through one ddl pool: the rename away is refused, so
// the token column cannot be replaced under an unguarded name (the ALTER of a table
// that does not exist fails on the server) nor the table renamed back.
func TestGuardedTableRenameAwayReplaceTokenColumnRefused(t *testing.T) {
	for _, c := range []struct{ away, alter, back string }{
		{"ALTER TABLE ledger RENAME TO ledger_tmp", "ALTER TABLE ledger_tmp DROP COLUMN fence_token, ADD COLUMN fence_token BIGINT NOT NULL DEFAULT 0", "ALTER TABLE ledger_tmp RENAME TO ledger"},
		{"RENAME TABLE ledger TO ledger_tmp", "ALTER TABLE ledger_tmp RENAME COLUMN fence_token TO ft_old, ADD COLUMN fence_token BIGINT NOT NULL DEFAULT 0", "RENAME TABLE ledger_tmp TO ledger"},
	} {
		t.Run("", func(t *testing.T) {
			ctx := context.Background()
			admin, dsn := guardedLedger(t, "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO ledger (id, balance, fence_token, version) VALUES (1, 5, 60, 1)")
			t.Cleanup(func() { admin.Exec("DROP TABLE IF EXISTS ledger_tmp") })
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger&fenced_allow=ddl")
			if _, err := db.ExecContext(ctx, c.away); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%s through the ddl pool: %v; want ErrUnsupported", c.away, err)
			}
			db.ExecContext(ctx, c.alter) // fails: ledger_tmp does not exist
			if _, err := db.ExecContext(ctx, c.back); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%s through the ddl pool: %v; want ErrUnsupported", c.back, err)
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE ledger SET balance = 666 WHERE id = 1")
			var bal int64
			if e := admin.QueryRow("SELECT balance FROM ledger WHERE id = 1").Scan(&bal); e != nil {
				t.Fatal(e)
			}
			if !errors.Is(err, fencedsql.ErrFenced) || bal != 5 {
				t.Errorf("%s; %s; %s through the ddl pool, then a stale UPDATE under token 10 of a row written under 60: err %v, balance %d; want ErrFenced, 5", c.away, c.alter, c.back, err, bal)
			}
		})
	}
}
