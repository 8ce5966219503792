package lockclient_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

type ctxKey struct{}

// callerKey is a key whose values are for the caller's statements only.
type callerKey struct{}

func (callerKey) CallerOnly() {}

// The context a lock service is called with keeps the caller's deadline, cancellation
// and ordinary values (a tracing span) and drops the caller-only ones (a fencing lease
// bound to it, red-team rt41c F4).
func TestServiceContextKeepsDeadlineDropsCallerOnlyValues(t *testing.T) {
	parent, cancel := context.WithTimeout(context.WithValue(context.WithValue(context.Background(),
		ctxKey{}, "span"), callerKey{}, "lease"), time.Hour)
	sc := lockclient.ServiceContext(parent)
	if v := sc.Value(callerKey{}); v != nil {
		t.Fatalf("the service context carries the caller-only value %v", v)
	}
	if v := sc.Value(ctxKey{}); v != "span" {
		t.Fatalf("the service context lost the caller's ordinary value: %v", v)
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
