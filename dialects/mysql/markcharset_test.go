package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"

	"github.com/fencedsql/fencedsql/dialects/mysql"
)

// TestMarkCharsetServer: the connection's character sets do not reach the fencing
// machinery (a red-team pass). Under character_set_connection = utf32 the
// one-statement DELETE's mark is still read by the tombstone (it failed with a raw
// 1292 from the tombstone's CAST), and under character_set_results = utf16 the
// session check reads the settings ungarbled (it refused with a garbled name): it
// names utf16, and then gbk.
func TestMarkCharsetServer(t *testing.T) {
	be := fencetest.MySQL()
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw, err := sql.Open(be.RawName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	for _, q := range []string{
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, balance, fence_token) VALUES (1, 0, 5), (2, 0, 5)",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	db, err := sql.Open(be.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	exec := func(tok uint64, q string, args ...any) error {
		_, err := conn.ExecContext(fencedsql.WithToken(ctx, tok), q, args...)
		return err
	}
	if err := exec(20, "UPDATE accounts SET balance = 1 WHERE id = ?", 2); err != nil {
		t.Fatal(err)
	}
	if err := exec(20, "DELETE FROM accounts WHERE id = ?", 3); err != nil {
		t.Fatal(err)
	}
	if err := exec(1, "SET character_set_connection = utf32"); err != nil {
		t.Fatal(err)
	}
	if err := exec(20, "DELETE FROM accounts WHERE id = ?", 1); err != nil {
		t.Fatalf("DELETE under character_set_connection = utf32: %v", err)
	}
	if err := exec(10, "INSERT INTO accounts (id, balance) VALUES (?, ?)", 1, 9); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale re-insert under utf32: %v, want ErrFenced", err)
	}
	if err := exec(1, "SET character_set_connection = utf8mb4, character_set_results = utf16"); err != nil {
		t.Fatal(err)
	}
	// A results character set other than utf8/binary is refused (red-team rt40b F4: it
	// changes the names the wrapper reads back), and the check reads it ungarbled.
	err = exec(20, "UPDATE accounts SET balance = 1 WHERE id = ?", 2)
	if se := (*fencedsql.SessionError)(nil); !errors.As(err, &se) || se.Value != "utf16" || !strings.Contains(err.Error(), "character_set_results") {
		t.Fatalf("UPDATE under character_set_results = utf16: %v, want a SessionError naming utf16", err)
	}
	if err := exec(1, "SET character_set_client = gbk"); err != nil {
		t.Fatal(err)
	}
	err = exec(20, "UPDATE accounts SET balance = 2 WHERE id = ?", 2)
	var se *fencedsql.SessionError
	if !errors.As(err, &se) || se.Value != "gbk" || !strings.Contains(err.Error(), "character_set_client") {
		t.Fatalf("UPDATE under gbk, results utf16: %v, want a SessionError naming gbk", err)
	}
}
