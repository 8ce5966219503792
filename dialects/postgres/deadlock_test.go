package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestDeadlockVictimTxAborted: on PostgreSQL a deadlock victim (40P01) needs nothing
// from the wrapper, unlike MySQL/MariaDB (dialects/mysql: TestDeadlockVictimTxEnded):
// the server keeps the victim's transaction open and aborted, refuses its later
// statements (25P02) and answers its COMMIT with a rollback, which the wrapper reports
// as NotCommitted. Nothing of the victim is committed.
func TestDeadlockVictimTxAborted(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	if _, err := raw.Exec(`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);
		INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 100), (3, 100)`); err != nil {
		t.Fatal(err)
	}
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=accounts")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	txA, err := db.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer txA.Rollback() //nolint:errcheck
	txB, err := db.BeginTx(fencedsql.WithToken(ctx, 11), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer txB.Rollback() //nolint:errcheck
	upd := "UPDATE accounts SET balance = balance + 1 WHERE id = $1"
	if _, err := txA.ExecContext(ctx, upd, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := txB.ExecContext(ctx, upd, 2); err != nil {
		t.Fatal(err)
	}
	errA := make(chan error, 1)
	go func() { _, err := txA.ExecContext(ctx, upd, 2); errA <- err }()
	time.Sleep(300 * time.Millisecond)
	_, errB := txB.ExecContext(ctx, upd, 1)
	winner, victim, verr := txA, txB, errB
	if errB == nil {
		winner, victim, verr = txB, txA, <-errA
	} else if err := <-errA; err != nil {
		t.Fatalf("both failed: %v / %v", err, errB)
	}
	var pe *pgconn.PgError
	if !errors.As(verr, &pe) || pe.Code != "40P01" {
		t.Fatalf("the victim's error: %v; want the deadlock 40P01", verr)
	}
	if err := winner.Commit(); err != nil {
		t.Fatal(err)
	}
	_, err = victim.ExecContext(ctx, "UPDATE accounts SET balance = 555 WHERE id = $1", 3)
	if !errors.As(err, &pe) || pe.Code != "25P02" {
		t.Fatalf("the victim's next write: %v; want 25P02 (the transaction is aborted)", err)
	}
	cerr := victim.Commit()
	if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
		t.Fatalf("the victim's Commit: %v (outcome %v); want NotCommitted", cerr, fencedsql.CommitOutcome(cerr))
	}
	for id, want := range map[int]int64{1: 101, 2: 101, 3: 100} {
		var b int64
		if err := raw.QueryRow("SELECT balance FROM accounts WHERE id = $1", id).Scan(&b); err != nil {
			t.Fatal(err)
		}
		if b != want {
			t.Errorf("row %d: balance %d, want %d (the winner's writes only)", id, b, want)
		}
	}
}
