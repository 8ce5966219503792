package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"net"
	"strconv"
	"syscall"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
)

// Each row of the package doc's Commit outcome table, as CommitOutcome classifies it.
// The errors are the wrapper's typed errors and the drivers' (pgx's, net's), built as
// they arrive; the real paths are in TestCommitOutcomeSQLite and
// TestCommitOutcomePostgres.
func TestCommitOutcomeTable(t *testing.T) {
	for _, c := range []struct {
		name string
		err  error
		want fencedsql.Outcome
	}{
		{"nil", nil, fencedsql.Committed},
		{"ErrLeaseLost before sending", fmt.Errorf("fencedsql: transaction rolled back, its lease was lost: %w", lockclient.ErrLeaseLost), fencedsql.NotCommitted},
		{"ErrFenced", &fencedsql.FencedError{Table: "t", Token: 1, Err: errors.New("23502")}, fencedsql.NotCommitted},
		{"ErrVersionConflict", &fencedsql.VersionConflictError{Table: "t", Err: errors.New("23502")}, fencedsql.NotCommitted},
		{"ErrDuplicate", &fencedsql.DuplicateError{Table: "t", Err: errors.New("23505")}, fencedsql.NotCommitted},
		{"ErrNoToken", &fencedsql.NoTokenError{Table: "t"}, fencedsql.NotCommitted},
		{"ErrUnsupported", &fencedsql.UnsupportedError{Table: "t"}, fencedsql.NotCommitted},
		{"ErrGuard", &fencedsql.GuardError{Err: errors.New("guard")}, fencedsql.NotCommitted},
		{"sql.ErrTxDone (the Tx already done: its outcome unknown)", sql.ErrTxDone, fencedsql.Unknown},
		{"server error (serialization failure at COMMIT)", &pgconn.PgError{Code: "40001"}, fencedsql.NotCommitted},
		{"COMMIT answered by ROLLBACK", pgx.ErrTxCommitRollback, fencedsql.NotCommitted},
		{"server terminated the backend (57P01)", &pgconn.PgError{Code: "57P01"}, fencedsql.Unknown},
		{"connection exception (08006)", &pgconn.PgError{Code: "08006"}, fencedsql.Unknown},
		{"driver.ErrBadConn", driver.ErrBadConn, fencedsql.Unknown},
		{"io.EOF", fmt.Errorf("receive message: %w", io.EOF), fencedsql.Unknown},
		{"io.ErrUnexpectedEOF", io.ErrUnexpectedEOF, fencedsql.Unknown},
		{"connection reset", &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}, fencedsql.Unknown},
		{"context canceled", context.Canceled, fencedsql.Unknown},
		{"context deadline", context.DeadlineExceeded, fencedsql.Unknown},
		{"lost connection wrapping a refusal", fmt.Errorf("%w: %w", fencedsql.ErrFenced, io.EOF), fencedsql.Unknown},
		{"anything else", errors.New("boom"), fencedsql.Unknown},
	} {
		t.Run(c.name, func(t *testing.T) {
			if got := fencedsql.CommitOutcome(c.err); got != c.want {
				t.Fatalf("CommitOutcome(%v) = %v, want %v", c.err, got, c.want)
			}
		})
	}
	// The sentinels decide when present.
	if got := fencedsql.CommitOutcome(fmt.Errorf("x: %w", fencedsql.ErrCommitUnknown)); got != fencedsql.Unknown {
		t.Errorf("ErrCommitUnknown: %v", got)
	}
	if got := fencedsql.CommitOutcome(fmt.Errorf("x: %w", fencedsql.ErrNotCommitted)); got != fencedsql.NotCommitted {
		t.Errorf("ErrNotCommitted: %v", got)
	}
}

// Through the wrapper on SQLite: an autocommit write refused by the database (fenced,
// duplicate) or before sending (lost lease), and a Commit refused for a lost lease,
// wrap ErrNotCommitted.
func TestCommitOutcomeSQLite(t *testing.T) {
	d := transferDBs(t)[0]
	ctx := context.Background()
	if _, err := d.db.ExecContext(fencedsql.WithToken(ctx, 50), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	_, err := d.db.ExecContext(fencedsql.WithToken(ctx, 40), `UPDATE accounts SET balance = 2 WHERE id = 1`)
	wantNotCommitted(t, "autocommit fenced", err, fencedsql.ErrFenced)
	_, err = d.db.ExecContext(fencedsql.WithToken(ctx, 60), `INSERT INTO accounts (id, balance) VALUES (1, 0)`)
	wantNotCommitted(t, "autocommit duplicate", err, fencedsql.ErrDuplicate)
	_, err = d.db.ExecContext(ctx, `DELETE FROM accounts WHERE id = 2`)
	wantNotCommitted(t, "autocommit without a token", err, fencedsql.ErrNoToken)
	// The wrapper's own transaction around a fenced DELETE.
	_, err = d.db.ExecContext(fencedsql.WithToken(ctx, 40), `DELETE FROM accounts WHERE id = 1`)
	wantNotCommitted(t, "autocommit fenced DELETE", err, fencedsql.ErrFenced)

	lease := newFakeLease(70)
	lctx := fencedsql.WithLease(ctx, lease)
	tx, err := d.db.BeginTx(lctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(lctx, `UPDATE accounts SET balance = 3 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	lease.lose(nil)
	wantNotCommitted(t, "Commit after the lease was lost", tx.Commit(), lockclient.ErrLeaseLost)
	if b1, _, tok, _ := balances(t, d); b1 != 1 || tok != 50 {
		t.Fatalf("account 1: balance %d token %d, want 1, 50", b1, tok)
	}
}

func wantNotCommitted(t *testing.T, what string, err, cause error) {
	t.Helper()
	if !errors.Is(err, cause) || !errors.Is(err, fencedsql.ErrNotCommitted) || errors.Is(err, fencedsql.ErrCommitUnknown) ||
		fencedsql.CommitOutcome(err) != fencedsql.NotCommitted {
		t.Errorf("%s: err = %v (outcome %v), want %v and not committed", what, err, fencedsql.CommitOutcome(err), cause)
	}
}

// On PostgreSQL: a transaction whose statement failed commits as a rollback (pgx's
// ErrTxCommitRollback) — not committed; a server error on an autocommit write — not
// committed; and a connection cut while COMMIT is in flight — unknown. The
// idempotency recipe then reads the transfer's request id in the ledger, which
// committed together with the balances or not at all.
func TestCommitOutcomePostgres(t *testing.T) {
	dsn := testdb.Postgres(t) // skips without FENCEDSQL_PG_DSN (fails with FENCEDSQL_REQUIRE_SERVERS=1)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	// The ledger's deferred constraint trigger sleeps at COMMIT: the window in which
	// the test cuts the connection, after the server received COMMIT.
	for _, q := range []string{
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL CHECK (balance >= 0),
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 0)`,
		`CREATE TABLE ledger (request_id TEXT PRIMARY KEY, from_id BIGINT, to_id BIGINT, amount BIGINT)`,
		`CREATE FUNCTION slow_commit() RETURNS trigger LANGUAGE plpgsql AS $$
			BEGIN IF NEW.amount = 7 THEN PERFORM pg_sleep(1.5); END IF; RETURN NULL; END $$`,
		`CREATE CONSTRAINT TRIGGER slow_commit AFTER INSERT ON ledger DEFERRABLE INITIALLY DEFERRED
			FOR EACH ROW EXECUTE FUNCTION slow_commit()`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := netproxy.New(net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	if err != nil {
		t.Fatal(err)
	}
	defer proxy.Close()
	host, port, _ := net.SplitHostPort(proxy.Addr())
	p, _ := strconv.Atoi(port)
	cfg.Host, cfg.Port, cfg.Fallbacks = host, uint16(p), nil
	db := fencedsql.OpenDB(stdlib.GetConnector(*cfg), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
	defer db.Close()

	// transfer moves amount from account 1 to 2 and records requestID in the ledger,
	// in one transaction, and returns Commit's error (or the first statement's).
	transfer := func(tok uint64, requestID string, amount int64, beforeCommit func()) error {
		tctx := fencedsql.WithToken(ctx, tok)
		tx, err := db.BeginTx(tctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck // after Commit: sql.ErrTxDone
		for _, q := range []struct {
			sql  string
			args []any
		}{
			{`UPDATE accounts SET balance = balance - $1 WHERE id = 1`, []any{amount}},
			{`UPDATE accounts SET balance = balance + $1 WHERE id = 2`, []any{amount}},
			{`INSERT INTO ledger (request_id, from_id, to_id, amount) VALUES ($1, 1, 2, $2)`, []any{requestID, amount}},
		} {
			if _, err := tx.ExecContext(tctx, q.sql, q.args...); err != nil {
				// On PostgreSQL the transaction is aborted: Commit reports the rollback.
				if cerr := tx.Commit(); cerr != nil {
					return cerr
				}
				return fmt.Errorf("commit after a failed statement succeeded (statement: %w)", err)
			}
		}
		if beforeCommit != nil {
			beforeCommit()
		}
		return tx.Commit()
	}
	inLedger := func(requestID string) bool {
		var n int
		if err := admin.QueryRowContext(ctx, `SELECT count(*) FROM ledger WHERE request_id = $1`, requestID).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}

	if err := transfer(10, "r1", 5, nil); err != nil {
		t.Fatalf("first transfer: %v", err)
	}
	// A stale token: the statement is fenced, the transaction aborted, COMMIT answered
	// with ROLLBACK.
	err = transfer(9, "r2", 5, nil)
	wantNotCommitted(t, "Commit of an aborted transaction", err, pgx.ErrTxCommitRollback)
	// A server error on an autocommit write (the CHECK constraint): the driver's own
	// error, as on the plain driver and inside a transaction (red-team rt43d F2: a type
	// assertion, GORM's, must see it), and CommitOutcome says not committed.
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), `UPDATE accounts SET balance = balance - 1000 WHERE id = 1`)
	pe, ok := err.(*pgconn.PgError)
	if !ok || pe.Code != "23514" {
		t.Fatalf("autocommit CHECK violation: err = %v (%T), want the driver's *pgconn.PgError 23514", err, err)
	}
	if o := fencedsql.CommitOutcome(err); o != fencedsql.NotCommitted || errors.Is(err, fencedsql.ErrCommitUnknown) {
		t.Errorf("autocommit server error: outcome %v, want not committed", o)
	}
	if inLedger("r2") {
		t.Fatal("r2 committed")
	}

	// The cut: COMMIT is sent, the server sleeps in the deferred trigger, the proxy
	// drops the connection.
	cut := time.AfterFunc(500*time.Millisecond, proxy.Reset)
	defer cut.Stop()
	err = transfer(10, "r3", 7, nil)
	if got := fencedsql.CommitOutcome(err); got != fencedsql.Unknown || !errors.Is(err, fencedsql.ErrCommitUnknown) {
		t.Fatalf("Commit cut in flight: err = %v, outcome %v; want unknown", err, got)
	}
	// The recipe: after an unknown outcome, look the request id up once the server is
	// done with the backend; the ledger row and the balances committed together or not.
	time.Sleep(2 * time.Second)
	moved := int64(0)
	if inLedger("r3") {
		moved = 7
	}
	t.Logf("the cut COMMIT committed: %v", moved != 0)
	var b1, b2 int64
	if err := admin.QueryRowContext(ctx, `SELECT (SELECT balance FROM accounts WHERE id = 1), (SELECT balance FROM accounts WHERE id = 2)`).Scan(&b1, &b2); err != nil {
		t.Fatal(err)
	}
	if b1 != 100-5-moved || b2 != 5+moved {
		t.Fatalf("balances %d, %d; want %d, %d (ledger says r3 moved %d)", b1, b2, 100-5-moved, 5+moved, moved)
	}
}
