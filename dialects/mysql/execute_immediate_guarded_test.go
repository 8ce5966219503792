package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestExecuteImmediateNamingGuardedTableRefused (red-team rt33a F9): on a pool with
// fenced_allow=dynamic_sql, a transaction begun under WithToken(ctx, 0) (which must
// refuse every guarded write and claim) runs EXECUTE IMMEDIATE 'UPDATE accounts …',
// EXECUTE IMMEDIATE '… USING ?' and EXECUTE IMMEDIATE "DELETE FROM accounts …"
// unfenced: the rows change, fence_token stays 0, row 1 is deleted. The text is a
// literal and is there to read — route.go refuses PREPARE … FROM '<statement naming a
// guarded table>', a DO block and a compound statement naming one "even when dynamic
// SQL is allowed", and design.md says an EXECUTE IMMEDIATE literal "is judged first as
// if sent alone" — but EXECUTE only gets immediateTx (transaction control), not the
// deepGuard refusal. Now each is refused with ErrUnsupported, nothing sent, as
// PREPARE of the same text is; an EXECUTE IMMEDIATE naming no guarded table still runs.
func TestExecuteImmediateNamingGuardedTableRefused(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT PRIMARY KEY, balance INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, balance) VALUES (1, 1), (2, 2), (3, 3)")
	sep := "?"
	if strings.Contains(dsn, "?") {
		sep = "&"
	}
	db, err := sql.Open("fenced-mysql", dsn+sep+"fenced_tables=accounts&fenced_allow=dynamic_sql")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.Exec("PREPARE s FROM 'UPDATE accounts SET balance = 7 WHERE id = 3'"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("control: PREPARE of a statement naming the guarded table: %v, want ErrUnsupported", err)
	}
	tx, err := db.BeginTx(fencedsql.WithToken(context.Background(), 0), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var passed []string
	for _, q := range []string{
		"EXECUTE IMMEDIATE 'UPDATE accounts SET balance = 9 WHERE id = 2'",
		"EXECUTE IMMEDIATE 'UPDATE accounts SET balance = ? WHERE id = 3' USING 8",
		`EXECUTE IMMEDIATE "DELETE FROM accounts WHERE id = 1"`,
		"EXECUTE IMMEDIATE CONCAT('UPDATE accounts SET balance = 9 ', 'WHERE id = 2')",
		"EXECUTE IMMEDIATE 'SELECT id FROM accounts WHERE id = 1 FOR UPDATE'",
	} {
		if _, err := tx.Exec(q); !errors.Is(err, fencedsql.ErrUnsupported) {
			passed = append(passed, q)
			t.Errorf("%s: %v, want ErrUnsupported", q, err)
		}
	}
	if _, err := tx.Exec("EXECUTE IMMEDIATE 'SELECT 1'"); err != nil {
		t.Errorf("EXECUTE IMMEDIATE naming no guarded table: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var n, changed int
	if err := raw.QueryRow("SELECT COUNT(*), COALESCE(SUM(balance <> id), 0) FROM accounts").Scan(&n, &changed); err != nil {
		t.Fatal(err)
	}
	if n != 3 || changed != 0 {
		t.Fatalf("unfenced dynamic writes of the guarded table ran in a transaction bound to token 0 (%q): rows left %d of 3, %d changed", passed, n, changed)
	}
}
