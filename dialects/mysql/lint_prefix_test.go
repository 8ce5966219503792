package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A primary key on a column prefix: the tombstones key on the whole column, and a
// red-team pass re-inserted 'abcdY' under an older token after 'abcdX' (the same key
// for the table) was deleted under a newer one. The lazy check refuses the table
// (ErrSchema, nothing written) and schema.Check reports it.
func TestLintPrefixPrimaryKey(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.ExecContext(ctx, "CREATE TABLE acc (name VARCHAR(20) NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (name(4))) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO acc (name) VALUES ('abcdX')"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("INSERT into a table keyed on a column prefix: err = %v, want ErrSchema", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM acc").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows = %d (%v): the refused INSERT wrote", n, err)
	}
	reps, err := schema.Check(ctx, raw, mysqldialect.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	if !strings.Contains(strings.Join(reps[0].Problems, "\n"), "prefix of column name") {
		t.Fatalf("schema.Check problems %q, want the prefix key", reps[0].Problems)
	}
}
