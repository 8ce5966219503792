package lockclient_test

import (
	"context"
	"errors"
	"strconv"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// scriptedBackend grants tokens from a list, in order, and records releases.
type scriptedBackend struct {
	mu       sync.Mutex
	tokens   []uint64
	released []lockclient.Grant
}

func (b *scriptedBackend) Open(context.Context, string, time.Duration) (lockclient.Session, error) {
	return &scriptedSession{b: b}, nil
}

type scriptedSession struct{ b *scriptedBackend }

func (s *scriptedSession) TryAcquire(_ context.Context, key string) (lockclient.Grant, error) {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	if len(s.b.tokens) == 0 {
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	t := s.b.tokens[0]
	s.b.tokens = s.b.tokens[1:]
	return lockclient.Grant{Key: key, Token: t}, nil
}
func (s *scriptedSession) Wait(ctx context.Context, _ string) error      { <-ctx.Done(); return ctx.Err() }
func (s *scriptedSession) Renew(context.Context, lockclient.Grant) error { return nil }
func (s *scriptedSession) Release(_ context.Context, g lockclient.Grant) error {
	s.b.mu.Lock()
	defer s.b.mu.Unlock()
	s.b.released = append(s.b.released, g)
	return nil
}
func (s *scriptedSession) Close(context.Context) error { return nil }

// TestClientRefusesTokenThatGoesBack (red-team rt28b F2): a grant whose token is not
// above the highest token the Client was granted for the same lock name is released and
// refused with ErrInvalidConfig, at once; other names are not affected, and a higher
// token is granted again afterwards.
func TestClientRefusesTokenThatGoesBack(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	b := &scriptedBackend{tokens: []uint64{100, 100, 50, 7, 101}}
	c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
	defer c.Close(ctx)
	l, err := c.Acquire(ctx, "k")
	if err != nil || l.Token() != 100 {
		t.Fatalf("first grant: %v, %v", l, err)
	}
	l.Release(ctx)
	for _, want := range []uint64{100, 50} {
		start := time.Now()
		l, err := c.Acquire(ctx, "k")
		if err == nil {
			t.Fatalf("token %d granted after token 100 for the same lock", l.Token())
		}
		if !errors.Is(err, lockclient.ErrInvalidConfig) || time.Since(start) > time.Second {
			t.Fatalf("Acquire with token %d after 100 = %v after %v; want ErrInvalidConfig at once", want, err, time.Since(start))
		}
	}
	b.mu.Lock()
	n := len(b.released)
	last := b.released[n-1]
	b.mu.Unlock()
	if last.Token != 50 {
		t.Fatalf("the refused grant was not released (last release %+v)", last)
	}
	if l, err := c.Acquire(ctx, "other"); err != nil || l.Token() != 7 {
		t.Fatalf("another name: %v, %v", l, err)
	}
	if l, err := c.Acquire(ctx, "k"); err != nil || l.Token() != 101 {
		t.Fatalf("a higher token after the refusals: %v, %v", l, err)
	}
}

// TestClientTokenMemoryIsBounded: the Client remembers the highest token of a bounded
// number of lock names; many names neither grow it without end nor refuse anything.
func TestClientTokenMemoryIsBounded(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	const n = 3000
	b := &scriptedBackend{}
	for i := 1; i <= n; i++ {
		b.tokens = append(b.tokens, uint64(i))
	}
	c := lockclient.New(b, lockclient.WithTTL(5*time.Second))
	defer c.Close(ctx)
	for i := 0; i < n; i++ {
		l, err := c.Acquire(ctx, "k"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
	}
	if got := lockclient.RememberedTokens(c); got > lockclient.MaxRemembered {
		t.Fatalf("the Client remembers %d names, more than %d", got, lockclient.MaxRemembered)
	}
}
