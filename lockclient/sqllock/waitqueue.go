package sqllock

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/internal/backendutil"
)

// The waiter queue (schema version 2): AcquireQueued enters a request per key, waits
// for its turn (LISTEN/NOTIFY on PostgreSQL, polling otherwise), and removes or
// abandons the request when it gives up. Clean-ups the session could not run at once
// are retried in the background.

// AcquireQueued implements lockclient.QueueSession: a FIFO queue per key in the waiter
// table (see the package doc).
func (s *session) AcquireQueued(ctx context.Context, key string) (lockclient.Grant, time.Time, error) {
	if err := s.b.checkKey(key); err != nil {
		return lockclient.Grant{}, time.Time{}, err
	}
	if !s.enter() {
		return lockclient.Grant{}, time.Time{}, fmt.Errorf("sqllock: acquire %q: %w", key, lockclient.ErrClosed)
	}
	defer s.wg.Done()
	parent := ctx
	ctx, cancel := context.WithCancel(ctx)
	defer cancel()
	defer context.AfterFunc(s.closing, cancel)()
	ended := func(err error) error {
		switch {
		case parent.Err() != nil:
			return fmt.Errorf("sqllock: acquire %q: %w", key, parent.Err())
		case s.closing.Err() != nil:
			return fmt.Errorf("sqllock: acquire %q: %w", key, lockclient.ErrClosed)
		}
		return unavailable("acquire", key, err)
	}
	// failed: a statement failed (the service may be unreachable): ErrUnavailable, and
	// the context's error too if it ended.
	failed := func(err error) error {
		if errors.Is(err, lockclient.ErrInvalidConfig) {
			return err // a missing lease table: not unavailability
		}
		if e := s.b.tokenSourceError(ctx, err); e != nil {
			return e // the token source is at its end or lost: no retry passes
		}
		if ce := parent.Err(); ce != nil && !errors.Is(err, ce) {
			err = fmt.Errorf("%w (%w)", err, ce)
		}
		return unavailable("acquire", key, err)
	}
	if err := s.b.tokenSeqChecked(ctx, "acquire", key); err != nil {
		return lockclient.Grant{}, time.Time{}, failed(err)
	}
	if err := s.b.ensureServiceID(ctx); err != nil {
		return lockclient.Grant{}, time.Time{}, err // wraps ErrUnavailable
	}
	gs, err := s.newRequest()
	if err != nil {
		return lockclient.Grant{}, time.Time{}, err
	}
	if s.b.legacy() {
		return s.acquireV1(ctx, key, ended, failed)
	}
	var notified <-chan struct{}
	var channel string
	var sub *subscription
	if s.b.lis != nil {
		sub = s.b.lis.subscribe(gs)
		defer s.b.lis.unsubscribe(sub)
		notified, channel = sub.ch, s.b.lis.channel
	}
	timer := time.NewTimer(time.Hour)
	defer timer.Stop()
	p := poller{fast: s.b.pollMin, holder: -1}
	for {
		// Read before the call: if the listener was LISTENing then, a notification sent
		// after the call's check reaches us.
		listening := sub != nil && s.b.lis.listening()
		sent := time.Now()
		st, err := s.grant(ctx, key, gs, true, channel)
		if err != nil && missingObject(err) {
			// Nothing ran: schema version 2, or the whole lease table, is missing.
			legacy, serr := s.b.missingV2(ctx, "acquire", key, err)
			if serr != nil {
				return lockclient.Grant{}, time.Time{}, serr
			}
			if legacy {
				return s.acquireV1(ctx, key, ended, failed)
			}
		}
		switch {
		case err != nil:
			if !refusedAsReplica(err) { // a refused request wrote nothing
				s.abandon(key, gs) // unknown outcome: it may still grant or queue
			}
			return lockclient.Grant{}, time.Time{}, failed(err)
		case st.token > 0:
			return lockclient.Grant{Key: key, Token: uint64(st.token), Data: gs}, sent, nil
		case st.token < 0:
			// Our waiter row lapsed and was collected (we did not refresh it within a
			// TTL): the Client retries, joining the queue again at its end.
			return lockclient.Grant{}, time.Time{}, unavailable("acquire", key, errors.New("the waiter lapsed and left the queue"))
		}
		timer.Reset(s.queueDelay(st, listening, &p))
		select {
		case <-notified:
		case <-timer.C:
		case <-ctx.Done():
			s.leave(key, gs) // our last call answered: no grant of ours is in flight
			return lockclient.Grant{}, time.Time{}, ended(ctx.Err())
		}
	}
}

// poller is the polling state of one waiter: backoff while nothing moves (the same
// holder keeps the key and the waiter's place in line is the same).
type poller struct {
	fast   time.Duration
	holder int64
	ahead  int64
}

// queueDelay is how long a waiter sleeps before its next call, given the answer of the
// last one. Every waiter calls at least every TTL/4, which refreshes its liveness in
// time; the first waiter also wakes just after the holder's lease ends, and every
// waiter just after the liveness of all those ahead of it ends (they died). A waiter
// that listens is woken by notifications otherwise. One that polls (MySQL,
// WithPolling, listener down) polls by its place r in line: every 1–2 × max(poll
// minimum, r × poll minimum / 2), at most every half to one poll maximum (the first
// three in line every 20–40ms by default, the tenth every 100–200ms), doubling the
// interval up to that bound while neither the holder nor its place changes.
func (s *session) queueDelay(st grantState, listening bool, p *poller) time.Duration {
	b := s.b
	d := time.Duration(s.ttlMicros) * time.Microsecond / 4
	switch {
	case st.ahead == 0 && st.holderUS > 0:
		d = min(d, time.Duration(st.holderUS)*time.Microsecond+backendutil.AfterExpiry())
	case st.ahead == 0:
		d = min(d, backendutil.PollDelay(0, b.pollMin)) // free, yet not granted: a race
	case st.aheadUS > 0:
		d = min(d, time.Duration(st.aheadUS)*time.Microsecond+backendutil.AfterExpiry())
	}
	if listening {
		if st.ahead == 0 {
			d = min(d, 5*b.pollMax) // in case the listening connection silently stalls
		}
		return d
	}
	// Polling: the interval grows with the place in line (the queue moves one place
	// per handoff) and doubles while nothing moves, up to the poll maximum.
	cap := max(b.pollMin, b.pollMax/2)
	base := min(max(b.pollMin, time.Duration(st.ahead)*b.pollMin/2), cap)
	if st.holder != p.holder || st.ahead != p.ahead {
		p.fast, p.holder, p.ahead = base, st.holder, st.ahead
	} else {
		p.fast = min(2*p.fast, cap)
	}
	return min(d, p.fast+backendutil.PollDelay(0, p.fast))
}

// Clean-ups in the background.
const (
	cleanupFirst = 20 * time.Millisecond
	cleanupMax   = time.Second
)

// errNotYet makes background repeat a clean-up that found nothing to do yet.
var errNotYet = errors.New("sqllock: nothing deleted yet")

// background runs f until it returns nil, with backoff (20ms doubling to 1s), for up
// to two TTLs or until Close ends. Its callers have entered (so Close waits for it).
func (s *session) background(f func(ctx context.Context) error) {
	s.wg.Add(1)
	go func() {
		defer s.wg.Done()
		ctx, cancel := context.WithTimeout(s.bg, 2*time.Duration(s.ttlMicros)*time.Microsecond)
		defer cancel()
		backendutil.Retry(ctx, time.Second, cleanupFirst, cleanupMax, f)
	}()
}

// leave removes the waiter gs from key's queue, in the background (a waiter whose
// removal never reaches the server lapses after its TTL). On PostgreSQL it wakes the
// next waiter if the key is free.
func (s *session) leave(key, gs string) {
	s.background(func(ctx context.Context) error {
		if s.b.dialect == Postgres {
			var n int64
			return s.b.scanRow(ctx, s.b.q.leave2, []any{key, gs}, &n)
		}
		if !s.b.plainRenew() {
			var n int64
			err := s.b.scanRow(ctx, s.b.q.leave2, []any{gs}, &n)
			plain, serr := s.b.missingRenewProcs(ctx, "leave", key, err)
			switch {
			case serr != nil:
				return serr
			case !plain:
				return err
			}
		}
		_, err := s.b.exec(ctx, s.b.q.leave, gs)
		return err
	})
}

// abandonKeep is how long the mark of an abandoned request is kept (beyond two TTLs):
// a request delivered later than that may still leave a grant, which expires after
// its TTL, or a waiter, which lapses after its TTL.
const abandonKeep = time.Minute

// abandon makes sure the request gs, whose outcome is unknown (timeout, cut connection,
// ended context), leaves nothing, in the background: it marks the request gone in the
// waiter table (the grant routine refuses a marked request, so one that reaches the
// server later grants and queues nothing), then deletes the grant the request may have
// got (owner-checked by gs), waking the next waiter. The mark comes first and grants
// lock the request's mark, so no grant slips in between (see ddl.go).
func (s *session) abandon(key, gs string) {
	keep := 2*s.ttlMicros + abandonKeep.Microseconds()
	s.background(func(ctx context.Context) error {
		var err error
		if s.b.dialect == Postgres {
			var n int64
			err = s.b.scanRow(ctx, s.b.q.abandon2, []any{key, gs, s.id, keep}, &n)
		} else {
			err = s.abandonMySQL(ctx, key, gs, keep)
		}
		if err != nil && missingObject(err) {
			switch legacy, serr := s.b.missingV2(ctx, "abandon", key, err); {
			case legacy:
				return s.deleteAbandonedV1(ctx, key, gs)
			case errors.Is(serr, ErrSchema):
				return nil // no lease table: nothing to clean up
			case serr != nil:
				return serr
			}
		}
		return err
	})
}

// abandonMySQL marks the request gs gone and deletes its grant: one CALL of
// <table>_abandon_v2, committed at the server, or, on a table of an earlier release
// (plainRenew), that release's two plain statements.
func (s *session) abandonMySQL(ctx context.Context, key, gs string, keep int64) error {
	if !s.b.plainRenew() {
		var n int64
		err := s.b.scanRow(ctx, s.b.q.abandon2, []any{key, gs, s.id, keep}, &n)
		plain, serr := s.b.missingRenewProcs(ctx, "abandon", key, err)
		switch {
		case serr != nil:
			return serr
		case !plain:
			return err
		}
	}
	if _, err := s.b.exec(ctx, s.b.q.abandonMark, key, gs, s.id, keep, keep); err != nil {
		return err
	}
	_, err := s.b.exec(ctx, s.b.q.abandon, key, gs)
	return err
}
