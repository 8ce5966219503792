package sqllock

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"sync"
	"time"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/internal/unwrap"
)

// Listener timings.
const (
	listenConnectTimeout = 5 * time.Second
	listenRetry          = time.Second      // after a failed start, poll this long before retrying
	listenIdle           = 15 * time.Second // give the connection back after this long without waiters
	listenSlice          = 5 * time.Second  // how often an idle listener looks at the clock
)

// listener holds one pooled PostgreSQL connection in LISTEN on the Backend's own
// channel while its sessions wait in a queue, and wakes the one waiter a notification
// names (its payload is the waiter id). Every waiter row stores the channel of its
// Backend, and whoever frees a key (release, leave, abandon) notifies only the first live
// waiter of it, on that waiter's channel: a handoff wakes one waiter of one Backend.
// The listener runs in one goroutine, started by the first waiter and ended when no one
// waited for listenIdle or when the last session closes. Whenever it stops or starts
// listening it wakes every waiter, so that each re-checks the key and sleeps with the
// right bound (polling while it does not listen).
type listener struct {
	db      *sql.DB
	channel string // the channel name, as pg_notify takes it (lower case, no quoting needed)

	mu       sync.Mutex
	subs     map[string]*subscription // by waiter id
	nsubs    int
	sessions int
	running  bool
	ready    bool      // LISTEN is active on a live connection
	disabled bool      // the driver connection is not pgx's (even unwrapped): waiters poll
	retryAt  time.Time // no reconnection before (after a failure)
	lastUsed time.Time
	stop     context.CancelFunc
	done     chan struct{}
}

type subscription struct {
	id string        // the waiter id
	ch chan struct{} // capacity 1: a pending wake-up
}

func newListener(db *sql.DB, channel string) *listener {
	return &listener{db: db, channel: channel, subs: map[string]*subscription{}}
}

func (l *listener) addSession() {
	l.mu.Lock()
	l.sessions++
	l.mu.Unlock()
}

// removeSession stops the listener when the last session closes, waiting for its
// goroutine within ctx.
func (l *listener) removeSession(ctx context.Context) error {
	l.mu.Lock()
	l.sessions--
	var done chan struct{}
	if l.sessions <= 0 && l.running {
		l.stop()
		done = l.done
	}
	l.mu.Unlock()
	if done == nil {
		return nil
	}
	select {
	case <-done:
		return nil
	case <-ctx.Done():
		return ctx.Err()
	}
}

func (l *listener) listening() bool {
	l.mu.Lock()
	defer l.mu.Unlock()
	return l.ready
}

// subscribe registers the waiter id (unique to one AcquireQueued call).
func (l *listener) subscribe(id string) *subscription {
	s := &subscription{id: id, ch: make(chan struct{}, 1)}
	l.mu.Lock()
	defer l.mu.Unlock()
	l.subs[id] = s
	l.nsubs++
	now := time.Now()
	l.lastUsed = now
	if !l.running && !l.disabled && l.sessions > 0 &&
		l.db.Stats().MaxOpenConnections != 1 { // a pool of one cannot spare a connection
		ctx, cancel := context.WithCancel(context.Background())
		l.running, l.stop, l.done = true, cancel, make(chan struct{})
		go l.run(ctx, l.done, l.retryAt.Sub(now))
	}
	return s
}

func (l *listener) unsubscribe(s *subscription) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.subs[s.id] == s {
		delete(l.subs, s.id)
		l.nsubs--
	}
	l.lastUsed = time.Now()
}

// wakeLocked wakes the waiter id, or everyone for all.
func (l *listener) wakeLocked(id string, all bool) {
	wake := func(s *subscription) {
		select {
		case s.ch <- struct{}{}:
		default:
		}
	}
	if all {
		for _, s := range l.subs {
			wake(s)
		}
		return
	}
	if s := l.subs[id]; s != nil {
		wake(s)
	}
}

func (l *listener) idleLocked() bool {
	return l.nsubs == 0 && time.Since(l.lastUsed) >= listenIdle
}

// run keeps a connection in LISTEN until the session count drops to zero (ctx ends)
// or no one waited for listenIdle; a broken connection is replaced after listenRetry
// while someone waits.
func (l *listener) run(ctx context.Context, done chan struct{}, delay time.Duration) {
	var failed bool
	defer func() {
		l.mu.Lock()
		l.running, l.ready = false, false
		if failed {
			l.retryAt = time.Now().Add(listenRetry)
		}
		l.wakeLocked("", true) // waiters that counted on notifications re-check
		l.stop()
		l.mu.Unlock()
		close(done)
	}()
	retry := time.NewTimer(max(delay, 0)) // after a failure, do not reconnect at once
	defer retry.Stop()
	select {
	case <-retry.C:
	case <-ctx.Done():
		return
	}
	for {
		failed = l.listenOnce(ctx)
		if !failed || ctx.Err() != nil {
			return
		}
		l.mu.Lock()
		l.ready = false
		l.wakeLocked("", true) // they poll until the listener is back
		waiting := l.nsubs > 0 && !l.disabled
		l.mu.Unlock()
		if !waiting {
			return
		}
		retry.Reset(listenRetry)
		select {
		case <-retry.C:
		case <-ctx.Done():
			return
		}
	}
}

// listenOnce takes a pooled connection, LISTENs and dispatches notifications until
// ctx ends (false), the listener is idle (false) or the connection fails (true). The
// connection is never handed back to the pool while it LISTENs: it is discarded.
func (l *listener) listenOnce(ctx context.Context) (failed bool) {
	failed = true
	cctx, cancel := context.WithTimeout(ctx, listenConnectTimeout)
	conn, err := l.db.Conn(cctx)
	cancel()
	if err != nil {
		return true
	}
	defer conn.Close()
	_ = conn.Raw(func(dc any) error {
		// unwrap.Conn peels off wrappers (fencedsql's, otelsql's): LISTEN and
		// WaitForNotification run on pgx's own connection; they write nothing.
		sc, ok := unwrap.Conn(dc).(*stdlib.Conn)
		if !ok {
			l.mu.Lock()
			l.disabled = true
			l.mu.Unlock()
			return nil
		}
		pc := sc.Conn()
		lctx, cancel := context.WithTimeout(ctx, listenConnectTimeout)
		_, err := pc.Exec(lctx, "LISTEN "+quotePG(l.channel))
		cancel()
		if err != nil {
			return driver.ErrBadConn
		}
		l.mu.Lock()
		l.ready = true
		l.wakeLocked("", true) // pollers re-check, now relying on notifications
		l.mu.Unlock()
		for {
			wctx, cancel := context.WithTimeout(ctx, listenSlice)
			n, err := pc.WaitForNotification(wctx)
			timedOut := wctx.Err() != nil
			cancel()
			switch {
			case err == nil:
				l.mu.Lock()
				l.wakeLocked(n.Payload, false)
				l.mu.Unlock()
				continue
			case ctx.Err() != nil:
				failed = false
			case timedOut && !pc.IsClosed():
				l.mu.Lock()
				idle := l.idleLocked()
				l.mu.Unlock()
				if !idle {
					continue
				}
				failed = false
			}
			return driver.ErrBadConn
		}
	})
	return failed
}
