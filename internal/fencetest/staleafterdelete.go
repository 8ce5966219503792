package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Pool is a fenced pool opened under a named session profile (session variables,
// a default isolation level).
type Pool struct {
	Name string
	DB   *sql.DB
}

// StaleWrite is one way a stale holder writes a key inside its transaction: Write
// sends the statements and returns the first error.
type StaleWrite struct {
	Name  string
	Write func(ctx context.Context, tx *sql.Tx, key int64) error
}

// ExecWrite is a StaleWrite of one statement whose every parameter is the key.
func ExecWrite(query string, params int) StaleWrite {
	return StaleWrite{Name: query, Write: func(ctx context.Context, tx *sql.Tx, key int64) error {
		args := make([]any, params)
		for i := range args {
			args[i] = key
		}
		_, err := tx.ExecContext(ctx, query, args...)
		return err
	}}
}

// ThenInsert is a StaleWrite of first (one parameter, the key; a read when read is
// set, whose no-row answer is no error) followed, if it succeeded, by insert (one
// parameter, the key): a claim then an INSERT, or a DELETE then an INSERT.
func ThenInsert(name, first string, read bool, insert string) StaleWrite {
	return StaleWrite{Name: name, Write: func(ctx context.Context, tx *sql.Tx, key int64) error {
		var err error
		if read {
			var id int64
			if err = tx.QueryRowContext(ctx, first, key).Scan(&id); errors.Is(err, sql.ErrNoRows) {
				err = nil
			}
		} else {
			_, err = tx.ExecContext(ctx, first, key)
		}
		if err != nil {
			return err
		}
		_, err = tx.ExecContext(ctx, insert, key)
		return err
	}}
}

// StaleAfterDelete is a generator of the schedule "a stale holder's snapshot
// outlives the current holder's DELETE": the stale holder (token Stale) begins a
// transaction on a drawn pool at a drawn level, optionally reads the key (taking its
// snapshot); the current holder (token Current, another drawn pool, autocommit or
// its own transaction) deletes the key and commits; then the stale transaction
// writes the key by a drawn StaleWrite and commits. Oracle: the key stays absent,
// and every error of the stale write is one Allowed accepts.
type StaleAfterDelete struct {
	Pools          []Pool
	Levels         []sql.IsolationLevel
	Writes         []StaleWrite
	Stale, Current uint64
	// Seed inserts the key carrying a token below Stale.
	Seed func(key int64) error
	// Read counts the key's rows (one parameter, the key); Delete deletes it.
	Read, Delete string
	// Present answers the key's rows and their highest token, read outside the
	// library.
	Present func(key int64) (n int, token sql.NullInt64)
	// DeleteMeets accepts an error the current holder's DELETE may meet in a
	// schedule (a lock wait ended by the stale reader's shared lock); the case is
	// then dropped. Nil: every error of the DELETE fails the test.
	DeleteMeets func(err error) bool
	// Clear removes the key outside the library after a dropped case.
	Clear func(key int64)
	// Allowed accepts an error of the stale write (typed refusals, lock waits).
	Allowed func(err error) bool
	// Class names an error for the statistics (default: its type).
	Class  func(err error) string
	Knobs  ScheduleKnobs
	Budget time.Duration // the default run's time bound; none when Knobs.ItersSet
}

// Run runs the generator; keys are 900000 and up.
func (g StaleAfterDelete) Run(t *testing.T) {
	t.Helper()
	class := g.Class
	if class == nil {
		class = func(err error) string { return fmt.Sprintf("%T", err) }
	}
	r := rand.New(rand.NewSource(g.Knobs.Seed))
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<cases run>)", g.Knobs.Seed, g.Knobs.Seed)
	ctx := context.Background()
	start := time.Now()
	stats := map[string]int{}
	ran := 0
	for it := 0; it < g.Knobs.Iters && (g.Knobs.ItersSet || time.Since(start) < g.Budget); it++ {
		ran++
		key := int64(900000 + it)
		if err := g.Seed(key); err != nil {
			t.Fatal(err)
		}
		ps, pc := g.Pools[r.Intn(len(g.Pools))], g.Pools[r.Intn(len(g.Pools))]
		level := g.Levels[r.Intn(len(g.Levels))]
		w := g.Writes[r.Intn(len(g.Writes))]
		readFirst := r.Intn(3) != 0
		curTx := r.Intn(2) == 0
		desc := fmt.Sprintf("it %d: stale[%s iso=%v readFirst=%v] cur[%s tx=%v] write %q", it, ps.Name, level, readFirst, pc.Name, curTx, w.Name)
		old := fencedsql.WithToken(ctx, g.Stale)
		stx, err := ps.DB.BeginTx(old, &sql.TxOptions{Isolation: level})
		if err != nil {
			t.Fatalf("%s: %v", desc, err)
		}
		if readFirst {
			var n int
			if err := stx.QueryRowContext(old, g.Read, key).Scan(&n); err != nil {
				t.Errorf("%s: read: %v", desc, err)
			}
		}
		if derr := g.deleteAs(fencedsql.WithToken(ctx, g.Current), pc.DB, curTx, key); derr != nil {
			stx.Rollback() //nolint:errcheck
			if g.DeleteMeets == nil || !g.DeleteMeets(derr) {
				t.Errorf("%s: current delete: %T %v", desc, derr, derr)
			}
			if g.Clear != nil {
				g.Clear(key)
			}
			stats["delete-blocked"]++
			continue
		}
		werr := w.Write(old, stx, key)
		cerr := stx.Commit()
		switch {
		case werr == nil && cerr == nil:
			stats["stale-committed-noop"]++
		case errors.Is(werr, fencedsql.ErrFenced):
			stats["ErrFenced"]++
		case werr != nil:
			stats[class(werr)]++
			if errors.Is(werr, fencedsql.ErrUnsupported) && stats["unsupported:"+w.Name] == 0 {
				stats["unsupported:"+w.Name]++
				t.Logf("unsupported %q: %v", w.Name, werr)
			}
		default:
			stats["commit-err"]++
		}
		if werr != nil && !g.Allowed(werr) {
			t.Errorf("%s: stale write: untyped %T %v", desc, werr, werr)
		}
		if n, tok := g.Present(key); n != 0 {
			t.Errorf("%s: key deleted under %d is back (token %v); stale write err %v, commit err %v", desc, g.Current, tok, werr, cerr)
		}
	}
	t.Logf("%d cases in %v; stats: %v", ran, time.Since(start).Round(time.Millisecond), stats)
}

// deleteAs deletes key under ctx's token on db, in autocommit or in a transaction of
// its own.
func (g StaleAfterDelete) deleteAs(ctx context.Context, db *sql.DB, inTx bool, key int64) error {
	if !inTx {
		_, err := db.ExecContext(ctx, g.Delete, key)
		return err
	}
	tx, err := db.BeginTx(ctx, nil)
	if err != nil {
		return err
	}
	if _, err := tx.ExecContext(ctx, g.Delete, key); err != nil {
		tx.Rollback() //nolint:errcheck
		return err
	}
	return tx.Commit()
}
