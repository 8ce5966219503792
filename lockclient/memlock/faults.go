// Deterministic fault injection per owner: Pause/Resume and Partition/Heal.

package memlock

import (
	"context"
	"fmt"

	"github.com/fencedsql/fencedsql/lockclient"
)

type fault struct {
	paused      chan struct{} // non-nil while paused; closed by Resume
	partitioned chan struct{} // non-nil while partitioned; closed by Heal
}

// gate applies the owner's injected faults to one request.
func (s *Service) gate(ctx context.Context, owner string) error {
	for {
		s.mu.Lock()
		f := s.faults[owner]
		var paused, cut chan struct{}
		if f != nil {
			paused, cut = f.paused, f.partitioned
		}
		s.mu.Unlock()
		switch {
		case cut != nil:
			// Black hole: the request never arrives.
			<-ctx.Done()
			return fmt.Errorf("memlock: %w: partitioned: %w", lockclient.ErrUnavailable, ctx.Err())
		case paused != nil:
			select {
			case <-paused:
				continue // delivered late, after Resume
			case <-ctx.Done():
				return fmt.Errorf("memlock: %w: %w", lockclient.ErrUnavailable, ctx.Err())
			}
		}
		if err := ctx.Err(); err != nil {
			return fmt.Errorf("memlock: %w: %w", lockclient.ErrUnavailable, err)
		}
		return nil
	}
}

func (s *Service) faultFor(owner string) *fault {
	f := s.faults[owner]
	if f == nil {
		f = &fault{}
		s.faults[owner] = f
	}
	return f
}

// Pause holds every request from owner's clients (renewals included) until Resume, as
// if the process were stopped: the service keeps judging expiry, and requests delivered
// after Resume are answered by the state at that time.
func (s *Service) Pause(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.faultFor(owner); f.paused == nil {
		f.paused = make(chan struct{})
	}
}

// Resume delivers owner's held requests and lets new ones through.
func (s *Service) Resume(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.faults[owner]; f != nil && f.paused != nil {
		close(f.paused)
		f.paused = nil
	}
}

// Partition cuts owner off from the service: its requests are lost, and calls end with
// an error wrapping lockclient.ErrUnavailable when their context ends.
func (s *Service) Partition(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.faultFor(owner); f.partitioned == nil {
		f.partitioned = make(chan struct{})
	}
}

// Heal ends owner's partition.
func (s *Service) Heal(owner string) {
	s.mu.Lock()
	defer s.mu.Unlock()
	if f := s.faults[owner]; f != nil && f.partitioned != nil {
		close(f.partitioned)
		f.partitioned = nil
	}
}
