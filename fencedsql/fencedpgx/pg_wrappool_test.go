// Session checks on PostgreSQL that depend on where a statement runs: a *pgxpool.Pool
// given to Wrap.

package fencedpgx_test

import (
	"context"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
)

// Wrap(*pgxpool.Pool): the session check and the statement it vouches for run on the
// same pooled connection. They used to go to the pool separately, each acquiring a
// connection: checked on a connection that reads strings as the lexer does, hiddenWrite
// ran on one with standard_conforming_strings off and landed with no token (red-team
// F4). The pool here makes that interleaving certain: a connection released while
// armed returns to the pool only once the other connection has been acquired, so two
// acquisitions in a row always get different connections.
func TestWrapPoolSessionCheckSameConn(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	raw := openPool(t, ctx, dsn, 1)
	if _, err := raw.Exec(ctx, plainAccounts+` INSERT INTO accounts (id, balance, fence_token) VALUES (1, 100, 10);`); err != nil {
		t.Fatal(err)
	}
	cfg, err := pgxpool.ParseConfig(fencetest.WithParam(dsn, "default_query_exec_mode=exec"))
	if err != nil {
		t.Fatal(err)
	}
	cfg.MaxConns, cfg.MinConns = 2, 0
	var (
		armed    atomic.Bool
		acquired atomic.Int64 // acquisitions, for the hook
	)
	cfg.PrepareConn = func(ctx context.Context, c *pgx.Conn) (bool, error) {
		acquired.Add(1)
		return true, nil
	}
	// AfterRelease runs before the connection returns to the pool (pgxpool runs it
	// in a goroutine): while armed, hold it until another acquisition happened.
	cfg.AfterRelease = func(c *pgx.Conn) bool {
		if armed.Load() {
			n := acquired.Load()
			for end := time.Now().Add(2 * time.Second); acquired.Load() == n && time.Now().Before(end); {
				time.Sleep(time.Millisecond)
			}
		}
		return true
	}
	pool, err := pgxpool.NewWithConfig(ctx, cfg)
	if err != nil {
		t.Fatal(err)
	}
	defer pool.Close()
	// Two connections; the second reads strings with standard_conforming_strings off.
	c1, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	c2, err := pool.Acquire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := c2.Exec(ctx, "SET standard_conforming_strings = off"); err != nil {
		t.Fatal(err)
	}
	c1.Release()
	c2.Release()
	for pool.Stat().IdleConns() != 2 {
		time.Sleep(time.Millisecond)
	}
	db, err := fencedpgx.Wrap(pool, fencedsql.Guard("accounts"))
	if err != nil {
		t.Fatal(err)
	}
	if err := db.Ping(ctx); err != nil { // the first-use work, before the hook is armed
		t.Fatal(err)
	}
	armed.Store(true)
	var refused int
	for i := 0; i < 6; i++ {
		_, err := db.Exec(ctx, hiddenWrite)
		var se *fencedsql.SessionError
		switch {
		case errors.As(err, &se):
			refused++
		case err != nil:
			t.Fatalf("attempt %d: %v", i, err)
		}
		if bal, tk := sessRow(t, ctx, raw); bal != 100 || tk != 10 {
			t.Fatalf("attempt %d: the session check ran on another connection than the statement: an UPDATE of accounts with no token landed, row 1 = (%d, %d)", i, bal, tk)
		}
	}
	armed.Store(false)
	if refused == 0 {
		t.Fatal("no attempt ran on the connection with standard_conforming_strings off: the test did not reach it")
	}
	// Wrap leaves the caller's pool open.
	db.Close()
	if err := pool.Ping(ctx); err != nil {
		t.Fatalf("the pool given to Wrap after Close: %v", err)
	}
	if db.Unwrap() != fencedpgx.DB(pool) {
		t.Fatal("Unwrap does not return the pool given to Wrap")
	}
}
