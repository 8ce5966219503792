package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A trigger's unqualified names are its own database's. A trigger in another database
// of the same server that writes its own accounts is not a side door of this
// database's accounts (CI found every pool refused while another test's database had
// one); one that names this database's accounts is.
func TestTriggerDoorOtherDatabase(t *testing.T) {
	dsnA, dsnB := testdb.MySQL(t), testdb.MySQL(t)
	ctx := context.Background()
	const accounts = "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"
	rawA, err := sql.Open("mysql", dsnA)
	if err != nil {
		t.Fatal(err)
	}
	defer rawA.Close()
	rawB, err := sql.Open("mysql", dsnB)
	if err != nil {
		t.Fatal(err)
	}
	defer rawB.Close()
	var dbA string
	if err := rawA.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbA); err != nil {
		t.Fatal(err)
	}
	if _, err := rawA.ExecContext(ctx, accounts); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{accounts, "CREATE TABLE ledger (id BIGINT PRIMARY KEY)",
		"CREATE TRIGGER own_wipe AFTER INSERT ON ledger FOR EACH ROW DELETE FROM accounts WHERE id = NEW.id"} {
		if _, err := rawB.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	open := func() *sql.DB {
		db, err := sql.Open("fenced-mysql", fencetest.WithParam(dsnA, "fenced_tables=accounts"))
		if err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { db.Close() })
		return db
	}
	if _, err := open().ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO accounts (id) VALUES (1)"); err != nil {
		t.Fatalf("a trigger of another database writing its own accounts refused this one's: %v", err)
	}
	if _, err := rawB.ExecContext(ctx, "CREATE TRIGGER cross_wipe AFTER DELETE ON ledger FOR EACH ROW DELETE FROM `"+dbA+"`.accounts WHERE id = OLD.id"); err != nil {
		t.Fatal(err)
	}
	_, err = open().ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO accounts (id) VALUES (2)")
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "cross_wipe") {
		t.Fatalf("a trigger of another database naming this one's accounts: err = %v, want ErrSchema naming cross_wipe", err)
	}
}
