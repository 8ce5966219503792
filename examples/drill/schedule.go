package main

import (
	"math/rand/v2"
	"time"
)

// faultKind is what happens to a holder between its read and its write.
type faultKind uint8

const (
	faultNone      faultKind = iota
	faultPause               // the process stalls: its lock requests are held, it sleeps
	faultPartition           // it is cut off from the lock service while its work drags on
)

// step is one round's schedule.
type step struct {
	work  time.Duration
	fault faultKind
	hold  time.Duration // how long the fault lasts
}

// nextStep draws one round's schedule. It always draws the same number of values, so
// a worker's schedule depends only on the seed and the worker's number.
func (c *config) nextStep(rng *rand.Rand) step {
	s := step{work: time.Duration(float64(c.Work) * (0.5 + rng.Float64()))}
	roll := rng.Float64()
	hold := time.Duration(float64(c.TTL)*(1.5+1.5*rng.Float64())) + c.serviceLag()
	switch {
	case roll < c.PauseProb:
		s.fault, s.hold = faultPause, hold
	case roll < c.PauseProb+c.PartitionProb:
		s.fault, s.hold = faultPartition, hold
	}
	return s
}
