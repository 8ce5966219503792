package fencedpgx_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// pgx runs the statement prepared under a name when the query text equals the name
// (red-team F9): a guarded UPDATE prepared natively in AfterConnect, sent by its name
// through the fenced pool, is refused with ErrUnsupported (the planner sees only
// "set_balance", no statement keyword) instead of running unfenced; the row keeps its
// token. The pool's own Prepare (stmtMap) is unaffected: testPrepared.
func TestPreparedNameRefused(t *testing.T) {
	for _, mode := range []string{"cache_statement", "exec", "simple_protocol"} {
		t.Run(mode, func(t *testing.T) {
			e := newPGEnv(t, mode)
			e.seed(50, 1)
			cfg, err := pgxpool.ParseConfig(e.dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.MaxConns = 2
			cfg.AfterConnect = func(ctx context.Context, c *pgx.Conn) error {
				_, err := c.Prepare(ctx, "set_balance", "UPDATE accounts SET balance = $1 WHERE id = $2")
				return err
			}
			p, err := pgxpool.NewWithConfig(e.ctx, cfg)
			if err != nil {
				t.Fatal(err)
			}
			t.Cleanup(p.Close)
			db, err := fencedpgx.New(p, fencedsql.Guard("accounts"))
			if err != nil {
				t.Fatal(err)
			}
			before := e.row(1)
			_, err = db.Exec(tok(e.ctx, 10), "set_balance", 0, 1)
			wantErr(t, err, fencedsql.ErrUnsupported)
			b := &pgx.Batch{}
			b.Queue("set_balance", 0, 1)
			err = db.SendBatch(tok(e.ctx, 10), b).Close()
			wantErr(t, err, fencedsql.ErrUnsupported)
			if after := e.row(1); after != before {
				t.Fatalf("row 1 %+v -> %+v: the named statement ran", before, after)
			}
		})
	}
}

// A name prepared through fencedpgx never reaches pgx's connection: Prepare prepares
// the statement under its own text (pgx names it by a digest), so pgx's connection
// holds nothing under the caller's name. A pool transaction's names are its own; once
// it ended, the same connection's next user sending that name sends plain SQL the
// planner reads as such. Prepared under the caller's name, a claim
// (SELECT … FOR UPDATE) stayed on the pooled connection as its raw text, and a later
// statement whose text was that name ran the raw locking read: the rows came back
// unclaimed (unstamped), and an older token could then write them (red-team pgx F3).
// The name here is itself SQL (SELECT 1), which the planner passes; a name that is no
// SQL is also refused by the head check (TestPreparedNameRefused).
func TestPreparedNameStaysInTx(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	dsn, raw, db := oneConnDB(t, ctx, `INSERT INTO accounts (id, balance, fence_token) VALUES (1, 100, 5), (2, 100, 5)`)
	token := func(id int64) int64 {
		t.Helper()
		var tk int64
		if err := raw.QueryRow(ctx, "SELECT fence_token FROM accounts WHERE id = $1", id).Scan(&tk); err != nil {
			t.Fatal(err)
		}
		return tk
	}
	const claim = "SELECT id FROM accounts WHERE id = 2 FOR UPDATE"
	names := []string{"SELECT 1", "lockone", "bal"}

	tx, err := db.Begin(tok(ctx, 6))
	if err != nil {
		t.Fatal(err)
	}
	for _, n := range names[:2] {
		if _, err := tx.Prepare(ctx, n, claim); err != nil {
			t.Fatalf("Prepare %q: %v", n, err)
		}
	}
	if _, err := tx.Prepare(ctx, "bal", "SELECT balance FROM accounts WHERE id = $1"); err != nil {
		t.Fatal(err)
	}
	// In the transaction the names are its statements, fenced with its token.
	var id int64
	if err := tx.QueryRow(ctx, "SELECT 1").Scan(&id); err != nil || id != 2 {
		t.Fatalf("claim by name in its transaction: id=%d err=%v", id, err)
	}
	var bal int64
	if err := tx.QueryRow(ctx, "bal", 1).Scan(&bal); err != nil || bal != 100 {
		t.Fatalf("read by name in its transaction: %d %v", bal, err)
	}
	if err := tx.Commit(ctx); err != nil {
		t.Fatal(err)
	}
	if tk := token(2); tk != 6 {
		t.Fatalf("the claim by name stamped token %d, want 6", tk)
	}

	// The connection holds nothing under the caller's names.
	var held []string
	rows, err := db.Query(ctx, "SELECT name FROM pg_prepared_statements WHERE name = ANY($1)", names)
	if err != nil {
		t.Fatal(err)
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			t.Fatal(err)
		}
		held = append(held, n)
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if len(held) > 0 {
		t.Errorf("the pooled connection holds prepared statements under the caller's names %q", held)
	}

	// A newer holder (token 10) on the same connection: "SELECT 1" is SELECT 1, in a
	// transaction, alone and in a batch.
	tx2, err := db.Begin(tok(ctx, 10))
	if err != nil {
		t.Fatal(err)
	}
	var v int64
	err = tx2.QueryRow(tok(ctx, 10), "SELECT 1").Scan(&v)
	if cerr := tx2.Commit(ctx); err == nil {
		err = cerr
	}
	if err != nil || v != 1 {
		t.Fatalf("SELECT 1 in a later transaction: %d %v (2: the raw locking read prepared under that name ran, unclaimed)", v, err)
	}
	if err := db.QueryRow(tok(ctx, 10), "SELECT 1").Scan(&v); err != nil || v != 1 {
		t.Fatalf("SELECT 1 on the pool: %d %v", v, err)
	}
	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	br := db.SendBatch(tok(ctx, 10), b)
	err = br.QueryRow().Scan(&v)
	if cerr := br.Close(); err == nil {
		err = cerr
	}
	if err != nil || v != 1 {
		t.Fatalf("SELECT 1 in a pool batch: %d %v", v, err)
	}
	if tk := token(2); tk != 6 {
		t.Fatalf("row 2 token %d, want 6", tk)
	}
	// A later transaction may prepare the same name with other SQL: the name was the
	// ended transaction's only.
	tx3, err := db.Begin(tok(ctx, 10))
	if err != nil {
		t.Fatal(err)
	}
	defer tx3.Rollback(ctx)
	if _, err := tx3.Prepare(ctx, "lockone", "SELECT balance FROM accounts WHERE id = $1"); err != nil {
		t.Fatalf("Prepare of a name an ended transaction used, with other SQL: %v", err)
	}
	if err := tx3.QueryRow(ctx, "lockone", 2).Scan(&bal); err != nil || bal != 100 {
		t.Fatalf("%d %v", bal, err)
	}

	// On a Conn the names live as long as the Conn (as pgx's), in fencedpgx only: on
	// the raw connection they name nothing. Deallocate deallocates the text once no
	// name of the Conn uses it.
	pc, err := pgx.Connect(ctx, dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer pc.Close(ctx)
	c, err := fencedpgx.NewConn(pc, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	const read = "SELECT balance FROM accounts WHERE id = $1"
	for _, p := range [][2]string{{"lockone", claim}, {"x", read}, {"y", read}} {
		if _, err := c.Prepare(ctx, p[0], p[1]); err != nil {
			t.Fatal(err)
		}
	}
	for _, n := range []string{"lockone", "x"} {
		if _, err := pc.Exec(ctx, n, 1); err == nil {
			t.Fatalf("the name %q ran on the raw connection", n)
		}
	}
	tx11, err := c.Begin(tok(ctx, 11))
	if err != nil {
		t.Fatal(err)
	}
	err = tx11.QueryRow(ctx, "lockone").Scan(&id)
	if cerr := tx11.Commit(ctx); err == nil {
		err = cerr
	}
	if err != nil || id != 2 {
		t.Fatalf("claim by name in a Conn's transaction: %d %v", id, err)
	}
	if tk := token(2); tk != 11 {
		t.Fatalf("the Conn's claim by name stamped token %d, want 11", tk)
	}
	prepared := func() int {
		t.Helper()
		var n int
		if err := pc.QueryRow(ctx, "SELECT count(*) FROM pg_prepared_statements WHERE statement = $1", read).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	if err := c.Deallocate(ctx, "x"); err != nil {
		t.Fatal(err)
	}
	if err := c.QueryRow(ctx, "y", 1).Scan(&bal); err != nil || bal != 100 || prepared() != 1 {
		t.Fatalf("y after x was deallocated: %d %v (%d prepared)", bal, err, prepared())
	}
	if err := c.Deallocate(ctx, "y"); err != nil {
		t.Fatal(err)
	}
	if n := prepared(); n != 0 {
		t.Fatalf("%d statements prepared for the text after its last name was deallocated", n)
	}
	if _, err := c.Exec(ctx, "y", 1); err == nil {
		t.Fatal("a deallocated name ran")
	}
}
