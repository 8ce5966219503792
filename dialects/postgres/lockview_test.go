package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// lockViewEnv is a database with the guarded table accounts (rows 1 and 2, token 1),
// an unguarded table other, and views over both.
func lockViewEnv(t *testing.T) (raw, db *sql.DB, ctx context.Context) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw = rawWith(t, dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE other (id BIGINT PRIMARY KEY, v BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO other VALUES (1, 0), (2, 0)`,
	)
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	for _, id := range []int{1, 2} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 1), "INSERT INTO accounts (id, balance) VALUES ($1, 100)", id); err != nil {
			t.Fatal(err)
		}
	}
	// The views come after the pool's first guarded write: its lazy check (cached per
	// pool) would refuse writes while updatable views over accounts are unguarded.
	for _, q := range []string{
		`CREATE SCHEMA s2`,
		`CREATE VIEW av AS SELECT id, balance FROM accounts`,
		`CREATE VIEW av2 AS SELECT id, balance FROM av`,
		`CREATE VIEW s2."Av3" AS SELECT id, balance FROM av2`,
		`CREATE VIEW avj AS SELECT a.id, a.balance FROM accounts a JOIN other o ON o.id = a.id`,
		`CREATE VIEW ov AS SELECT id, v FROM other`,
	} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	return raw, db, ctx
}

// A locking read through a view over a guarded table (a view, a view of a view, a
// join view, qualified and quoted) locks the table's rows, which the wrapper cannot
// claim: with a token it is refused (ErrUnsupported) and nothing is sent, so nothing
// is locked and an older holder's write is fenced by nothing it did not see; without
// FOR UPDATE, or without a token, the same read passes, and a locking read of an
// unguarded table or of a view over one passes with a token.
func TestLockingReadThroughViewRefused(t *testing.T) {
	raw, db, ctx := lockViewEnv(t)
	refused := []string{
		`SELECT id, balance FROM av WHERE id = 1 FOR UPDATE`,
		`SELECT id, balance FROM av2 WHERE id = 1 FOR SHARE`,
		`SELECT id, balance FROM s2."Av3" WHERE id = 1 FOR NO KEY UPDATE`,
		`SELECT id, balance FROM avj WHERE id = 1 FOR UPDATE`,
		`SELECT o.id FROM other o JOIN av a ON a.id = o.id WHERE o.id = 1 FOR UPDATE`,
		`SELECT id FROM other WHERE id IN (SELECT id FROM av) FOR KEY SHARE`,
		`(SELECT id, balance FROM AV WHERE id = $1 FOR UPDATE)`,
	}
	for _, q := range refused {
		var args []any
		if q[0] == '(' {
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
		// Nothing was sent: row 1 is not locked.
		if _, lerr := raw.ExecContext(ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE NOWAIT"); lerr != nil {
			t.Errorf("%s: row 1 locked after the refusal: %v", q, lerr)
		}
		_ = tx.Rollback()
		// With a token in the context, outside a transaction: refused too.
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), q, args...); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s with a token (Exec): %v, want ErrUnsupported", q, err)
		}
		// Without a token it is an ordinary locking read.
		if _, err := db.ExecContext(ctx, q, args...); err != nil {
			t.Errorf("%s without a token: %v", q, err)
		}
	}
	// Prepared, the statement is judged at each execution, with its token.
	st, err := db.PrepareContext(ctx, `SELECT id, balance FROM av WHERE id = $1 FOR UPDATE`)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.StmtContext(ctx, st).QueryContext(ctx, 1); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("prepared locking read through a view with a token: %v, want ErrUnsupported", err)
	}
	_ = tx.Rollback()
	if _, err := st.ExecContext(ctx, 1); err != nil {
		t.Errorf("prepared locking read through a view without a token: %v", err)
	}

	passes := []string{
		`SELECT id, balance FROM av WHERE id = 1`,
		`SELECT id, balance FROM avj WHERE id = 1`,
		`SELECT id, v FROM other WHERE id = 1 FOR UPDATE`,
		`SELECT id, v FROM ov WHERE id = 1 FOR UPDATE`,
		`WITH x AS (SELECT 1 AS id) SELECT o.id FROM other o JOIN x ON x.id = o.id FOR UPDATE OF o`,
	}
	for _, q := range passes {
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
	// The older holder's write still goes through: nothing above claimed row 1.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 7 WHERE id = 1"); err != nil {
		t.Fatalf("older holder's write: %v", err)
	}
	// The claim by name is the way: it fences the older holder.
	tx, err = db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
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

// Under WithSchemaCheck(false) the wrapper sends no catalog query, so it cannot tell a
// view from a table: the locking read passes as before (documented).
func TestLockingReadThroughViewSchemaCheckOff(t *testing.T) {
	dsn := testdb.Postgres(t)
	rawWith(t, dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE VIEW av AS SELECT id, balance FROM accounts`)
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=accounts&fenced_schema_check=false")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx := context.Background()
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.QueryContext(ctx, `SELECT id FROM av FOR UPDATE`)
	if err != nil {
		t.Fatalf("schema check off: %v", err)
	}
	rows.Close()
}
