// Package lockfaults is the shared harness of the lock backends' fault tests
// (lockclient/redislock, lockclient/sqllock, lockclient/etcdlock): a randomized fault
// schedule with its checker (Run), the first contact with a stalled service
// (FirstContactStalled), and the FENCEDSQL_SCHEDULES_DURATION and _SEED knobs that
// lengthen and replay the schedules (ReadKnobs; the family the other randomized
// schedules of the repository read). The faults themselves are the tests' own: internal/netproxy
// stalls and resets a client's connections, internal/etcdtest kills cluster members.
package lockfaults

import (
	"os"
	"strconv"
	"testing"
	"time"
)

// Knobs are the environment knobs of the fault schedule tests, in the style of the
// FENCEDSQL_SCHEDULES_* family (internal/fencetest/scheduleknobs.go): the default run is
// short for CI, the long form and a replay are asked for by the environment.
type Knobs struct {
	// Duration is FENCEDSQL_SCHEDULES_DURATION (a Go duration: 30s, 2m) or, when unset,
	// the test's default. A schedule runs that long; the test ends within about one
	// fault and one Release after it.
	Duration time.Duration
	// Seed is FENCEDSQL_SCHEDULES_SEED or, when unset, a time-based seed, so that each CI
	// run explores other schedules. It draws the faults and every client's choices;
	// the interleaving itself also depends on timing, so a replay may need a few runs.
	Seed int64
}

// ReadKnobs reads the knobs, with duration as the default length, and logs the seed
// and how to replay it. A knob that does not parse fails the test.
func ReadKnobs(t testing.TB, duration time.Duration) Knobs {
	t.Helper()
	k := Knobs{Duration: duration, Seed: time.Now().UnixNano()}
	if s := os.Getenv("FENCEDSQL_SCHEDULES_DURATION"); s != "" {
		d, err := time.ParseDuration(s)
		if err != nil || d <= 0 {
			t.Fatalf("FENCEDSQL_SCHEDULES_DURATION=%q: want a positive duration such as 30s", s)
		}
		k.Duration = d
	}
	if s := os.Getenv("FENCEDSQL_SCHEDULES_SEED"); s != "" {
		n, err := strconv.ParseInt(s, 10, 64)
		if err != nil {
			t.Fatalf("FENCEDSQL_SCHEDULES_SEED=%q: %v", s, err)
		}
		k.Seed = n
	}
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d), schedule of %v", k.Seed, k.Seed, k.Duration)
	return k
}
