package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	_ "github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestArgumentCountRefusedTyped (red-team rt37d F2): a guarded write given more or
// fewer arguments than its placeholders is refused before anything is sent, with
// ErrUnsupported, and CommitOutcome says NotCommitted; the row is unchanged. Before,
// the error was a bare fmt.Errorf, which CommitOutcome called Unknown.
func TestArgumentCountRefusedTyped(t *testing.T) {
	p, raw := accountsAt10SQLite(t)
	db, err := sql.Open("fenced-sqlite", "file:"+p+"?fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	for _, args := range [][]any{{1, 1, 3}, {1}} {
		_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 20), "UPDATE accounts SET balance = ? WHERE id = ?", args...)
		if !errors.Is(err, fencedsql.ErrUnsupported) || fencedsql.CommitOutcome(err) != fencedsql.NotCommitted {
			t.Errorf("%d arguments for 2 placeholders: %v (outcome %v); want ErrUnsupported, NotCommitted", len(args), err, fencedsql.CommitOutcome(err))
		}
	}
	var b, tok int64
	if err := raw.QueryRow("SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&b, &tok); err != nil {
		t.Fatal(err)
	}
	if b != 1 || tok != 10 {
		t.Errorf("row 1 after the refusals: balance %d, token %d; want 1, 10", b, tok)
	}
}
