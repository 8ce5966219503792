package lockfaults

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/netproxy"
	"github.com/fencedsql/fencedsql/lockclient"
)

// Schedule is one randomized fault schedule: every client runs one worker per lock,
// which acquires the lock, "writes" under it a few times and releases it, over and
// over, while a scheduler injects faults. The checker (Run):
//
//   - at every write, a lease whose Err() is nil before and after a direct read of the
//     service (Holds, which bypasses the faults) must be the grant the service holds:
//     a client never reports a lease held that the service no longer holds;
//   - the tokens of the writes of one lock, in write order (the writes are serialized),
//     never go back;
//   - Acquire answers within its deadline (+ Slack) with a grant or an error wrapping
//     ErrUnavailable or the context's error;
//   - Release answers within its deadline (+ Slack), nil or an error wrapping
//     ErrLeaseLost, ErrNotOwner or ErrUnavailable.
type Schedule struct {
	// Clients are the lock clients, one per owner (Client.Owner names it in the
	// faults and the messages). Run closes them at the end.
	Clients []*lockclient.Client
	// Locks are the lock names every client takes (several: one session carries
	// several grants).
	Locks []string
	// AcquireDeadline is the range [min, max) each Acquire's deadline is drawn from.
	AcquireDeadline [2]time.Duration
	// ReleaseDeadline is each Release's deadline.
	ReleaseDeadline time.Duration
	// Slack is how late after its deadline an Acquire or a Release may still answer
	// (a request in flight, the backend's request timeout, a loaded machine).
	Slack time.Duration
	// WriteGap is the longest pause between two writes of a holder (1 to 6 per grant).
	WriteGap time.Duration
	// Holds reads, at the service and not through the faults, whether it holds owner's
	// lease l of lock now; saw says what it holds instead. An error (the service did
	// not answer) fails the test, unless SkipUnanswered.
	Holds func(ctx context.Context, owner, lock string, l *lockclient.Lease) (held bool, saw string, err error)
	// SkipUnanswered leaves a write unjudged when Holds fails (a cluster without quorum
	// answers no linearizable read).
	SkipUnanswered bool
	// Fault injects one fault and undoes it: it waits with sleep, which cuts the wait
	// short at the end of the schedule and returns how long it waited, and returns what
	// it did, for the trace, and an error when the fault itself failed (a member that
	// does not restart).
	Fault func(rng *rand.Rand, sleep func(time.Duration) time.Duration) (what string, err error)
	// FaultGap is the longest pause between two faults.
	FaultGap time.Duration
	// Heal ends every fault (resumes every stalled connection) at the end of the
	// schedule, before the clients close.
	Heal func()
}

// checker collects the violations of one schedule; mu also serializes the writes.
type checker struct {
	mu         sync.Mutex
	lastTok    map[string]uint64 // per lock, the token of the last checked write
	violations []string
	writes     int
}

func (c *checker) written() int {
	c.mu.Lock()
	defer c.mu.Unlock()
	return c.writes
}

func (c *checker) bad(format string, args ...any) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.badLocked(format, args...)
}

func (c *checker) badLocked(format string, args ...any) {
	if len(c.violations) < 20 {
		c.violations = append(c.violations, fmt.Sprintf(format, args...))
	}
}

// Run runs schedule s for k.Duration and fails t on every violation of the checker
// (Schedule), with the seed and the trace of the faults.
func Run(t *testing.T, k Knobs, s Schedule) {
	t.Helper()
	start := time.Now()
	stop := start.Add(k.Duration)
	chk := &checker{lastTok: map[string]uint64{}}
	var wg sync.WaitGroup
	for i, c := range s.Clients {
		for j, lock := range s.Locks {
			wg.Add(1)
			go func(seed uint64) {
				defer wg.Done()
				rng := rand.New(rand.NewPCG(uint64(k.Seed), seed))
				writes, failed := s.work(rng, chk, c, lock, stop)
				t.Logf("%s/%s: %d checked writes, %d failed acquires", c.Owner(), lock, writes, failed)
			}(uint64(1 + i*len(s.Locks) + j))
		}
	}
	var trace []string
	wg.Add(1)
	go func() {
		defer wg.Done()
		rng := rand.New(rand.NewPCG(uint64(k.Seed), 0))
		sleep := func(d time.Duration) time.Duration {
			d = max(min(d, time.Until(stop)), 0)
			time.Sleep(d)
			return d
		}
		// The first fault waits for the first checked write: a schedule that began
		// with a fault (a cluster without quorum) could end before any write.
		for chk.written() == 0 && time.Now().Before(stop) {
			time.Sleep(10 * time.Millisecond)
		}
		for time.Now().Before(stop) {
			at := time.Since(start)
			what, err := s.Fault(rng, sleep)
			trace = append(trace, fmt.Sprintf("%7.3fs %s", at.Seconds(), what))
			if err != nil {
				chk.bad("fault %q: %v", what, err)
			}
			sleep(time.Duration(rng.Int64N(int64(s.FaultGap))))
		}
	}()
	wg.Wait()
	s.Heal()
	for _, c := range s.Clients {
		ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
		if err := c.Close(ctx); err != nil {
			t.Logf("close %s: %v", c.Owner(), err)
		}
		cancel()
	}
	t.Logf("%d checked writes, %d faults in %v", chk.writes, len(trace), time.Since(start).Round(time.Millisecond))
	if chk.writes == 0 {
		chk.badLocked("no write was checked: the schedule tested nothing")
	}
	if len(chk.violations) > 0 {
		t.Errorf("fault schedule, seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_DURATION=%v):\n  %s\nfaults:\n  %s",
			k.Seed, k.Seed, k.Duration, strings.Join(chk.violations, "\n  "), strings.Join(trace, "\n  "))
	}
}

// work is one client's worker on one lock until stop: acquire, write, release.
func (s Schedule) work(rng *rand.Rand, chk *checker, c *lockclient.Client, lock string, stop time.Time) (writes, failed int) {
	owner := c.Owner()
	for time.Now().Before(stop) {
		dl := s.AcquireDeadline[0] + time.Duration(rng.Int64N(int64(s.AcquireDeadline[1]-s.AcquireDeadline[0])))
		ctx, cancel := context.WithTimeout(context.Background(), dl)
		began := time.Now()
		lease, err := c.Acquire(ctx, lock)
		took := time.Since(began)
		cancel()
		if took > dl+s.Slack {
			chk.bad("%s/%s: Acquire with a %v deadline took %v (err %v)", owner, lock, dl, took, err)
		}
		if err != nil {
			failed++
			if !errors.Is(err, lockclient.ErrUnavailable) && !errors.Is(err, context.DeadlineExceeded) {
				chk.bad("%s/%s: Acquire error neither ErrUnavailable nor the deadline: %v", owner, lock, err)
			}
			continue
		}
		for n := 1 + rng.IntN(6); n > 0 && lease.Err() == nil && time.Now().Before(stop); n-- {
			if s.write(chk, owner, lock, lease) {
				writes++
			}
			time.Sleep(time.Duration(rng.Int64N(int64(s.WriteGap))))
		}
		ctx, cancel = context.WithTimeout(context.Background(), s.ReleaseDeadline)
		began = time.Now()
		err = lease.Release(ctx)
		took = time.Since(began)
		cancel()
		if took > s.ReleaseDeadline+s.Slack {
			chk.bad("%s/%s: Release with a %v deadline took %v", owner, lock, s.ReleaseDeadline, took)
		}
		if err != nil && !errors.Is(err, lockclient.ErrLeaseLost) && !errors.Is(err, lockclient.ErrNotOwner) && !errors.Is(err, lockclient.ErrUnavailable) {
			chk.bad("%s/%s: Release error not typed: %v", owner, lock, err)
		}
		time.Sleep(time.Duration(rng.IntN(50)) * time.Millisecond)
	}
	return writes, failed
}

// write is one checked write of owner under lease: judged when the lease reports held
// both before and after the service's answer. It reports whether the write was judged
// and held.
func (s Schedule) write(chk *checker, owner, lock string, lease *lockclient.Lease) bool {
	chk.mu.Lock()
	defer chk.mu.Unlock()
	if lease.Err() != nil {
		return false
	}
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Second)
	held, saw, err := s.Holds(ctx, owner, lock, lease)
	cancel()
	if lease.Err() != nil { // lost meanwhile: the client no longer claims it
		return false
	}
	switch {
	case err != nil:
		if !s.SkipUnanswered {
			chk.badLocked("%s/%s: lease token %d reported held, the service did not answer a direct read: %v", owner, lock, lease.Token(), err)
		}
		return false
	case !held:
		chk.badLocked("%s/%s: lease token %d reported held, the service holds %s", owner, lock, lease.Token(), saw)
		return false
	case lease.Token() < chk.lastTok[lock]:
		chk.badLocked("%s/%s: write token %d after token %d", owner, lock, lease.Token(), chk.lastTok[lock])
		return false
	}
	chk.lastTok[lock] = lease.Token()
	chk.writes++
	return true
}

// Connections injects faults into the owners' connections to a service through their
// proxies in G (one per owner, see netproxy.Group): its Fault and Heal are a Schedule's.
type Connections struct {
	G      *netproxy.Group
	Owners []string
	// Stall is the range [min, max) of a stall's length: choose it around the lease
	// TTL, so that some stalls outlast the leases and some do not.
	Stall [2]time.Duration
}

// Fault stalls one owner's connections for a random time (two faults in three: its
// requests wait in the proxy and are delivered late, as after a stopped process or a
// healed partition) or resets them (the client sees its connections cut mid-request).
func (c Connections) Fault(rng *rand.Rand, sleep func(time.Duration) time.Duration) (string, error) {
	o := c.Owners[rng.IntN(len(c.Owners))]
	if rng.IntN(3) == 2 {
		c.G.Reset(o)
		return "reset " + o, nil
	}
	d := c.Stall[0] + time.Duration(rng.Int64N(int64(c.Stall[1]-c.Stall[0])))
	c.G.Pause(o)
	d = sleep(d)
	c.G.Resume(o)
	return fmt.Sprintf("stall %s for %v", o, d.Round(time.Millisecond)), nil
}

// Heal resumes every owner's connections.
func (c Connections) Heal() {
	for _, o := range c.Owners {
		c.G.Resume(o)
	}
}
