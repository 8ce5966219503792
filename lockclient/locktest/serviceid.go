package locktest

import (
	"context"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// ServiceIdentity checks the backend's lockclient.ServiceIdentifier, through the
// Leases that Clients of the backends grant: same are Backends of one lock service
// (one token counter; build each as another process would: its own connection, its own
// Backend value), whose leases must all answer one non-empty identity; each of others
// is another service (another server, prefix, table or database), whose leases must
// answer an identity of their own, different from same's and from each other's
// (red-team rt42e F2: fencedsql refuses leases of two services bound together by
// these identities).
func ServiceIdentity(t *testing.T, same []lockclient.Backend, others ...lockclient.Backend) {
	t.Helper()
	if len(same) == 0 {
		t.Fatal("locktest.ServiceIdentity: no Backend of the service")
	}
	ids := map[string]string{} // identity → which backend answered it
	var first string
	for i, b := range same {
		id := leaseServiceID(t, b, fmt.Sprintf("same-%d", i))
		if id == "" {
			t.Fatalf("a lease of same[%d] (%T) names no lock service", i, b)
		}
		if i == 0 {
			first, ids[id] = id, "same"
		} else if id != first {
			t.Errorf("Backends of one lock service answer two identities: %q (same[0]) and %q (same[%d])", first, id, i)
		}
	}
	for i, b := range others {
		id := leaseServiceID(t, b, fmt.Sprintf("other-%d", i))
		if id == "" {
			t.Errorf("a lease of others[%d] (%T) names no lock service", i, b)
			continue
		}
		if who, ok := ids[id]; ok {
			t.Errorf("others[%d] answers identity %q, as %s does: two lock services, one identity", i, id, who)
		}
		ids[id] = fmt.Sprintf("others[%d]", i)
	}
}

// leaseServiceID grants a lock through a new Client of b and returns its lease's
// identity, releasing the lock and closing the Client.
func leaseServiceID(t *testing.T, b lockclient.Backend, key string) string {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	c := lockclient.New(b, lockclient.WithTTL(5*time.Second), lockclient.WithOwner("service-id-"+key))
	defer func() { _ = c.Close(ctx) }()
	l, err := c.Acquire(ctx, "service-id/"+key)
	if err != nil {
		t.Fatal(err)
	}
	defer func() { _ = l.Release(ctx) }()
	return l.ServiceID()
}
