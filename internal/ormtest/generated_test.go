package ormtest

// Randomized ORM call chains (red-team rt53c): gorm_generated_test.go and
// bun_generated_test.go compose an ORM's write API — target, scope, extra conditions,
// column selection, action, RETURNING, session (transaction, autocommit, prepared,
// pinned connection, nested transaction) — into one call, and runGeneratedChains puts
// every chain through one oracle on every database, and on PostgreSQL and MariaDB also
// under the drivers' text-substituting modes (driverModes, on the same database):
//
//	current token  the chain succeeds on a row of an older token, and leaves the row
//	               with the current token, balance 777 and an advanced version (an
//	               update), soft-deleted with the current token, or gone (a hard delete)
//	stale token    the same chain on a row of a newer token fails with ErrFenced and
//	               leaves the row unchanged
//
// Knobs (environment; the schedule tests' own, internal/fencetest/scheduleknobs.go; the
// defaults fit CI, about 0.5 s of chains per database, mode and test):
//
//	FENCEDSQL_SCHEDULES_SEED=n   replay: chain i of each database and mode uses seed
//	                             n+i (the default is time-based; the seed is logged,
//	                             and a failing chain prints the command that replays
//	                             it alone, with ITERS=1)
//	FENCEDSQL_SCHEDULES_ITERS=n  chains per database and mode (default 40, cut off
//	                             after chainBudget; with ITERS set, no time limit)
//
// A long run: FENCEDSQL_SCHEDULES_ITERS=1000 go test -timeout 0 -count=1 -run
// 'Test(GORM|Bun)GeneratedChains' ./internal/ormtest/

import (
	"context"
	"database/sql"
	"hash/fnv"
	"math/rand/v2"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// chainBudget bounds the default run's time per database and mode (CI); with ITERS set
// there is none.
const chainBudget = 500 * time.Millisecond

// chainWant is what a chain run with the current token must leave of the row.
type chainWant int

const (
	chainUpdated     chainWant = iota // balance 777
	chainSoftDeleted                  // deleted_at set
	chainHardDeleted                  // no row
)

// wantOf: a hard delete, a soft delete or an update.
func wantOf(hard, soft bool) chainWant {
	switch {
	case hard:
		return chainHardDeleted
	case soft:
		return chainSoftDeleted
	}
	return chainUpdated
}

// chainDims are a generator's dimensions, each the names of its choices.
type chainDims [][]string

// draw picks a choice of every dimension, then a model shape.
func (d chainDims) draw(r *rand.Rand, shapes []modelShape) ([]int, modelShape) {
	picks := make([]int, len(d))
	for i, names := range d {
		picks[i] = r.IntN(len(names))
	}
	return picks, shapes[r.IntN(len(shapes))]
}

// desc names a chain: its shape and its choices.
func (d chainDims) desc(shape modelShape, picks ...int) string {
	parts := []string{shape.name}
	for i, p := range picks {
		parts = append(parts, d[i][p])
	}
	return strings.Join(parts, "|")
}

// genChain is one generated ORM call: run writes row id (its conditions may also name
// ids id+1 and id+9, which newID leaves unused).
type genChain struct {
	desc string
	want chainWant
	run  func(ctx context.Context, id int64) error
}

// driverModes are the text-substituting modes of b's driver that applications turn on
// for speed (pgx's simple protocol, go-sql-driver's interpolateParams): mode name →
// DSN parameter.
func driverModes(b backend) map[string]string {
	switch b.name {
	case "postgres":
		return map[string]string{"simple": "default_query_exec_mode=simple_protocol"}
	case "mysql":
		return map[string]string{"interpolate": "interpolateParams=true"}
	}
	return nil
}

// inMode is e's database through a fenced pool of its own in driver mode mode (the
// DSN parameter param).
func (e *env) inMode(t *testing.T, mode, param string) *env {
	t.Helper()
	db, err := sql.Open(e.b.fenced, withParam(withParam(e.dsn, "fenced_tables=accounts"), param))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	b := e.b
	b.mode = mode
	return &env{b: b, db: db, raw: e.raw, dsn: e.dsn}
}

// runGeneratedChains runs generated chains on every database, also in its driver's
// modes (the file's leading comment). newGen opens the ORM on e and returns the
// generator; a chain is a function of its *rand.Rand alone, so a seed replays it.
func runGeneratedChains(t *testing.T, newGen func(t *testing.T, e *env) func(r *rand.Rand) genChain) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 40)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d), %d chains per database and mode", k.Seed, k.Seed, k.Iters)
	for _, b := range backends {
		t.Run(b.name, func(t *testing.T) {
			base := setup(t, b)
			envs := []*env{base}
			for mode, param := range driverModes(b) {
				envs = append(envs, base.inMode(t, mode, param))
			}
			for _, e := range envs {
				mode := e.b.mode
				if mode == "" {
					mode = "default"
				}
				t.Run(mode, func(t *testing.T) { runChains(t, k, e, newGen(t, e)) })
			}
		})
	}
}

// runChains runs the chains of gen on e: k.Iters of them, at most chainBudget's worth
// unless ITERS is set.
func runChains(t *testing.T, k fencetest.ScheduleKnobs, e *env, gen func(r *rand.Rand) genChain) {
	h := fnv.New64a()
	h.Write([]byte(t.Name()))
	salt := h.Sum64()
	dbTest := t.Name()
	start := time.Now()
	n := 0
	for ; n < k.Iters && (k.ItersSet || time.Since(start) < chainBudget); n++ {
		seed := k.Seed + int64(n)
		c := gen(rand.New(rand.NewPCG(uint64(seed), salt)))
		t.Run(strconv.Itoa(n)+":"+c.desc, func(t *testing.T) {
			defer func() { // also after a t.Fatal
				if t.Failed() {
					t.Logf("replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=1 go test -count=1 -run '%s' ./internal/ormtest/",
						seed, runPattern(dbTest))
				}
			}()
			checkChain(t, e, c)
		})
	}
	t.Logf("%d chains in %v", n, time.Since(start).Round(time.Millisecond))
}

// runPattern is a -run pattern that matches the test named name and no sibling.
func runPattern(name string) string {
	parts := strings.Split(name, "/")
	for i, p := range parts {
		parts[i] = "^" + regexp.QuoteMeta(p) + "$"
	}
	return strings.Join(parts, "/")
}

// checkChain is the oracle: the current token's call lands, a stale token's is fenced.
func checkChain(t *testing.T, e *env, c genChain) {
	e.enter(t)
	ctx := testCtx(t)
	id := newID()
	before := e.seed(t, id, tokOld)
	if err := c.run(fencedsql.WithToken(ctx, tokMine), id); err != nil {
		t.Fatalf("current token %d on a row of token %d: %v", tokMine, tokOld, err)
	}
	after := e.row(t, id)
	switch c.want {
	case chainHardDeleted:
		if after.Exists {
			t.Errorf("hard delete with token %d left %v", tokMine, after)
		}
	case chainSoftDeleted:
		if after.Token != int64(tokMine) || !after.Deleted {
			t.Errorf("soft delete with token %d: %v (before %v), want deleted with fence_token %d", tokMine, after, before, tokMine)
		}
	default:
		if after.Token != int64(tokMine) || after.Balance.Int64 != 777 || after.Version <= before.Version {
			t.Errorf("update with token %d: %v (before %v), want fence_token %d, balance 777, version > %d",
				tokMine, after, before, tokMine, before.Version)
		}
	}
	id = newID()
	before = e.seed(t, id, tokNewer)
	wantErr(t, c.run(fencedsql.WithToken(ctx, tokMine), id), fencedsql.ErrFenced)
	wantUnchanged(t, e, id, before)
}
