package mysql_test

import (
	"context"
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMaxTokenReadsTheTablesOwnDatabase (red-team rt31b F4): schema.MaxToken is given
// a guarded table database-qualified (`shop.accounts`, as fenced_tables names it for a
// pool whose DSN names another database, and as `fencedsql-schema -max-token -tables
// shop.accounts` passes it) through a connection to another database. shop's guards
// keep their tombstones (token 50) and read their floor (1000) in shop: MaxToken reads
// them there and answers 999, as through shop's own DSN, never the rows' 20 alone (a
// new lock service raised to 21 would hand out tokens every guard of shop refuses).
func TestMaxTokenReadsTheTablesOwnDatabase(t *testing.T) {
	ctx := context.Background()
	dsnShop, dsnHome := testdb.MySQL(t), testdb.MySQL(t)
	cfg, err := gomysql.ParseDSN(dsnShop)
	if err != nil {
		t.Fatal(err)
	}
	shop := cfg.DBName
	rawShop := testdb.Open(t, "mysql", dsnShop,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	fencetest.Guard(t, ctx, rawShop, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsnShop, "fenced_tables=accounts"))
	for _, w := range []struct {
		tok uint64
		q   string
	}{
		{10, "INSERT INTO accounts (id, balance) VALUES (1, 0)"},
		{20, "INSERT INTO accounts (id, balance) VALUES (2, 0)"},
		{50, "DELETE FROM accounts WHERE id = 1"},
	} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, w.tok), w.q); err != nil {
			t.Fatalf("%s under %d: %v", w.q, w.tok, err)
		}
	}
	var tomb int64
	if err := rawShop.QueryRowContext(ctx, "SELECT MAX(fence_token) FROM fencedsql_tomb_accounts").Scan(&tomb); err != nil || tomb != 50 {
		t.Fatalf("setup: tombstone token %d (%v), want 50", tomb, err)
	}
	if err := schema.RaiseTokenFloor(ctx, rawShop, mysql.Dialect, 1000); err != nil {
		t.Fatal(err)
	}
	// Through shop's own DSN: the floor − 1.
	if m, err := schema.MaxToken(ctx, rawShop, mysql.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || m != 999 {
		t.Fatalf("setup: MaxToken through shop's DSN = %d, %v; want 999", m, err)
	}
	rawHome := testdb.Open(t, "mysql", dsnHome)
	m, err := schema.MaxToken(ctx, rawHome, mysql.Dialect, schema.GuardSpec{Table: shop + ".accounts"})
	if err != nil {
		t.Fatalf("MaxToken through another database's DSN: %v", err)
	}
	if m < 999 {
		t.Fatalf("MaxToken(%s.accounts) through another database's DSN = %d; want at least 999 (%s's floor is 1000, its tombstone holds 50): "+
			"a new lock service raised to %d hands out tokens every guard of %s refuses", shop, m, shop, m, shop)
	}
}
