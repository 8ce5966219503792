package memlock_test

import (
	"testing"

	"go.uber.org/goleak"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/locktest"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

func TestMain(m *testing.M) { goleak.VerifyTestMain(m) }

func TestConformance(t *testing.T) {
	locktest.Run(t, locktest.Harness{
		New:       func(*testing.T) lockclient.Backend { return memlock.New() },
		FaultsFor: func(b lockclient.Backend) locktest.Faults { return b.(*memlock.Service) },
	})
}
