package mysql_test

import (
	"bytes"
	"context"
	"database/sql"
	"errors"
	"net"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// recheckHook runs once, synchronously, before the first packet naming the absence
// recorder leaves for the server (a deterministic interleaving point between the
// claim's fencing UPDATE and its recorder CALL).
var (
	recheckMu   sync.Mutex
	recheckHook func()
	recheckOnce sync.Once
)

type recheckConn struct{ net.Conn }

func (c recheckConn) Write(b []byte) (int, error) {
	if bytes.Contains(b, []byte("`fencedsql_tombclaim_acc`(")) {
		recheckMu.Lock()
		h := recheckHook
		recheckHook = nil
		recheckMu.Unlock()
		if h != nil {
			h()
		}
	}
	return c.Conn.Write(b)
}

func recheckNet() string {
	recheckOnce.Do(func() {
		gomysql.RegisterDialContext("fencedsqlrecheckhook", func(ctx context.Context, addr string) (net.Conn, error) {
			var d net.Dialer
			c, err := d.DialContext(ctx, "tcp", addr)
			if err != nil {
				return nil, err
			}
			return recheckConn{c}, nil
		})
	})
	return "fencedsqlrecheckhook"
}

// TestMySQLAbsentClaimInsertBetweenUpdateAndRecord: under READ COMMITTED and READ
// UNCOMMITTED the claim's fencing UPDATE of an absent key takes no gap lock; an older
// holder's INSERT of the key committed between the UPDATE and the recorder's CALL
// (plain, or through the wrapper under its older token) landed under its older token
// while the claim answered "absent" (red-team rt45a F1). The recorder (v3) looks the
// key up after recording and fails the claim with ErrClaimConflict; REPEATABLE READ's
// gap lock makes the INSERT wait and the tombstone refuses it.
func TestMySQLAbsentClaimInsertBetweenUpdateAndRecord(t *testing.T) {
	type tc struct {
		lvl     sql.IsolationLevel
		wrapper bool
	}
	for _, c := range []tc{{sql.LevelReadUncommitted, false}, {sql.LevelReadCommitted, false}, {sql.LevelReadCommitted, true}, {sql.LevelRepeatableRead, false}} {
		lvl := c.lvl
		name := lvl.String()
		if c.wrapper {
			name += "/StaleThroughWrapper"
		}
		t.Run(name, func(t *testing.T) {
			dsn, admin, _ := absentMy(t)
			cfg, err := gomysql.ParseDSN(dsn)
			if err != nil {
				t.Fatal(err)
			}
			cfg.Net = recheckNet()
			hooked := cfg.FormatDSN()
			if !strings.Contains(hooked, "fencedsqlrecheckhook") {
				t.Fatal(hooked)
			}
			db, err := sql.Open("fenced-mysql", hooked+"&fenced_tables=acc,pair")
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			stale, err := sql.Open("fenced-mysql", dsn+"&fenced_tables=acc,pair")
			if err != nil {
				t.Fatal(err)
			}
			defer stale.Close()

			for _, p := range []*sql.DB{db, stale} {
				p.SetMaxIdleConns(4)
				if err := writeAs(p, 1, "UPDATE acc SET balance = 0 WHERE id = 99"); err != nil {
					t.Fatal(err)
				}
			}
			staleErr := make(chan error, 1)
			recheckMu.Lock()
			recheckHook = func() {
				go func() {
					if c.wrapper {
						staleErr <- writeAs(stale, 60, "INSERT INTO acc (id, balance) VALUES (20, 666)")
						return
					}
					_, err := admin.Exec("INSERT INTO acc (id, balance, fence_token) VALUES (20, 666, 60)")
					staleErr <- err
				}()
				select {
				case e := <-staleErr:
					t.Logf("stale insert before the record: %v", e)
					staleErr <- e
				case <-time.After(time.Second):
				}
			}
			recheckMu.Unlock()
			defer func() { recheckMu.Lock(); recheckHook = nil; recheckMu.Unlock() }()

			ctx := fencedsql.WithToken(context.Background(), 70)
			tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: lvl})
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			claimErr := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20).Scan(&id)
			commitErr := tx.Commit()
			t.Logf("claim: %v (id %d), commit: %v", claimErr, id, commitErr)
			select {
			case e := <-staleErr:
				t.Logf("stale insert: %v", e)
			case <-time.After(3 * time.Second):
				t.Logf("stale insert still waiting")
			}
			t.Logf("tombstone of 20 after the claim: %d; hook pending: %v", tombToken(t, admin, "acc", "id = 20"), func() bool { recheckMu.Lock(); defer recheckMu.Unlock(); return recheckHook != nil }())
			var tok, bal int64
			rowErr := admin.QueryRow("SELECT fence_token, balance FROM acc WHERE id = 20").Scan(&tok, &bal)
			if rowErr == nil && tok < 70 && !errors.Is(claimErr, fencedsql.ErrClaimConflict) {
				t.Errorf("the stale row of 20 (token %d) landed: claim %v, want ErrClaimConflict", tok, claimErr)
			}
			if rowErr == nil && tok < 70 && errors.Is(claimErr, sql.ErrNoRows) && commitErr == nil {
				// The claim said "absent" under 70 and committed; the stale row stands.
				upd := writeAs(stale, 60, "UPDATE acc SET balance = 777 WHERE id = 20")
				t.Fatalf("claim under 70 answered absent and committed, yet key 20 holds a row under token %d (balance %d) written by the holder of 60; its later UPDATE under 60: %v", tok, bal, upd)
			}
		})
	}
}
