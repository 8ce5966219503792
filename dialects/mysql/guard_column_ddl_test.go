package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// guardedLedger creates ledger (create), runs the rows statements, installs the guard
// and the tombstone guard, and returns a plain connection and the DSN.
func guardedLedger(t *testing.T, create string, rows ...string) (*sql.DB, string) {
	t.Helper()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn, append([]string{create}, rows...)...)
	admin.SetMaxOpenConns(1)
	fencetest.Guard(t, context.Background(), admin, mysql.Dialect, schema.GuardSpec{Table: "ledger"})
	return admin, dsn
}

// requireGuardColumnRefusal checks that err is the pool's refusal of DDL that changes
// a column the guards read.
func requireGuardColumnRefusal(t *testing.T, q string, err error) {
	t.Helper()
	if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "column the guards read") {
		t.Fatalf("%s through the ddl pool: %v, want ErrUnsupported (a column the guards read)", q, err)
	}
}

// DDL through a fenced_allow=ddl pool that replaces the token column — RENAME COLUMN
// or DROP COLUMN and ADD fence_token … DEFAULT 0, in one ALTER TABLE or two — is
// refused with ErrUnsupported before anything is sent, and a stale UPDATE under token
// 10 of a row written under 60 stays refused (red-team rt42a F1: every token reset to
// 0 and the stale write landed; the guard triggers name the column, so they guarded
// the new one).
func TestTokenColumnReplacedThroughDDLPoolRefused(t *testing.T) {
	for _, c := range []struct {
		name string
		ddl  string // its first statement is the one refused
	}{
		{"rename", "ALTER TABLE ledger RENAME COLUMN fence_token TO fence_token_old"},
		{"rename_and_add_one_statement", "ALTER TABLE `ledger` RENAME COLUMN `fence_token` TO ft_old, ADD fence_token BIGINT NOT NULL DEFAULT 0"},
		{"drop", "ALTER TABLE ledger DROP COLUMN fence_token"},
		{"drop_and_add_one_statement", "ALTER TABLE ledger DROP fence_token, ADD COLUMN fence_token BIGINT NOT NULL DEFAULT 0"},
		{"rename_other_column_into_place", "ALTER TABLE ledger RENAME COLUMN balance TO fence_token"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			admin, dsn := guardedLedger(t, "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO ledger (id, balance, fence_token, version) VALUES (1, 5, 60, 1)")
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger&fenced_allow=ddl")
			_, err := db.ExecContext(ctx, c.ddl)
			requireGuardColumnRefusal(t, c.ddl, err)
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE ledger SET balance = 666 WHERE id = 1")
			var bal int64
			if err := admin.QueryRow("SELECT balance FROM ledger WHERE id = 1").Scan(&bal); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(err, fencedsql.ErrFenced) || bal != 5 {
				t.Errorf("a stale UPDATE under token 10 of a row written under 60: err %v, balance %d; want ErrFenced, 5", err, bal)
			}
		})
	}
}

// MariaDB's lock-wait clause (ALTER TABLE ledger [WAIT n | NOWAIT] action …) does not
// hide the action: a token column dropped and added again DEFAULT 0, or converted by
// MODIFY, after NOWAIT or WAIT n is refused with ErrUnsupported before anything is
// sent, and a stale UPDATE under token 10 of a row written under 60 stays refused
// (red-team rt43c F1: the DDL passed, every token was reset to 0 and the stale write
// landed).
func TestLockWaitClauseTokenColumnReplacedThroughDDLPoolRefused(t *testing.T) {
	for _, c := range []struct{ name, ddl string }{
		{"nowait_drop_add", "ALTER TABLE ledger NOWAIT DROP COLUMN fence_token, ADD COLUMN fence_token BIGINT NOT NULL DEFAULT 0"},
		{"wait_drop_add", "ALTER TABLE ledger WAIT 5 DROP fence_token, ADD fence_token BIGINT NOT NULL DEFAULT 0"},
		{"if_exists_online_nowait_rename", "ALTER ONLINE TABLE IF EXISTS ledger NOWAIT RENAME COLUMN fence_token TO ft_old, ADD COLUMN fence_token BIGINT NOT NULL DEFAULT 0"},
		{"nowait_modify", "ALTER TABLE ledger NOWAIT MODIFY fence_token TINYINT NOT NULL DEFAULT 0"},
		{"wait_change", "ALTER TABLE ledger WAIT 1 CHANGE fence_token fence_token FLOAT NOT NULL DEFAULT 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			admin, dsn := guardedLedger(t, "CREATE TABLE ledger (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO ledger (id, balance, fence_token, version) VALUES (1, 5, 60, 1)")
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger&fenced_allow=ddl")
			if _, err := db.ExecContext(ctx, c.ddl); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%s through the ddl pool: %v; want ErrUnsupported, nothing sent", c.ddl, err)
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE ledger SET balance = 666 WHERE id = 1")
			var bal, tok int64
			if err := admin.QueryRow("SELECT balance, fence_token FROM ledger WHERE id = 1").Scan(&bal, &tok); err != nil {
				t.Fatal(err)
			}
			if !errors.Is(err, fencedsql.ErrFenced) || bal != 5 || tok != 60 {
				t.Errorf("a stale UPDATE under token 10 of a row written under 60: err %v, balance %d, token %d; want ErrFenced, 5, 60", err, bal, tok)
			}
		})
	}
}

// DDL through a fenced_allow=ddl pool that changes the primary key's meaning under
// the tombstones — CONVERT TO CHARACTER SET … COLLATE (every character column, the key
// included, converted like MODIFY), a key column renamed or dropped — is refused with
// ErrUnsupported, so 'Alice', deleted under 50, does not come back as 'alicE' under 40
// on a plain connection (red-team rt42a F2: the table's key became case-insensitive,
// the tombstone table's stayed utf8mb4_bin).
func TestKeyColumnChangeThroughDDLPoolRefused(t *testing.T) {
	ctx := context.Background()
	admin, dsn := guardedLedger(t, "CREATE TABLE ledger (id VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO ledger (id, fence_token, version) VALUES ('Alice', 10, 1)")
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=ledger&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM ledger WHERE id = 'Alice'"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"ALTER TABLE ledger CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
		"ALTER TABLE ledger CONVERT TO CHARSET utf8mb4 COLLATE utf8mb4_general_ci",
		"ALTER TABLE ledger RENAME COLUMN id TO acc_id",
		"ALTER TABLE ledger DROP COLUMN id",
	} {
		_, err := db.ExecContext(ctx, q)
		requireGuardColumnRefusal(t, q, err)
	}
	// DEFAULT CHARACTER SET changes only the default of columns added later.
	if _, err := db.ExecContext(ctx, "ALTER TABLE ledger DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci"); err != nil {
		t.Errorf("DEFAULT CHARACTER SET through the ddl pool: %v, want it to pass", err)
	}
	if _, err := admin.ExecContext(ctx, "INSERT INTO ledger (id, balance, fence_token) VALUES ('alicE', 666, 40)"); err != nil {
		t.Fatalf("'alicE' is another key of the utf8mb4_bin table: %v", err)
	}
	if _, err := admin.ExecContext(ctx, "INSERT INTO ledger (id, balance, fence_token) VALUES ('Alice', 666, 40)"); err == nil {
		t.Errorf("key 'Alice', deleted under 50, came back under 40 on a plain connection")
	}
}

// A guarded child whose foreign key to a guarded parent cascades ON DELETE is refused
// by the pool's lazy check (ErrSchema naming the cascade door): MariaDB runs no
// triggers for the cascade of holder 50's fenced DELETE of the parent, so the child's
// row is deleted without a tombstone and holder 40 could re-insert its key (red-team
// rt42a F3, the SQLite class).
func TestCascadeFromGuardedParentRefusedByLazyCheck(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE parent (id INT NOT NULL PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE child (id INT NOT NULL PRIMARY KEY, parent_id INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, CONSTRAINT child_parent FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE) ENGINE=InnoDB",
		"INSERT INTO parent VALUES (1, 30, 1), (2, 30, 1)",
		"INSERT INTO child VALUES (7, 1, 30, 1)")
	admin.SetMaxOpenConns(1)
	fencetest.Guard(t, ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "parent"})
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=parent,child")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM parent WHERE id = 1"); err != nil {
		t.Fatalf("fenced DELETE of parent 1 under 50: %v", err)
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 40), "INSERT INTO child (id, parent_id) VALUES (7, 2)")
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM child WHERE id = 7").Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "cascade child_parent") {
		t.Errorf("child 7, deleted by holder 50's cascade, re-inserted under 40 through the pool: err %v, rows %d; want ErrSchema naming the cascade and no row", err, n)
	}
}
