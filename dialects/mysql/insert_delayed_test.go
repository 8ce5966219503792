package mysql_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// INSERT DELAYED (and REPLACE DELAYED) on a guarded table is refused before sending
// with ErrUnsupported, whatever the token. MariaDB runs `INSERT DELAYED … ON DUPLICATE
// KEY UPDATE` sent as text (DELAYED is ignored there) but refuses DELAYED in a prepared
// statement, and the wrapper always sends a guarded statement with its token bound: it
// used to fail with the server's raw Error 1616 after the round trip (red-team rt45f
// F1). Without DELAYED the same statement runs.
func TestInsertDelayedRefusedBeforeSending(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
		`INSERT INTO accounts VALUES (1, 100, 50, 1)`)
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	for _, q := range []string{
		`INSERT DELAYED INTO accounts (id, balance) VALUES (1, 0) ON DUPLICATE KEY UPDATE balance = 0`,
		`INSERT DELAYED accounts (id, balance) VALUES (1, 0) ON DUPLICATE KEY UPDATE balance = 0`,
		`INSERT DELAYED INTO accounts SET id = 1, balance = 0 ON DUPLICATE KEY UPDATE balance = 0`,
		`INSERT LOW_PRIORITY DELAYED INTO accounts (id, balance) VALUES (1, 0) ON DUPLICATE KEY UPDATE balance = 0`,
		`insert /* c */ delayed into accounts (id, balance) values (1, 0) on duplicate key update balance = 0`,
		`INSERT DELAYED INTO accounts (id, balance) VALUES (3, 0)`,
		`INSERT DELAYED INTO accounts (id, balance) SELECT 4, 0`,
		`REPLACE DELAYED INTO accounts (id, balance) VALUES (1, 0)`,
	} {
		for _, tok := range []uint64{60, 10} {
			_, err := db.ExecContext(fencedsql.WithToken(context.Background(), tok), q)
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("token %d: %s: %v, want ErrUnsupported", tok, q, err)
			}
		}
	}
	var bal, tok, n int64
	if err := raw.QueryRow(`SELECT balance, fence_token FROM accounts WHERE id = 1`).Scan(&bal, &tok); err != nil || bal != 100 || tok != 50 {
		t.Fatalf("row 1: balance %d token %d (%v), want untouched 100, 50", bal, tok, err)
	}
	if err := raw.QueryRow(`SELECT COUNT(*) FROM accounts`).Scan(&n); err != nil || n != 1 {
		t.Fatalf("rows %d (%v), want 1", n, err)
	}
	// Without DELAYED it runs, and is fenced.
	const q = `INSERT INTO accounts (id, balance) VALUES (1, 0) ON DUPLICATE KEY UPDATE balance = 0`
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 10), q); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale token 10 without DELAYED: %v, want ErrFenced", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 60), q); err != nil {
		t.Errorf("token 60 without DELAYED: %v", err)
	}
}
