package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestEngineAllowListSystemVersioned: the engine allow-list reads
// information_schema.TABLES rows with TABLE_TYPE = 'BASE TABLE' only, but MariaDB
// reports a system-versioned table as TABLE_TYPE 'SYSTEM VERSIONED'. accounts created
// ENGINE=MyISAM WITH SYSTEM VERSIONING (no transactions: a fenced statement that fails
// keeps the rows it wrote, a two-step DELETE is not atomic) is not judged at all:
// schema.Check reports no engine problem and the fenced pool's guarded write passes.
// Right behaviour: the table is judged as any base table (TABLE_TYPE IN ('BASE TABLE',
// 'SYSTEM VERSIONED')): schema.Check reports "has no transactions" with ALTER TABLE …
// ENGINE=InnoDB, and the lazy check refuses the pool's writes (ErrSchema).
func TestEngineAllowListSystemVersioned(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=MyISAM WITH SYSTEM VERSIONING`,
		`INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 100, 5, 3)`)
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	reports, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	var all []string
	for _, r := range reports {
		all = append(all, r.Problems...)
	}
	if p := strings.Join(all, "\n"); !strings.Contains(p, "MyISAM") {
		t.Errorf("FAIL-OPEN: schema.Check of a MyISAM system-versioned accounts reports no engine problem; problems:\n%s", p)
	}
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("FAIL-OPEN: guarded UPDATE of a MyISAM (system-versioned) accounts: %v; want ErrSchema (the engine has no transactions)", err)
	}
}
