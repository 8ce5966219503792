package redislock

import (
	"context"
	"fmt"
	"strconv"
	"strings"
	"sync"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/internal/backendutil"
)

// A session is one owner's view of the server: its grants, renewals, releases and
// Wait. Every operation is one Lua script (scripts.go).

type session struct {
	b         *Backend
	id        string
	serviceID string // the Backend's identity when the session was opened (ServiceID)
	owner     string
	ttlMillis int64

	bg     context.Context // parent of background clean-ups; cancelled by Close
	stop   context.CancelFunc
	wg     sync.WaitGroup
	mu     sync.Mutex
	closed bool
}

func (s *session) TryAcquire(ctx context.Context, key string) (lockclient.Grant, error) {
	req, err := randomHex(8)
	if err != nil {
		return lockclient.Grant{}, err
	}
	return s.tryAcquire(ctx, key, req)
}

// tryAcquire makes the grant request req (an id unique to this attempt).
func (s *session) tryAcquire(ctx context.Context, key, req string) (lockclient.Grant, error) {
	head := s.id + ":" + req + ":"
	code, val, _, err := s.grant(ctx, key, head, "")
	switch {
	case err != nil:
		s.abandon(key, head, "")
		if gerr := s.b.grantFailed("try-acquire", key, err); gerr != nil {
			return lockclient.Grant{}, gerr
		}
		return lockclient.Grant{}, unavailable("try-acquire", key, err)
	case code != 1:
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	return s.granted(key, head, val)
}

// grant runs grantScript for request head, as waiter (or "" for TryAcquire).
func (s *session) grant(ctx context.Context, key, head, waiter string) (code int64, val any, rank int64, err error) {
	b := s.b
	res, err := grantScript.Run(ctx, b.rdb,
		[]string{b.LockKey(key), b.TokenKey(), b.QueueKey(key), b.abandonedKey(head), b.ticketKey()},
		head, s.ttlMillis, s.owner, waiter, b.waiterPrefix(), b.floorSeed(1)).Slice()
	if err != nil {
		return 0, nil, 0, err
	}
	if len(res) < 2 {
		return 0, nil, 0, fmt.Errorf("unexpected reply %v", res)
	}
	code, ok := res[0].(int64)
	if !ok {
		return 0, nil, 0, fmt.Errorf("unexpected reply %v", res)
	}
	if len(res) > 2 {
		rank, _ = res[2].(int64)
	}
	return code, res[1], rank, nil
}

// grantFailed returns the error of a grant that failed because the token counter is at
// its end (the script's exhaustedReply, or Redis's own overflow error of the INCR): a
// configuration error, wrapping lockclient.ErrInvalidConfig, that no retry can fix;
// likewise a counter that holds no token (corruptReply, or Redis' "value is not an
// integer or out of range") and the mark of a retired service (retiredReply: an error
// wrapping lockclient.ErrRetired). Any other failure yields nil.
func (b *Backend) grantFailed(op, key string, err error) error {
	msg := err.Error()
	if strings.Contains(msg, retiredReply) {
		return fmt.Errorf("redislock: %s %q: the token counter %s: %w", op, key, b.TokenKey(), lockclient.ErrRetired)
	}
	// Redis' own reply to an INCR of a value that is no 64-bit integer: canon() refuses
	// such a counter first, so this is a backstop (the scripts of an earlier release,
	// during an upgrade) with the same verdict (rt31b F5).
	if strings.Contains(msg, corruptReply) || strings.Contains(msg, "value is not an integer or out of range") {
		return fmt.Errorf("redislock: %s %q: %w: the token counter %s does not hold a token (a canonical non-negative integer); "+
			"set it (SET) above the highest token granted so far and above the highest token the guarded tables hold: %v",
			op, key, lockclient.ErrInvalidConfig, b.TokenKey(), err)
	}
	if !strings.Contains(msg, exhaustedReply) && !strings.Contains(msg, "increment or decrement would overflow") {
		return nil
	}
	return fmt.Errorf("redislock: %s %q: %w: the token counter %s is at its end (2^63-1), no later token can be greater: %v",
		op, key, lockclient.ErrInvalidConfig, b.TokenKey(), err)
}

// granted makes the Grant of a granted request from the token string the script sent.
func (s *session) granted(key, head string, val any) (lockclient.Grant, error) {
	str, ok := val.(string)
	if !ok {
		return lockclient.Grant{}, unavailable("try-acquire", key, fmt.Errorf("token %v is not a decimal string", val))
	}
	tok, err := strconv.ParseUint(str, 10, 64)
	if err != nil || tok == 0 {
		return lockclient.Grant{}, unavailable("try-acquire", key, fmt.Errorf("invalid token %q", str))
	}
	value := head + str + ":" + s.owner
	return lockclient.Grant{Key: key, Token: tok, Data: value}, nil
}

func grantValue(g lockclient.Grant) (string, error) {
	v, ok := g.Data.(string)
	if !ok || v == "" {
		return "", fmt.Errorf("redislock: grant of %q (token %d) was not issued by redislock", g.Key, g.Token)
	}
	return v, nil
}

func (s *session) Renew(ctx context.Context, g lockclient.Grant) error {
	v, err := grantValue(g)
	if err != nil {
		return err
	}
	n, err := renewScript.Run(ctx, s.b.rdb, []string{s.b.LockKey(g.Key)}, v, s.ttlMillis).Int64()
	switch {
	case err != nil:
		return unavailable("renew", g.Key, err)
	case n == 1:
		return nil
	}
	return lockclient.ErrLeaseLost
}

func (s *session) Release(ctx context.Context, g lockclient.Grant) error {
	v, err := grantValue(g)
	if err != nil {
		return err
	}
	n, err := releaseScript.Run(ctx, s.b.rdb, []string{s.b.LockKey(g.Key)}, v).Int64()
	switch {
	case err != nil:
		return unavailable("release", g.Key, err)
	case n == 1:
		return nil
	case n == 0:
		return lockclient.ErrLeaseLost
	}
	return lockclient.ErrNotOwner
}

func (s *session) Wait(ctx context.Context, key string) error {
	delay := func() time.Duration { return backendutil.PollDelay(s.b.pollMin, s.b.pollMax) }
	return backendutil.WaitFree(ctx, delay, func(ctx context.Context) (bool, time.Duration, error) {
		pttl, err := s.b.rdb.PTTL(ctx, s.b.LockKey(key)).Result()
		switch {
		case err != nil:
			return false, 0, unavailable("wait", key, err)
		case pttl == -2 || (pttl >= 0 && pttl < time.Millisecond):
			return true, 0, nil // free, or expiring now
		}
		return false, max(pttl, 0), nil // -1: no expiry set; poll
	})
}

// Close ends the session, waiting within ctx for the clean-up of abandoned requests to
// finish (it is cancelled when ctx ends). Locks it still holds expire after their TTL
// (lockclient's Client releases its leases before closing the session).
func (s *session) Close(ctx context.Context) error {
	s.mu.Lock()
	s.closed = true
	s.mu.Unlock()
	done := make(chan struct{})
	go func() { s.wg.Wait(); close(done) }()
	select {
	case <-done:
	case <-ctx.Done():
		s.stop()
		<-done
	}
	s.stop()
	return nil
}
