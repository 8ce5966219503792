package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"net"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// deadlineProxied opens a fenced PostgreSQL pool through a TCP proxy, guarding
// dl_acc (created and seeded on a plain pool), one connection.
func deadlineProxied(t *testing.T, opts ...fencedsql.Option) (*sql.DB, *netproxy.Proxy) {
	t.Helper()
	dsn := testdb.Postgres(t)
	testdb.Open(t, "pgx", dsn,
		`CREATE TABLE dl_acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO dl_acc (id, balance) VALUES (1, 100)`)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy, err := netproxy.New(net.JoinHostPort(cfg.Host, strconv.Itoa(int(cfg.Port))))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { proxy.Close() })
	host, port, _ := net.SplitHostPort(proxy.Addr())
	p, _ := strconv.Atoi(port)
	cfg.Host, cfg.Port, cfg.Fallbacks = host, uint16(p), nil
	all := append([]fencedsql.Option{fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("dl_acc")}, opts...)
	db := fencedsql.OpenDB(stdlib.GetConnector(*cfg), all...)
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	if err := db.Ping(); err != nil {
		t.Fatal(err)
	}
	return db, proxy
}

// TestLazyCheckHonoursCallerDeadline (red-team rt44f F1): a guarded statement whose
// first round trip on the connection is a lazy check's read (PostgreSQL's
// synchronous_commit and name resolution, read once per connection by the dialect's
// tracker) runs it under the statement's context: on a black-holed network the
// caller's 500 ms deadline holds, and the error wraps context.DeadlineExceeded, not
// ErrSchema (it was a private 5 s deadline, then "the name resolution query failed
// (under a mock driver …): driver: bad connection", ErrSchema).
func TestLazyCheckHonoursCallerDeadline(t *testing.T) {
	for _, c := range []struct {
		name string
		inTx bool
		q    string
	}{
		{"claim in tx", true, `SELECT id FROM dl_acc WHERE id = 1 FOR UPDATE`},
		{"update in tx", true, `UPDATE dl_acc SET balance = 1 WHERE id = 1`},
		{"delete in tx", true, `DELETE FROM dl_acc WHERE id = 1`},
		{"prepare in tx", true, `PREPARE UPDATE "dl_acc" SET balance = 1 WHERE id = 1`},
		{"update autocommit", false, `UPDATE dl_acc SET balance = 1 WHERE id = 1`},
		{"delete autocommit", false, `DELETE FROM dl_acc WHERE id = 1`},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, proxy := deadlineProxied(t)
			bg := fencedsql.WithToken(context.Background(), 5)
			var tx *sql.Tx
			if c.inTx {
				var err error
				if tx, err = db.BeginTx(bg, nil); err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck
			}
			proxy.Block()
			ctx, cancel := context.WithTimeout(bg, 500*time.Millisecond)
			defer cancel()
			t0 := time.Now()
			var err error
			if q, ok := strings.CutPrefix(c.q, "PREPARE "); ok {
				var st *sql.Stmt
				if st, err = tx.PrepareContext(ctx, q); err == nil {
					st.Close()
				}
			} else if tx != nil {
				_, err = tx.ExecContext(ctx, c.q)
			} else {
				_, err = db.ExecContext(ctx, c.q)
			}
			took := time.Since(t0)
			proxy.Unblock()
			if err == nil {
				t.Fatal("statement succeeded through a blocked network")
			}
			if took > 2*time.Second {
				t.Errorf("the statement took %v past its 500 ms deadline (err: %v)", took, err)
			}
			if !c.inTx && fencedsql.CommitOutcome(err) == fencedsql.Committed {
				t.Errorf("outcome %v", fencedsql.CommitOutcome(err))
			}
			if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("error for an expired deadline: %v (DeadlineExceeded=%v, ErrSchema=%v)", err, errors.Is(err, context.DeadlineExceeded), errors.Is(err, fencedsql.ErrSchema))
			}
		})
	}
}
