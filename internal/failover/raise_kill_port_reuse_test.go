package failover

import (
	"context"
	"database/sql"
	"fmt"
	"net"
	"strconv"
	"sync/atomic"
	"syscall"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// bindLocalPort is the local port the "bindport" network binds its next connection
// to (0: any). A client program on the raise's host gets such a port from the kernel
// (ephemeral port reuse); the test forces the coincidence instead of waiting for it.
var bindLocalPort atomic.Int64

func init() {
	gomysql.RegisterDialContext("bindport", func(ctx context.Context, addr string) (net.Conn, error) {
		d := net.Dialer{Timeout: 5 * time.Second}
		if p := bindLocalPort.Load(); p != 0 {
			d.LocalAddr = &net.TCPAddr{IP: net.IPv4(127, 0, 0, 1), Port: int(p)}
			d.Control = func(_, _ string, c syscall.RawConn) error {
				var serr error
				if err := c.Control(func(fd uintptr) {
					serr = syscall.SetsockoptInt(int(fd), syscall.SOL_SOCKET, syscall.SO_REUSEADDR, 1)
				}); err != nil {
					return err
				}
				return serr
			}
		}
		return d.DialContext(ctx, "tcp", addr)
	})
}

// TestRaiseBackstopPeerPortReusedAfterRestart (red-team rt60c F4, availability: the
// KILL backstop ended another client's session; held since the peer holds the serving
// thread's id too, sessionPeer). The backstop (schema/floorwait.go end) takes a
// session for the raise's when its id, its peer (PROCESSLIST HOST "ip:port") and the
// server's identity match. The peer is said to be "unique among the server's sessions
// while the client holds the connection's socket, also across a restart" — but the
// raise does not hold it across a restart: the server's death closes the raise's
// connection, the driver drops it, and the client's port is free again at once (the
// server closed first: no TIME_WAIT on the client side). Another client on the same
// host that connects from that port (ephemeral port reuse) and gets the raise's old
// connection id (ids start again from 1 on MariaDB) matches id and peer; and the
// identity matches when the two starts fall in the same second (MariaDB's start
// instant is whole seconds — the very case CI hit, which the peer was added for).
// Schedule: server just started; the raise's session from port P records (id, identity,
// peer); SIGKILL + restart; the raise's connection is dropped; clients connect until
// the next id is the raise's, the victim connects from port P; the dialect's
// SessionLiveQuery / EndSessionQuery then KILL the victim.
func TestRaiseBackstopPeerPortReusedAfterRestart(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 4*time.Minute)
	defer cancel()
	env, tmpl, n := privateMariaDB(t, ctx, "portreuse-", 11)
	b := mysql.Dialect.(dialect.FloorWaitBounder)
	bindDSN := fmt.Sprintf("fenced:%s@bindport(127.0.0.1:%d)/?parseTime=true&timeout=5s", password, n.port)
	lp, err := freePort()
	if err != nil {
		t.Fatal(err)
	}
	restart := func() {
		t.Helper()
		if err := n.srv.kill(); err != nil {
			t.Fatal(err)
		}
		if err := startMariaDB(ctx, env, tmpl.as, n, "--server-id="+strconv.Itoa(n.id)); err != nil {
			t.Fatal(err)
		}
	}
	for attempt := 1; attempt <= 8; attempt++ {
		restart() // the raise reads its session right after a start, as in CI's case
		// The raise's session, from port lp.
		bindLocalPort.Store(int64(lp))
		raise, err := sql.Open("mysql", bindDSN)
		if err != nil {
			t.Fatal(err)
		}
		raise.SetMaxOpenConns(1)
		var id int64
		var identity, peer string
		err = raise.QueryRowContext(ctx, b.RaiseSessionIDQuery()).Scan(&id, &identity, &peer)
		bindLocalPort.Store(0)
		if err != nil {
			raise.Close()
			t.Fatal(err)
		}
		restart()
		// The server's death closed the raise's connection: the client drops it (its
		// context ended; RaiseTokenFloor's release closes it).
		raise.Close()

		// The victim: the first client after the restart, as the raise was the first
		// after the previous one (MariaDB's ids are deterministic after a start: the
		// raise's old id is the next one). Other clients may come first; it only takes
		// more of them.
		clients, err := sql.Open("mysql", n.dsn(""))
		if err != nil {
			t.Fatal(err)
		}
		var held []*sql.Conn
		// The victim: a client on the raise's host, given port lp by the kernel.
		bindLocalPort.Store(int64(lp))
		victimDB, err := sql.Open("mysql", bindDSN)
		if err != nil {
			t.Fatal(err)
		}
		victimDB.SetMaxOpenConns(1)
		victim, err := victimDB.Conn(ctx)
		bindLocalPort.Store(0)
		if err != nil {
			t.Fatalf("victim from port %d: %v", lp, err)
		}
		var vid int64
		var vpeer string
		if err := victim.QueryRowContext(ctx, "SELECT CONNECTION_ID(), (SELECT HOST FROM information_schema.PROCESSLIST WHERE ID = CONNECTION_ID())").Scan(&vid, &vpeer); err != nil {
			t.Fatal(err)
		}
		cleanup := func() {
			victim.Close()
			victimDB.Close()
			for _, c := range held {
				c.Close()
			}
			clients.Close()
		}
		if vid != id {
			t.Logf("attempt %d: victim got id %d, not the raise's %d", attempt, vid, id)
			cleanup()
			continue
		}
		// end()'s check and KILL, from a connection of the raise's pool.
		pool, err := sql.Open("mysql", n.dsn(""))
		if err != nil {
			t.Fatal(err)
		}
		var ident2 string
		var exists int64
		if err := pool.QueryRowContext(ctx, b.SessionLiveQuery(), id, peer).Scan(&ident2, &exists); err != nil {
			t.Fatal(err)
		}
		if exists == 0 {
			pool.Close()
			cleanup()
			t.Logf("held: the victim (id %d, peer %q) is not taken for the raise's session (id %d, peer %q)", vid, vpeer, id, peer)
			return
		}
		_, kerr := pool.ExecContext(ctx, b.EndSessionQuery(id))
		verr := victim.PingContext(ctx)
		pool.Close()
		cleanup()
		t.Fatalf("[availability] after a restart, another client's session matched the raise's id %d and peer %q (identity %q, now %q; its port was the raise's, free once the server's death closed the raise's connection): %s → %v; the other client's connection: %v — want the backstop to take no session that is not the raise's",
			id, peer, identity, ident2, b.EndSessionQuery(id), kerr, verr)
	}
	t.Fatalf("set-up: in 8 restarts the client from the raise's port never got the raise's old id")
}
