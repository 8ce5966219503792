package etcdtest

import (
	"fmt"
	"os"
	"testing"
	"time"

	"go.uber.org/goleak"
)

// VerifyTestMain runs the tests and then fails the binary if goroutines leaked, like
// goleak.VerifyTestMain, but waits up to 15s for them to end instead of about 2s, and
// ignores one etcd goroutine that a killed member can leave blocked (below).
//
// Why the wait: a stopped etcd member's peer HTTP server leaves connections that were
// active at shutdown to finish by themselves. etcd wraps peer connections in a timeout
// conn that re-arms the read deadline on every Read (rafthttp's 5s ConnReadTimeout), so
// net/http's abortPendingRead on such a connection, and the other member's keep-alive
// connection to it, end up to 5s after the cluster closed. They do end; waiting for them
// keeps the check strict for every other goroutine (ours and the etcd client's).
func VerifyTestMain(m *testing.M) {
	code := m.Run()
	if code == 0 {
		deadline := time.Now().Add(15 * time.Second)
		for {
			err := goleak.Find(
				// A peer's /version request to a member the test killed can stay blocked
				// on the killed member's storage lock: etcd's goroutine, not ours.
				goleak.IgnoreAnyFunction("go.etcd.io/etcd/server/v3/etcdserver/api/etcdhttp.newPeerHandler.versionHandler.func1"),
			)
			if err == nil {
				break
			}
			if time.Now().After(deadline) {
				fmt.Fprintf(os.Stderr, "goleak: errors on successful test run: %v\n", err)
				code = 1
				break
			}
			time.Sleep(200 * time.Millisecond)
		}
	}
	os.Exit(code)
}
