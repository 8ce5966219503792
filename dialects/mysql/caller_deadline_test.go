package mysql_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"sync/atomic"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// swallowProxy forwards both ways until, once armed, the client sends a packet holding
// trigger; from then on it forwards nothing (a black-holed network from that packet
// on: the server never receives it, the client never hears back).
type swallowProxy struct {
	*netproxy.Proxy
	armed atomic.Bool
	hit   atomic.Bool
}

func newSwallowProxy(t *testing.T, target string, trigger string) *swallowProxy {
	np, err := netproxy.New(target)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { np.Close() })
	p := &swallowProxy{Proxy: np}
	np.Intercept(func(chunk []byte) netproxy.Verdict {
		if p.armed.Load() && bytes.Contains(chunk, []byte(trigger)) {
			p.hit.Store(true)
			return netproxy.Hold
		}
		return netproxy.Pass
	})
	return p
}

// TestOwnCommitHonoursCallerDeadline (red-team rt44f F2): outside a transaction, a
// fenced DELETE that takes the two-statement form runs in a transaction of the
// wrapper's own, which it ends with the dialect's "COMMIT AND NO CHAIN NO RELEASE".
// When the network goes dark at that COMMIT, the caller's 1 s deadline holds (the
// COMMIT ran under context.Background() and hung until TCP gave up), and the outcome
// is Unknown: the COMMIT may have reached the server.
func TestOwnCommitHonoursCallerDeadline(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		`CREATE TABLE dl_acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO dl_acc (id, balance) VALUES (1, 100), (2, 100)`)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newSwallowProxy(t, cfg.Addr, "COMMIT")
	cfg.Addr = proxy.Addr()
	db, err := sql.Open("fenced-mysql", cfg.FormatDSN()+"&fenced_tables=dl_acc")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	// Warm up: the lazy checks run, and a first DELETE takes its form.
	if _, err := db.ExecContext(fencedsql.WithToken(context.Background(), 5), `DELETE FROM dl_acc WHERE id = 2`); err != nil {
		t.Fatal(err)
	}
	proxy.armed.Store(true)
	ctx, cancel := context.WithTimeout(fencedsql.WithToken(context.Background(), 5), time.Second)
	defer cancel()
	done := make(chan error, 1)
	t0 := time.Now()
	go func() {
		_, err := db.ExecContext(ctx, `DELETE FROM dl_acc WHERE id = 1`)
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("returned after %v: %v (hit=%v)", time.Since(t0), err, proxy.hit.Load())
		if err == nil {
			t.Fatal("DELETE succeeded with COMMIT swallowed")
		}
		if !proxy.hit.Load() {
			t.Skip("no COMMIT sent: the DELETE ran as one statement")
		}
		if time.Since(t0) > 3*time.Second {
			t.Errorf("the DELETE took %v past its 1 s deadline", time.Since(t0))
		}
		if fencedsql.CommitOutcome(err) != fencedsql.Unknown {
			t.Errorf("outcome %v for a COMMIT whose answer never came", fencedsql.CommitOutcome(err))
		}
	case <-time.After(8 * time.Second):
		t.Errorf("the fenced DELETE outside a transaction still waits %v after its 1 s deadline (COMMIT swallowed: %v)", time.Since(t0), proxy.hit.Load())
		proxy.Reset()
		proxy.Close()
		<-done
	}
}

// TestPrepareHonoursCallerDeadline (red-team rt44f F1, MySQL/MariaDB side):
// PrepareContext plans the statement under the caller's context (it was
// context.Background()): a statement whose lexer reading depends on the session (a
// double quote naming a guarded table: plan.Plan.Ambiguous), prepared after the
// session moved (a SET), runs the session check query under the prepare's 1 s
// deadline, and the error of a check cut by it wraps context.DeadlineExceeded, not
// ErrSchema.
func TestPrepareHonoursCallerDeadline(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		`CREATE TABLE dl_acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, note VARCHAR(20) NOT NULL DEFAULT '',
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO dl_acc (id, balance) VALUES (1, 100)`)
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	proxy := newSwallowProxy(t, cfg.Addr, "@@SESSION.sql_mode")
	cfg.Addr = proxy.Addr()
	db, err := sql.Open("fenced-mysql", cfg.FormatDSN()+"&fenced_tables=dl_acc")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	bg := context.Background()
	conn, err := db.Conn(bg)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(fencedsql.WithToken(bg, 5), `UPDATE dl_acc SET balance = 1 WHERE id = 1`); err != nil {
		t.Fatal(err)
	}
	if _, err := conn.ExecContext(bg, `SET SESSION sql_mode = CONCAT(@@SESSION.sql_mode, '')`); err != nil {
		t.Fatal(err)
	}
	proxy.armed.Store(true)
	ctx, cancel := context.WithTimeout(fencedsql.WithToken(bg, 5), time.Second)
	defer cancel()
	done := make(chan error, 1)
	t0 := time.Now()
	go func() {
		st, err := conn.PrepareContext(ctx, `UPDATE dl_acc SET note = "x" WHERE id = 1`)
		if err == nil {
			st.Close()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Logf("returned after %v: %v (hit=%v)", time.Since(t0), err, proxy.hit.Load())
		if time.Since(t0) > 3*time.Second {
			t.Errorf("PrepareContext took %v past its 1 s deadline", time.Since(t0))
		}
		if !proxy.hit.Load() {
			t.Skip("no session check query sent")
		}
		if !errors.Is(err, context.DeadlineExceeded) || errors.Is(err, fencedsql.ErrSchema) {
			t.Errorf("error of a check cut by the deadline: %v (DeadlineExceeded=%v, ErrSchema=%v)", err, errors.Is(err, context.DeadlineExceeded), errors.Is(err, fencedsql.ErrSchema))
		}
	case <-time.After(8 * time.Second):
		t.Errorf("PrepareContext still waits %v after its 1 s deadline (session query swallowed: %v)", time.Since(t0), proxy.hit.Load())
		proxy.Reset()
		proxy.Close()
		<-done
	}
}
