package lockclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// anonymous is a Backend whose sessions do not name their service (a backend of
// another package, written before lockclient.ServiceIdentifier).
type anonymous struct{ b lockclient.Backend }

type anonymousSession struct{ lockclient.Session }

func (a anonymous) Open(ctx context.Context, owner string, ttl time.Duration) (lockclient.Session, error) {
	s, err := a.b.Open(ctx, owner, ttl)
	if err != nil {
		return nil, err
	}
	return anonymousSession{s}, nil
}

// A Lease answers its session's identity; "" when the session names none, and for a
// nil or zero-value Lease (what a failed Acquire returns beside its error), without
// panicking.
func TestLeaseServiceID(t *testing.T) {
	ctx := context.Background()
	svc := memlock.New()
	for name, tc := range map[string]struct {
		b    lockclient.Backend
		want string
	}{
		"named":     {svc, svc.ServiceID()},
		"anonymous": {anonymous{svc}, ""},
	} {
		t.Run(name, func(t *testing.T) {
			c := lockclient.New(tc.b)
			defer c.Close(ctx)
			l, err := c.Acquire(ctx, "k-"+name)
			if err != nil {
				t.Fatal(err)
			}
			if got := l.ServiceID(); got != tc.want {
				t.Fatalf("ServiceID = %q, want %q", got, tc.want)
			}
		})
	}
	var nilLease *lockclient.Lease
	if got := nilLease.ServiceID(); got != "" {
		t.Errorf("nil Lease: ServiceID = %q", got)
	}
	if got := new(lockclient.Lease).ServiceID(); got != "" {
		t.Errorf("zero-value Lease: ServiceID = %q", got)
	}
}
