// Generated schedules of several leases per transaction (WithLeases, nested WithLease,
// statement leases joining a transaction) against silent expiry, releases and a second
// lock service: no stale write lands, and what the wrapper reports is what the database
// holds (from a red-team pass, kept as a permanent check).

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// scheduleLease is a lease a generated client keeps, with the key and row it guards.
type scheduleLease struct {
	l   *lockclient.Lease
	key int // row id
	svc int // index of its lock service
}

// TestMultiLeaseSchedules runs random sequential schedules of three clients of
// one memlock service (and one client of a second service) that take locks on rows
// 1..4, let the service's clock run (silent expiry: the clients do not notice), release,
// and write the rows of random subsets of the leases they keep (also stale ones) in
// one transaction — WithLeases at BeginTx, nested WithLease, statement leases joining
// an unbound or bound transaction, or one statement outside a transaction per row. The
// checker: per row, the grants whose writes committed come in grant order (no write of
// an earlier holder of the row's lock lands after a later holder's); a write the
// wrapper reported committed is in the row, a refused one is not; a row's token is the
// largest token of its binding; leases of two services are never bound together.
//
// 60 seeds by default (10 with -short); FENCEDSQL_SCHEDULES_SEEDS sets another number
// for longer runs.
func TestMultiLeaseSchedules(t *testing.T) {
	seeds := 60
	if testing.Short() {
		seeds = 10
	}
	if v := os.Getenv("FENCEDSQL_SCHEDULES_SEEDS"); v != "" {
		n, err := strconv.Atoi(v)
		if err != nil || n < 1 {
			t.Fatalf("FENCEDSQL_SCHEDULES_SEEDS=%q: want a positive number", v)
		}
		seeds = n
	}
	for seed := range seeds {
		t.Run(fmt.Sprint(seed), func(t *testing.T) { runMultiLeaseSchedule(t, uint64(seed), 80) })
	}
}

func runMultiLeaseSchedule(t *testing.T, seed uint64, steps int) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	rng := rand.New(rand.NewPCG(seed, 51))
	path := filepath.Join(t.TempDir(), "t.db")
	raw := testdb.Open(t, "sqlite", "file:"+path,
		`CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 0), (2, 0), (3, 0), (4, 0)`)
	db := testdb.Open(t, sqlite.DriverName, "file:"+path+"?fenced_tables=accounts")

	svcs := []*memlock.Service{memlock.New(), memlock.New(memlock.WithMinToken(1000))}
	type client struct {
		c   *lockclient.Client
		svc int
	}
	var clients []client
	for i := range 4 {
		s := 0
		if i == 3 {
			s = 1
		}
		c := lockclient.New(svcs[s], lockclient.WithTTL(time.Minute))
		t.Cleanup(func() { _ = c.Close(context.Background()) })
		clients = append(clients, client{c, s})
	}
	held := make([][]*scheduleLease, len(clients))
	// Per row: the last committed write's value, its lock grant (token of the row's
	// own lease) and the row token it must carry.
	type rowState struct{ val, grant, tok int64 }
	rows := map[int]rowState{}
	var log []string
	logf := func(f string, a ...any) { log = append(log, fmt.Sprintf(f, a...)) }
	fail := func(f string, a ...any) {
		t.Helper()
		for _, s := range log {
			t.Log(s)
		}
		t.Fatalf(f, a...)
	}
	wid := int64(0)
	outcome := map[string]int{}
	defer func() { t.Logf("outcomes: %v", outcome) }()
	for step := range steps {
		ci := rng.IntN(len(clients))
		cl := clients[ci]
		switch op := rng.IntN(10); {
		case op < 3: // acquire
			key := 1 + rng.IntN(3)
			if cl.svc == 1 {
				key = 4
			}
			l, err := cl.c.TryAcquire(ctx, fmt.Sprintf("row:%d", key))
			if err != nil {
				logf("%d: c%d acquire %d: %v", step, ci, key, err)
				continue
			}
			held[ci] = append(held[ci], &scheduleLease{l: l, key: key, svc: cl.svc})
			logf("%d: c%d acquire row %d token %d", step, ci, key, l.Token())
		case op < 5: // the service's clock runs: leases expire silently
			d := time.Duration(20+rng.IntN(30)) * time.Second
			svcs[min(rng.IntN(4), 1)].Advance(d)
			logf("%d: advance %v", step, d)
		case op < 6: // release
			if len(held[ci]) == 0 {
				continue
			}
			i := rng.IntN(len(held[ci]))
			h := held[ci][i]
			err := h.l.Release(ctx)
			held[ci] = append(held[ci][:i:i], held[ci][i+1:]...)
			logf("%d: c%d release token %d: %v", step, ci, h.l.Token(), err)
		default: // write the rows of a subset of the leases kept (and one of another client's service)
			var set []*scheduleLease
			for _, h := range held[ci] {
				if rng.IntN(2) == 0 {
					set = append(set, h)
				}
			}
			if rng.IntN(6) == 0 && len(held[3]) > 0 && ci != 3 {
				set = append(set, held[3][rng.IntN(len(held[3]))])
			}
			// One lease per row: the row's lock.
			byRow := map[int]*scheduleLease{}
			var uniq []*scheduleLease
			for _, h := range set {
				if byRow[h.key] == nil {
					byRow[h.key] = h
					uniq = append(uniq, h)
				}
			}
			set = uniq
			if len(set) == 0 {
				continue
			}
			mixed := false
			var top uint64
			for _, h := range set {
				mixed = mixed || h.svc != set[0].svc
				top = max(top, h.l.Token())
			}
			mode := rng.IntN(5)
			vals := map[int]int64{}
			for _, h := range set {
				wid++
				vals[h.key] = wid
			}
			toks := map[int]int64{}
			err := writeUnderLeases(ctx, db, set, vals, toks, mode, rng)
			desc := ""
			for _, h := range set {
				desc += fmt.Sprintf(" row%d/tok%d(svc%d)", h.key, h.l.Token(), h.svc)
			}
			logf("%d: c%d write mode %d%s: %v", step, ci, mode, desc, err)
			switch {
			case err == nil:
				outcome["ok"]++
			case errors.Is(err, fencedsql.ErrLeaseServicesDiffer):
				outcome["services"]++
			case errors.Is(err, lockclient.ErrLeaseLost):
				outcome["lost"]++
			case errors.Is(err, fencedsql.ErrFenced):
				outcome["fenced"]++
			}
			if err == nil && mode == 4 {
				fail("a transaction one of whose leases was released before Commit committed: %s", desc)
			}
			if err == nil {
				if mixed {
					fail("leases of two services bound together committed: %s", desc)
				}
				written := set
				if mode == 3 {
					written = set[:1]
				}
				for _, h := range written {
					g := int64(h.l.Token())
					if prev, ok := rows[h.key]; ok && prev.grant > g {
						fail("row %d: a write under grant %d committed after one under grant %d", h.key, g, prev.grant)
					}
					rows[h.key] = rowState{val: vals[h.key], grant: g, tok: toks[h.key]}
				}
			} else if mixed && !errors.Is(err, fencedsql.ErrLeaseServicesDiffer) && !errors.Is(err, lockclient.ErrLeaseLost) && !errors.Is(err, fencedsql.ErrFenced) {
				fail("mixed services refused with %v", err)
			} else if !mixed && !errors.Is(err, lockclient.ErrLeaseLost) && !errors.Is(err, fencedsql.ErrFenced) {
				fail("refused with an unexpected error: %v", err)
			}
		}
		// The database agrees with what the wrapper reported.
		for id, st := range rows {
			var bal, tok int64
			if err := raw.QueryRowContext(ctx, `SELECT balance, fence_token FROM accounts WHERE id = ?`, id).Scan(&bal, &tok); err != nil {
				t.Fatal(err)
			}
			if bal != st.val || tok != st.tok {
				fail("row %d: balance %d token %d, want the last committed write %d token %d", id, bal, tok, st.val, st.tok)
			}
		}
	}
}

// writeUnderLeases writes vals[h.key] into each lease's row under the binding mode says.
// toks receives the token each row must carry: the binding's largest, or, for
// statement leases joining a transaction, the largest joined so far.
func writeUnderLeases(ctx context.Context, db *sql.DB, set []*scheduleLease, vals, toks map[int]int64, mode int, rng *rand.Rand) error {
	var top uint64
	for _, h := range set {
		top = max(top, h.l.Token())
	}
	const q = `UPDATE accounts SET balance = ? WHERE id = ?`
	leases := make([]fencedsql.Lease, len(set))
	for i, h := range set {
		leases[i] = h.l
	}
	order := rng.Perm(len(set))
	switch mode {
	case 0, 1: // WithLeases / nested WithLease at BeginTx
		bctx := fencedsql.WithLeases(ctx, leases...)
		if mode == 1 {
			bctx = ctx
			for _, l := range leases {
				bctx = fencedsql.WithLease(bctx, l)
			}
		}
		tx, err := db.BeginTx(bctx, nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck
		for _, i := range order {
			toks[set[i].key] = int64(top)
			if _, err := tx.ExecContext(ctx, q, vals[set[i].key], set[i].key); err != nil {
				return err
			}
		}
		return tx.Commit()
	case 2: // bound to the first lease, the others join with their statements
		tx, err := db.BeginTx(fencedsql.WithLease(ctx, leases[order[0]]), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck
		var cur uint64
		for _, i := range order {
			cur = max(cur, set[i].l.Token())
			toks[set[i].key] = int64(cur)
			if _, err := tx.ExecContext(fencedsql.WithLease(ctx, leases[i]), q, vals[set[i].key], set[i].key); err != nil {
				return err
			}
		}
		return tx.Commit()
	case 4: // WithLeases at BeginTx, one lease released before Commit: nothing commits
		tx, err := db.BeginTx(fencedsql.WithLeases(ctx, leases...), nil)
		if err != nil {
			return err
		}
		defer tx.Rollback() //nolint:errcheck
		for _, i := range order {
			if _, err := tx.ExecContext(ctx, q, vals[set[i].key], set[i].key); err != nil {
				return err
			}
		}
		_ = set[rng.IntN(len(set))].l.Release(ctx)
		return tx.Commit()
	default: // one statement per row outside a transaction, under all the leases
		// One row (set[0]'s), bound to every lease of the set.
		toks[set[0].key] = int64(top)
		_, err := db.ExecContext(fencedsql.WithLeases(ctx, leases...), q, vals[set[0].key], set[0].key)
		return err
	}
}
