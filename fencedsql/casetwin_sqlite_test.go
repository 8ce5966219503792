package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"path/filepath"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// SQLite compares names ignoring the case of ASCII letters only: CAFÉ next to the
// guarded café is another table. A fenced write of it is refused, nothing written;
// café (in any ASCII case) is still fenced.
func TestSQLiteNonASCIICaseTwinRefused(t *testing.T) {
	ctx := context.Background()
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path)
	for _, q := range []string{
		`CREATE TABLE café (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE CAFÉ (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NULL DEFAULT 0, version BIGINT NULL DEFAULT 0)`,
		`INSERT INTO CAFÉ (id, fence_token) VALUES (1, 10)`,
		`INSERT INTO café (id, fence_token) VALUES (1, 10)`,
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(q, err)
		}
	}
	db := testdb.Open(t, sqlite.DriverName, "file:"+path+"?fenced_tables=café")
	for _, q := range []string{`UPDATE CAFÉ SET balance = 666 WHERE id = 1`, `UPDATE "cafÉ" SET balance = 666 WHERE id = 1`} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("stale %s: %v; want ErrUnsupported", q, err)
		}
	}
	var tok sql.NullInt64
	var bal int64
	if qerr := raw.QueryRow(`SELECT fence_token, balance FROM CAFÉ WHERE id = 1`).Scan(&tok, &bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal != 0 || !tok.Valid || tok.Int64 != 10 {
		t.Errorf("CAFÉ row: token %v balance %d; want it unchanged (10, 0)", tok, bal)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), `UPDATE CAFé SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatalf("fresh UPDATE CAFé (café): %v", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), `UPDATE café SET balance = 2 WHERE id = 1`); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale UPDATE café: %v; want ErrFenced", err)
	}
	if qerr := raw.QueryRow(`SELECT fence_token, balance FROM café WHERE id = 1`).Scan(&tok, &bal); qerr != nil {
		t.Fatal(qerr)
	}
	if bal != 1 || !tok.Valid || tok.Int64 != 20 {
		t.Errorf("café row: token %v balance %d; want 20, 1", tok, bal)
	}
}
