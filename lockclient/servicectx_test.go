package lockclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

type ctxKey struct{}

// The context a lock service is called with keeps the caller's deadline and
// cancellation and drops its values (a fencing lease bound to it, red-team rt41c F4).
func TestServiceContextKeepsDeadlineDropsValues(t *testing.T) {
	parent, cancel := context.WithTimeout(context.WithValue(context.Background(), ctxKey{}, "lease"), time.Hour)
	sc := lockclient.ServiceContext(parent)
	if sc.Value(ctxKey{}) != nil {
		t.Fatal("the service context carries the caller's value")
	}
	want, _ := parent.Deadline()
	if d, ok := sc.Deadline(); !ok || !d.Equal(want) {
		t.Fatalf("Deadline = %v, %v; want %v", d, ok, want)
	}
	if sc.Err() != nil {
		t.Fatal(sc.Err())
	}
	cancel()
	select {
	case <-sc.Done():
	case <-time.After(time.Second):
		t.Fatal("cancelling the caller's context did not end the service context")
	}
	if sc.Err() != context.Canceled {
		t.Fatalf("Err = %v, want context.Canceled", sc.Err())
	}
}
