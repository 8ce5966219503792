package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A case twin on MariaDB with lower_case_table_names = 0 (the Linux default): `Acc`
// next to the guarded `acc` is another table. A write naming it is fenced as a guarded
// write, so the twin's own columns must pass the lazy check: with a nullable token
// column the stale write would store the fencing NULL, so it is refused with ErrSchema
// and the row keeps its token; a fit twin is fenced like the guarded table (a stale
// token gets ErrFenced); the guarded table itself is unaffected.
func TestCaseTwinChecked(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn)
	var lcn int
	if err := raw.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lcn); err != nil {
		t.Fatal(err)
	}
	if lcn != 0 {
		t.Fatalf("lower_case_table_names = %d: this test needs a case-sensitive server (scripts/servers.sh starts one)", lcn)
	}
	for _, q := range []string{
		"CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE Acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NULL DEFAULT 0, version BIGINT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE ACC (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO Acc (id, fence_token) VALUES (1, 10)",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc"))
	for _, tbl := range []string{"acc", "ACC"} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO "+tbl+" (id, balance) VALUES (1, 1)"); err != nil {
			t.Fatalf("INSERT INTO %s: %v", tbl, err)
		}
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE "+tbl+" SET balance = 666 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("stale UPDATE of %s: %v, want ErrFenced", tbl, err)
		}
	}
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE Acc SET balance = 666 WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("stale UPDATE of the unfit twin Acc: %v, want ErrSchema", err)
	}
	var tok sql.NullInt64
	var bal int
	if err := raw.QueryRowContext(ctx, "SELECT fence_token, balance FROM Acc WHERE id = 1").Scan(&tok, &bal); err != nil {
		t.Fatal(err)
	}
	if !tok.Valid || tok.Int64 != 10 || bal != 0 {
		t.Errorf("Acc row after the refused write: token %v, balance %d; want 10, 0", tok, bal)
	}
}
