package fencedpgx_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/jackc/pgx/v5"
)

// Red-team rt28a F4 (a Begin refused before BEGIN leaves no TxOptions on the pooled
// connection) and F7 (pgx.TxOptions' modes accepted only as pgx's constants).

// txOptionsLease is a lease already lost.
type txOptionsLease struct {
	tok  uint64
	lost chan struct{}
}

func (l *txOptionsLease) Token() uint64         { return l.tok }
func (l *txOptionsLease) Lost() <-chan struct{} { return l.lost }
func (l *txOptionsLease) Err() error            { return lockclient.ErrLeaseLost }

// TestRefusedBeginClearsTxOptions (over-refusal; state leaked across pool users).
// fencedpgx's begin stores the caller's pgx.TxOptions on the link's native connection
// (n.txOpts) before the engine's BeginTx runs, and only native.BeginTx clears them. When
// the engine refuses the Begin before sending BEGIN — a lost lease here — the options
// stay on the pooled connection's link, and the next transaction begun on that
// connection by anyone takes them: the engine's own transaction of a later,
// unrelated autocommit DELETE (the two-statement form, with another token) is begun
// READ ONLY and its fencing UPDATE fails with "cannot execute UPDATE in a read-only
// transaction". (IsoLevel and DeferrableMode leak the same way.)
//
// Right behaviour: a refused Begin leaves nothing behind; the later DELETE, under a
// valid token, deletes row 1.
func TestRefusedBeginClearsTxOptions(t *testing.T) {
	ctx := context.Background()
	_, raw, db := oneConnDB(t, ctx, "INSERT INTO accounts (id, balance) VALUES (1, 1), (2, 2);")
	lost := &txOptionsLease{tok: 5, lost: make(chan struct{})}
	close(lost.lost)
	_, err := db.BeginTx(fencedsql.WithLease(ctx, lost), pgx.TxOptions{AccessMode: pgx.ReadOnly})
	if !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("set-up: Begin under a lost lease: %v, want ErrLeaseLost", err)
	}
	_, err = db.Exec(fencedsql.WithToken(ctx, 7), "DELETE FROM accounts WHERE id = 1")
	var n int
	if qerr := raw.QueryRow(ctx, "SELECT count(*) FROM accounts WHERE id = 1").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if err != nil || n != 0 {
		t.Errorf("autocommit DELETE (token 7) after a refused read-only Begin on the same pooled connection: err = %v, row 1 left = %d; "+
			"want nil and the row deleted: the refused Begin's TxOptions leaked into the engine's own transaction", err, n)
	}
}

// TestTxOptionsModeTextRefused (fail-open: a guarded write sent unplanned).
// checkTxOptions refuses pgx.TxOptions.BeginQuery and CommitQuery because pgx sends
// them verbatim, unplanned — "an unfenced write to a guarded table ... would go
// through" — and lets IsoLevel, AccessMode and DeferrableMode pass as "pgx's own BEGIN
// clauses". But those are plain strings too (pgx.TxIsoLevel, TxAccessMode,
// TxDeferrableMode), concatenated into the BEGIN text by pgx and sent with the simple
// protocol, which runs several statements: an IsoLevel of
// "read committed; UPDATE accounts SET …" runs the UPDATE unfenced inside the fenced
// transaction (a stale token 1 writes over the row's token 10, and resets it to 0),
// and Commit commits it. (SET synchronous_commit, SET search_path, … pass the same way.)
//
// Right behaviour: accept only pgx's defined values for the three modes (the
// constants pgx.Serializable … pgx.ReadCommitted, pgx.ReadWrite/ReadOnly,
// pgx.Deferrable/NotDeferrable, and ""), refusing anything else with ErrUnsupported,
// nothing sent; the row keeps balance 1 and token 10.
func TestTxOptionsModeTextRefused(t *testing.T) {
	ctx := context.Background()
	_, raw, db := oneConnDB(t, ctx, "INSERT INTO accounts (id, balance, fence_token) VALUES (1, 1, 10);")
	tctx := fencedsql.WithToken(ctx, 1) // a stale holder
	tx, err := db.BeginTx(tctx, pgx.TxOptions{IsoLevel: pgx.TxIsoLevel("read committed; UPDATE accounts SET balance = 666, fence_token = 0 WHERE id = 1")})
	if err != nil {
		if errors.Is(err, fencedsql.ErrUnsupported) {
			return // refused: the right behaviour
		}
		t.Fatalf("BeginTx: %v", err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatalf("Commit: %v", err)
	}
	var bal, tok int64
	if err := raw.QueryRow(ctx, "SELECT balance, fence_token FROM accounts WHERE id = 1").Scan(&bal, &tok); err != nil {
		t.Fatal(err)
	}
	if bal == 666 {
		t.Errorf("an UPDATE of the guarded table carried in pgx.TxOptions.IsoLevel ran unfenced: balance %d, fence_token %d (the row was at token 10, the transaction's token is 1)", bal, tok)
	}
}

// TestTxOptionsModesExact: only pgx's constants (and "") pass, in any ASCII case (SQL
// keywords: rt30a F7); any other text in IsoLevel, AccessMode or DeferrableMode is refused before anything is
// sent, and the refused Begin leaves the connection usable.
func TestTxOptionsModesExact(t *testing.T) {
	ctx := context.Background()
	_, _, db := oneConnDB(t, ctx, "INSERT INTO accounts (id, balance, fence_token) VALUES (1, 1, 10);")
	for _, o := range []pgx.TxOptions{
		{IsoLevel: " serializable"},
		{IsoLevel: "ſerializable"},
		{AccessMode: "read only; SET synchronous_commit = off"},
		{AccessMode: "READ  ONLY"},
		{DeferrableMode: "deferrable, read write"},
	} {
		if tx, err := db.BeginTx(ctx, o); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("BeginTx(%+v): %v, want ErrUnsupported", o, err)
			if err == nil {
				tx.Rollback(ctx)
			}
		}
	}
	for _, o := range []pgx.TxOptions{
		{},
		{IsoLevel: pgx.Serializable, AccessMode: pgx.ReadOnly, DeferrableMode: pgx.Deferrable},
		{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadWrite, DeferrableMode: pgx.NotDeferrable},
		{IsoLevel: pgx.ReadCommitted},
		{IsoLevel: pgx.ReadUncommitted},
		{IsoLevel: "SERIALIZABLE", AccessMode: "READ ONLY"},
	} {
		tx, err := db.BeginTx(ctx, o)
		if err != nil {
			t.Errorf("BeginTx(%+v): %v", o, err)
			continue
		}
		if err := tx.Rollback(ctx); err != nil {
			t.Errorf("Rollback: %v", err)
		}
	}
}

// TestTxOptionsUpperCaseIsoAccepted (over-refusal, minor). pgx's TxIsoLevel is a string
// type pasted into the BEGIN text, and PostgreSQL reads it case-insensitively: code that
// writes pgx.TxOptions{IsoLevel: "SERIALIZABLE"} (or "REPEATABLE READ", "READ ONLY")
// ran serializable before rt28a F7. checkTxOptions now compares with pgx's lower-case
// constants exactly and refuses it (ErrUnsupported), though the text is a keyword
// sequence that carries no statement.
//
// Right behaviour: accept the pgx constants case-insensitively (strings.EqualFold) and
// send the constant, refusing only text that is not one of them.
func TestTxOptionsUpperCaseIsoAccepted(t *testing.T) {
	ctx := context.Background()
	_, _, db := oneConnDB(t, ctx, "INSERT INTO accounts (id, balance) VALUES (1, 1);")
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 7), pgx.TxOptions{IsoLevel: "SERIALIZABLE", AccessMode: "READ WRITE"})
	if err != nil {
		t.Fatalf("BeginTx with IsoLevel \"SERIALIZABLE\": %v; want it accepted (serializable)", err)
	}
	_ = tx.Rollback(ctx)
}
