package sqllock

import (
	"context"
	crand "crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"sync"
	"sync/atomic"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/internal/backendutil"
)

// A session is one owner's connection to the lease table: its grants, renewals and
// releases. Every statement runs on the *sql.DB of its Backend.

type session struct {
	b         *Backend
	id        string
	owner     string
	ttlMicros int64
	closed    atomic.Bool

	bg   context.Context // parent of background clean-ups; cancelled at the end of Close
	stop context.CancelFunc
	// closing ends every waiting AcquireQueued when Close begins.
	closing      context.Context
	closeWaiters context.CancelFunc
	mu           sync.Mutex     // guards wg.Add against Close
	wg           sync.WaitGroup // running TryAcquire/AcquireQueued calls and background clean-ups
}

// grantSession is the session_id a grant request stores: the session id and an id of
// the request, so that the grant of one abandoned request can be found and deleted
// without touching the session's other grants. Renew and Release match it exactly. A
// waiting AcquireQueued uses it as its waiter id too.
func (s *session) grantSession(g lockclient.Grant) string {
	if v, ok := g.Data.(string); ok && v != "" {
		return v
	}
	return s.id // a grant that is not this backend's: matches no row
}

// newRequest returns the id of a new grant request: "<session>:<request>".
func (s *session) newRequest() (string, error) {
	var req [8]byte
	if _, err := crand.Read(req[:]); err != nil {
		return "", fmt.Errorf("sqllock: request id: %w", err)
	}
	return s.id + ":" + hex.EncodeToString(req[:]), nil
}

// enter registers a TryAcquire or AcquireQueued call, so that Close waits for it and for
// the clean-ups it starts; false once the session is closed.
func (s *session) enter() bool {
	s.mu.Lock()
	defer s.mu.Unlock()
	if s.closed.Load() {
		return false
	}
	s.wg.Add(1)
	return true
}

// grantState is the answer of the grant routine (schema version 2).
type grantState struct {
	token    int64 // > 0: granted; 0: not now; -1: the request was abandoned or left the queue
	ahead    int64 // live waiters ahead of the caller in the key's queue
	holderUS int64 // the holder's remaining lease in µs, by the server's clock (0: free)
	aheadUS  int64 // the longest remaining liveness among the waiters ahead, µs
	holder   int64 // the holder's token (0: free)
}

// grant runs the grant routine for request gs: as a waiter that joins or stays in the
// key's queue (queue), or as a TryAcquire that only takes a free key nobody waits for.
func (s *session) grant(ctx context.Context, key, gs string, queue bool, channel string) (grantState, error) {
	var q int64
	if queue {
		q = 1
	}
	args := []any{key, s.owner, s.id, gs, s.ttlMicros, q}
	if s.b.dialect == Postgres {
		args = append(args, channel)
	}
	var st grantState
	err := retryGrant(ctx, func() error {
		return s.b.scanRow(ctx, s.b.q.grant2, args, &st.token, &st.ahead, &st.holderUS, &st.aheadUS, &st.holder)
	})
	return st, err
}

func (s *session) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	if err := s.b.checkKey(key); err != nil {
		return lockclient.Grant{}, err
	}
	entered := s.enter()
	if entered {
		defer s.wg.Done()
	}
	if err := s.b.tokenSeqChecked(ctx, "try-acquire", key); err != nil {
		return lockclient.Grant{}, err
	}
	if err := s.b.ensureServiceID(ctx); err != nil {
		return lockclient.Grant{}, err
	}
	gs, err := s.newRequest()
	if err != nil {
		return lockclient.Grant{}, err
	}
	if s.b.legacy() {
		return s.tryAcquireV1(ctx, key, gs, entered)
	}
	st, err := s.grant(ctx, key, gs, false, "")
	if err != nil && missingObject(err) {
		// Nothing ran: schema version 2, or the whole lease table, is missing.
		legacy, serr := s.b.missingV2(ctx, "try-acquire", key, err)
		if serr != nil {
			return lockclient.Grant{}, serr
		}
		if legacy {
			return s.tryAcquireV1(ctx, key, gs, entered)
		}
	}
	switch {
	case err != nil:
		if entered && !refusedAsReplica(err) { // a refused request wrote nothing
			s.abandon(key, gs) // the request may still reach the server
		}
		return lockclient.Grant{}, s.b.grantFailed(ctx, "try-acquire", key, err)
	case st.token == 0:
		return lockclient.Grant{}, lockclient.ErrHeld
	case st.token < 0:
		return lockclient.Grant{}, unavailable("try-acquire", key, errors.New("the request was marked abandoned"))
	}
	return lockclient.Grant{Key: key, Token: uint64(st.token), Data: gs}, nil
}

func (s *session) Release(ctx context.Context, g lockclient.Grant) error {
	tok, err := grantToken(g)
	if err != nil {
		return err
	}
	// The release routine: PostgreSQL <table>_release_v2 (schema version 2), MySQL
	// <table>_release_v2 (committed at the server, red-team rt41c F3). Both answer
	// (found, live).
	useRoutine := !s.b.legacy()
	if s.b.dialect == MySQL {
		useRoutine = !s.b.plainRenew()
	}
	if useRoutine {
		var found bool
		var live sql.NullBool
		err = s.b.scanRow(ctx, s.b.q.release2, []any{g.Key, s.grantSession(g), tok}, &found, &live)
		var fallback bool
		var serr error
		if s.b.dialect == MySQL {
			fallback, serr = s.b.missingRenewProcs(ctx, "release", g.Key, err)
		} else {
			fallback, serr = s.b.missingV2(ctx, "release", g.Key, err)
		}
		if serr != nil {
			return serr
		}
		if !fallback {
			switch {
			case err != nil:
				return s.b.fail(ctx, "release", g.Key, err)
			case !found:
				return lockclient.ErrNotOwner
			case !live.Bool:
				return lockclient.ErrLeaseLost
			}
			return nil
		}
	}
	if s.b.dialect == Postgres {
		var live sql.NullBool
		var notified int64
		err := s.b.scanRow(ctx, s.b.q.release, []any{g.Key, s.grantSession(g), tok, s.b.table.name}, &live, &notified)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return lockclient.ErrNotOwner
		case err != nil:
			return s.b.fail(ctx, "release", g.Key, err)
		case !live.Bool:
			return lockclient.ErrLeaseLost
		}
		return nil
	}
	// MySQL, a table without <table>_release_v2: the plain statements of earlier
	// releases, committed only on a session in autocommit outside a transaction.
	res, err := s.b.exec(ctx, s.b.q.release, g.Key, s.grantSession(g), tok)
	if err != nil {
		return s.b.fail(ctx, "release", g.Key, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.b.fail(ctx, "release", g.Key, err)
	} else if n > 0 {
		return nil
	}
	// Not live: delete our own expired row, if nobody took the key since.
	res, err = s.b.exec(ctx, s.b.q.releaseExpired, g.Key, s.grantSession(g), tok)
	if err != nil {
		return s.b.fail(ctx, "release", g.Key, err)
	}
	if n, err := res.RowsAffected(); err != nil {
		return s.b.fail(ctx, "release", g.Key, err)
	} else if n > 0 {
		return lockclient.ErrLeaseLost
	}
	return lockclient.ErrNotOwner
}

// Wait polls the key (Clients use AcquireQueued instead): it returns when the key is
// free or its lease expired, re-checking with a jittered poll interval, never sleeping
// past the holder's remaining lease.
func (s *session) Wait(ctx context.Context, key string) error {
	if err := s.b.checkKey(key); err != nil {
		return err
	}
	return backendutil.WaitFree(ctx, s.b.pollDelay, func(ctx context.Context) (bool, time.Duration, error) {
		var us int64
		err := s.b.scanRow(ctx, s.b.q.remaining, []any{key}, &us)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			return true, 0, nil // free
		case err != nil:
			return false, 0, s.b.fail(ctx, "wait", key, err)
		}
		// us <= 0: expired, TryAcquire takes it over.
		return us <= 0, time.Duration(us) * time.Microsecond, nil
	})
}

// Close ends the session: waiting AcquireQueued calls end with ErrClosed and leave
// their queues, and Close waits within ctx for that and for the clean-up of abandoned
// requests. Leases it still holds expire after their TTL (lockclient's Client releases
// its leases before closing the session).
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	already := s.closed.Swap(true)
	s.mu.Unlock()
	if already {
		return nil
	}
	s.closeWaiters()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
	}
	s.stop()
	<-done
	if s.b.lis != nil {
		return s.b.lis.removeSession(ctx)
	}
	return nil
}

func (s *session) Renew(ctx context.Context, g lockclient.Grant) error {
	tok, err := grantToken(g)
	if err != nil {
		return err
	}
	if s.b.dialect == MySQL && !s.b.plainRenew() {
		// One CALL: the procedure updates and commits at the server, then answers
		// (red-team rt41c F3, renew_mysql.go).
		var renewed int64
		err := s.b.scanRow(ctx, s.b.q.renew2, []any{g.Key, s.grantSession(g), tok, s.ttlMicros}, &renewed)
		plain, serr := s.b.missingRenewProcs(ctx, "renew", g.Key, err)
		switch {
		case serr != nil:
			return serr
		case plain: // an earlier release's table: the plain statements below
		case err != nil:
			return s.b.fail(ctx, "renew", g.Key, err)
		case renewed > 0:
			return nil
		default:
			return lockclient.ErrLeaseLost
		}
	}
	var res sql.Result
	switch s.b.dialect {
	case Postgres:
		res, err = s.b.exec(ctx, s.b.q.renew, g.Key, s.grantSession(g), tok, s.ttlMicros)
	case MySQL:
		res, err = s.b.exec(ctx, s.b.q.renew, s.ttlMicros, g.Key, s.grantSession(g), tok)
	}
	if err != nil {
		return s.b.fail(ctx, "renew", g.Key, err)
	}
	n, err := res.RowsAffected()
	if err != nil {
		return s.b.fail(ctx, "renew", g.Key, err)
	}
	if n > 0 {
		return nil
	}
	if s.b.dialect == MySQL {
		// MySQL counts changed rows, not matched ones: a renewal computing the very
		// expires_at already stored changes nothing. Ask whether the grant is still live.
		var live bool
		err := s.b.scanRow(ctx, s.b.q.renewCheck, []any{g.Key, s.grantSession(g), tok}, &live)
		switch {
		case err == nil && live:
			return nil
		case err != nil && !errors.Is(err, sql.ErrNoRows):
			return s.b.fail(ctx, "renew", g.Key, err)
		}
	}
	return lockclient.ErrLeaseLost
}
