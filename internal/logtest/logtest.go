// Package logtest records log/slog records in tests, to prove what a library logs and
// where.
package logtest

import (
	"context"
	"log/slog"
	"sync"
	"testing"
)

// Recorder is a slog.Handler that keeps every record's message, at every level.
type Recorder struct {
	mu       sync.Mutex
	messages []string
}

// New returns an empty Recorder.
func New() *Recorder { return &Recorder{} }

// Logger returns a logger that writes to r.
func (r *Recorder) Logger() *slog.Logger { return slog.New(r) }

// Messages returns the messages recorded so far.
func (r *Recorder) Messages() []string {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]string(nil), r.messages...)
}

func (r *Recorder) Enabled(context.Context, slog.Level) bool { return true }

func (r *Recorder) Handle(_ context.Context, rec slog.Record) error {
	r.mu.Lock()
	r.messages = append(r.messages, rec.Message)
	r.mu.Unlock()
	return nil
}

func (r *Recorder) WithAttrs([]slog.Attr) slog.Handler { return r }
func (r *Recorder) WithGroup(string) slog.Handler      { return r }

// CaptureDefault makes slog's default logger — and with it the output of package log's
// standard logger — write to a new Recorder until t ends, and returns the Recorder. The
// default logger is process-wide: do not call it from parallel tests.
func CaptureDefault(t testing.TB) *Recorder {
	r := New()
	prev := slog.Default()
	slog.SetDefault(r.Logger())
	t.Cleanup(func() { slog.SetDefault(prev) })
	return r
}
