package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt45b F8: a foreign key of the guarded table whose referencing columns include the version
// column, ON UPDATE CASCADE: a stale holder's UPDATE of the (unguarded) referenced
// table, through the pool, cascades into the guarded rows with the version advanced,
// which the row guard accepts (token unchanged, version greater). cascadedoor.go's
// cascades() reported such keys as "a note, not a problem", reasoning that the guard
// refuses a cascade "(an UPDATE that does not advance the version)" — this one does.
// Also ON DELETE SET DEFAULT (balance, version) with a higher version default. Now a
// problem (cascades), which a pool's lazy check refuses; a key that writes no
// fencing column stays a note.
func TestCascadeWritingFencingColumnIsADoor(t *testing.T) {
	for _, c := range []struct{ name, fk, write string }{
		{"OnUpdateCascade", "ALTER TABLE acc ADD FOREIGN KEY (balance, version) REFERENCES cascade_ref (b, v) ON UPDATE CASCADE",
			"UPDATE cascade_ref SET b = 999, v = 1 WHERE b = 0"},
		{"OnDeleteSetDefault", "ALTER TABLE acc ALTER COLUMN version SET DEFAULT 1000000, ALTER COLUMN balance SET DEFAULT 999, ADD FOREIGN KEY (balance, version) REFERENCES cascade_ref (b, v) ON DELETE SET DEFAULT (balance, version)",
			"DELETE FROM cascade_ref WHERE b = 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			raw, dsn := wholeAcc(t,
				"CREATE TABLE cascade_ref (b bigint, v bigint, PRIMARY KEY (b, v))",
				"INSERT INTO cascade_ref VALUES (0, 0), (999, 1000000)",
				"INSERT INTO acc (id, fence_token) VALUES (30, 70)",
				c.fk)
			probs, _ := accReport(t, raw)
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
			if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 40), "UPDATE acc SET balance = 1 WHERE id = 5"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("a guarded write through a pool opened after the key was added: %v, want ErrSchema", err)
			}
			_, err := db.ExecContext(fencedsql.WithToken(context.Background(), 40), c.write)
			var b, v, tok int64
			if qerr := raw.QueryRow("SELECT balance, version, fence_token FROM acc WHERE id = 30").Scan(&b, &v, &tok); qerr != nil {
				t.Fatal(qerr)
			}
			if b != 0 && len(probs) == 0 {
				t.Fatalf("%s under token 40 through the pool: %v; row 30 (written under 70) now balance %d version %d token %d; schema.Check problems %q: want the cascade refused or the key reported", c.write, err, b, v, tok, probs)
			}
		})
	}
}

// A cascading key that writes neither fencing column stays a note.
func TestCascadeNotWritingFencingColumnIsANote(t *testing.T) {
	raw, _ := wholeAcc(t,
		"CREATE TABLE cascade_ref (b bigint PRIMARY KEY)",
		"INSERT INTO cascade_ref VALUES (0)",
		"ALTER TABLE acc ADD FOREIGN KEY (balance) REFERENCES cascade_ref (b) ON UPDATE CASCADE ON DELETE SET NULL")
	if probs, _ := accReport(t, raw); len(probs) != 0 {
		t.Fatalf("a cascade writing no fencing column: problems %q, want a note only", probs)
	}
}
