// Tests that misuse of the Mock fails the test, through a fake testing.TB.

package fencedtest_test

import (
	"fmt"
	"runtime"
	"strings"
	"sync"
	"testing"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

// fakeTB records Fatalf and stops the goroutine, as testing.T does.
type fakeTB struct {
	mu       sync.Mutex
	fatal    string
	cleanups []func()
}

func (f *fakeTB) Helper() {}
func (f *fakeTB) Fatalf(format string, args ...any) {
	f.mu.Lock()
	f.fatal = fmt.Sprintf(format, args...)
	f.mu.Unlock()
	runtime.Goexit()
}
func (f *fakeTB) Cleanup(fn func()) { f.cleanups = append(f.cleanups, fn) }
func (f *fakeTB) cleanup() {
	for i := len(f.cleanups) - 1; i >= 0; i-- {
		f.cleanups[i]()
	}
}

// fatalOf runs fn on its own goroutine with a fakeTB and returns what it failed with.
func fatalOf(fn func(tb *fakeTB)) string {
	tb := &fakeTB{}
	defer tb.cleanup()
	done := make(chan struct{})
	go func() {
		defer close(done)
		fn(tb)
	}()
	<-done
	return tb.fatal
}

// Misuse fails the test with a message saying what is wrong.
func TestMisuseFails(t *testing.T) {
	cases := map[string]struct {
		fn   func(tb *fakeTB)
		want string
	}{
		"token 0": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, postgres.Dialect, fencedsql.Guard("accounts"))
			m.ExpectFencedExec(`UPDATE accounts SET x = $1`, 0, 1)
		}, "refuses"},
		"unsupported statement": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, postgres.Dialect, fencedsql.Guard("accounts"))
			m.ExpectFencedExec(`UPDATE accounts SET (x, fence_token) = ($1, 0)`, 7, 1)
		}, "refuses"},
		"wrong argument count": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, sqlite.Dialect, fencedsql.Guard("accounts"))
			m.ExpectFencedExec(`UPDATE accounts SET x = ? WHERE id = ?`, 7, 1)
		}, "refuses"},
		"rejection of an unguarded statement": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, mysqldialect.Dialect, fencedsql.Guard("accounts"))
			m.ExpectFencedRejection(`UPDATE other SET x = ?`, 7, 1)
		}, "not a fenced write"},
		"bad guard": {func(tb *fakeTB) {
			fencedtest.New(tb, postgres.Dialect, fencedsql.Guard("x y"))
		}, "not a valid identifier"},
		"unknown dialect": {func(tb *fakeTB) {
			_, m := fencedtest.New(tb, otherDialect{postgres.Dialect}, fencedsql.Guard("accounts"))
			m.ExpectFencedRejection(`UPDATE accounts SET x = $1`, 7, 1)
		}, `dialect "other"`},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			got := fatalOf(c.fn)
			if !strings.Contains(got, c.want) {
				t.Errorf("Fatalf(%q), want a message containing %q", got, c.want)
			}
		})
	}
}

type otherDialect struct{ dialect.Dialect }

// OmittedCapabilities implements dialect.Reduced: every capability of the embedded
// dialect it does not forward is left out on purpose.
func (r otherDialect) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(otherDialect{}, r.Dialect)
}

func (otherDialect) Name() string { return "other" }
