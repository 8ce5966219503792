package mysql_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// A locking read (FOR UPDATE, LOCK IN SHARE MODE) through a view over a
// guarded table — a view, a view of a view, a join view, one in another database —
// locks the table's rows, which the wrapper cannot claim: with a token it is refused
// (ErrUnsupported) and nothing is sent; without the locking clause, or without a
// token, it passes, and a locking read of an unguarded table or of a view over one
// passes with a token.
func TestLockingReadThroughViewRefusedMariaDB(t *testing.T) {
	raw, db, ctx := txEnv(t, "")
	// The views come after the pool's first guarded write (txEnv): its lazy check,
	// cached per pool, refuses writes while updatable views over accounts are there.
	for _, q := range []string{
		"CREATE VIEW av AS SELECT id, balance FROM accounts",
		"CREATE VIEW av2 AS SELECT id, balance FROM av",
		"CREATE VIEW avj AS SELECT a.id, a.balance FROM accounts a JOIN other o ON o.id = a.id",
		"CREATE ALGORITHM = TEMPTABLE VIEW avt AS SELECT id, balance FROM accounts",
		"CREATE VIEW ov AS SELECT id, v FROM other",
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	var dbName string
	if err := raw.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&dbName); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT id, balance FROM av WHERE id = 1 FOR UPDATE",
		"SELECT id, balance FROM av WHERE id = ? LOCK IN SHARE MODE",
		"SELECT id, balance FROM av2 WHERE id = 1 FOR UPDATE",
		"SELECT id, balance FROM avj WHERE id = 1 FOR UPDATE",
		"SELECT id, balance FROM avt WHERE id = 1 FOR UPDATE",
		"SELECT id, balance FROM `" + dbName + "`.`av` WHERE id = 1 FOR UPDATE",
		"SELECT o.id FROM other o JOIN av a ON a.id = o.id WHERE o.id = 1 FOR UPDATE",
	} {
		var args []any
		if strings.Contains(q, "?") {
			args = []any{1}
		}
		tx, err := db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.QueryContext(ctx, q, args...)
		if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s with a token: %v, want ErrUnsupported", q, err)
		}
		if _, lerr := raw.ExecContext(ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE NOWAIT"); lerr != nil {
			t.Errorf("%s: row 1 locked after the refusal: %v", q, lerr)
		}
		_ = tx.Rollback()
		// Without a token it is an ordinary locking read. (Queried: ExecContext of a
		// SELECT with arguments stalls on this driver and server, with or without the
		// wrapper.)
		if rows, err := db.QueryContext(ctx, q, args...); err != nil {
			t.Errorf("%s without a token: %v", q, err)
		} else {
			rows.Close()
		}
	}
	for _, q := range []string{
		"SELECT id, balance FROM av WHERE id = 1",
		"SELECT id, v FROM other WHERE id = 1 FOR UPDATE",
		"SELECT id, v FROM ov WHERE id = 1 LOCK IN SHARE MODE",
	} {
		tx, err := db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
		if err != nil {
			t.Fatal(err)
		}
		rows, err := tx.QueryContext(ctx, q)
		if err != nil {
			t.Errorf("%s with a token: %v", q, err)
		} else {
			rows.Close()
		}
		_ = tx.Rollback()
	}
	// Nothing above claimed row 1: the older holder's write goes through. The claim by
	// name fences it.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 7 WHERE id = 1"); err != nil {
		t.Fatalf("older holder's write: %v", err)
	}
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	var bal int64
	if err := tx.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1 FOR UPDATE").Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 8 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("older holder after the claim by name: %v, want ErrFenced", err)
	}
}
