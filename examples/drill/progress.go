package main

import (
	"fmt"
	"io"
	"sync"
	"time"
)

// progress reports the run's progress on the log until the returned function is called.
func (r *runner) progress(start time.Time) (stop func()) {
	if !r.log.live && !r.log.verbose {
		return func() {}
	}
	every := time.Second
	if r.log.live {
		every = 200 * time.Millisecond
	}
	done := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		ticker := time.NewTicker(every)
		defer ticker.Stop()
		for {
			select {
			case <-done:
				r.log.clearLive()
				return
			case <-ticker.C:
				total := "?"
				if r.cfg.Rounds > 0 {
					total = fmt.Sprint(r.cfg.Rounds * r.cfg.Workers)
				}
				r.log.progressf("[%s] %v: %d/%s rounds, %d committed, %d faults, %d fenced",
					r.name, time.Since(start).Round(100*time.Millisecond), r.counts.rounds.Load(), total,
					r.counts.committed.Load(), r.counts.pauses.Load()+r.counts.partitions.Load(), r.counts.fenced.Load())
			}
		}
	})
	return func() { close(done); wg.Wait() }
}

// logger serialises progress and event output.
type logger struct {
	mu      sync.Mutex
	w       io.Writer
	verbose bool // events and progress lines
	live    bool // one self-updating progress line (terminal)
	shown   bool // a live line is on screen
}

// newLogger writes to cfg.Log, nowhere if it is nil.
func newLogger(cfg config) *logger {
	lg := &logger{w: cfg.Log, verbose: cfg.Verbose, live: cfg.Live}
	if cfg.Log == nil {
		lg.w = io.Discard
	}
	return lg
}

func (l *logger) eventf(format string, args ...any) {
	if !l.verbose {
		return
	}
	l.mu.Lock()
	defer l.mu.Unlock()
	fmt.Fprintf(l.w, format+"\n", args...)
}

func (l *logger) progressf(format string, args ...any) {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.live {
		fmt.Fprintf(l.w, "\r\033[K"+format, args...)
		l.shown = true
		return
	}
	fmt.Fprintf(l.w, format+"\n", args...)
}

func (l *logger) clearLive() {
	l.mu.Lock()
	defer l.mu.Unlock()
	if l.shown {
		fmt.Fprint(l.w, "\r\033[K")
		l.shown = false
	}
}
