package memlock_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// The Clients of one Service share an identity; two Services have two (red-team
// rt42e F2).
func TestServiceIdentity(t *testing.T) {
	svc := memlock.New()
	locktest.ServiceIdentity(t, []lockclient.Backend{svc, svc}, memlock.New(), memlock.New(memlock.WithSessionLeases()))
}
