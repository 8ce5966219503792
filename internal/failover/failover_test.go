package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// killDelay is how long after B's acknowledged COMMIT the primary is killed.
const killDelay = 2 * time.Millisecond

var pgDB = DB{
	Dialect: postgres.Dialect, PlainDriver: "pgx", FencedDriver: postgres.DriverName,
	CreateTable: `CREATE TABLE ` + Table + ` (id BIGINT PRIMARY KEY, holder TEXT NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
	Upsert:    `INSERT INTO ` + Table + ` (id, holder) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET holder = excluded.holder`,
	ReadToken: `SELECT fence_token FROM ` + Table + ` WHERE id = $1`,
}

var myDB = DB{
	Dialect: mysql.Dialect, PlainDriver: "mysql", FencedDriver: mysql.DriverName,
	CreateTable: `CREATE TABLE ` + Table + ` (id BIGINT PRIMARY KEY, holder VARCHAR(8) NOT NULL,
		fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
	Upsert:    `INSERT INTO ` + Table + ` (id, holder) VALUES (?, ?) ON DUPLICATE KEY UPDATE holder = VALUES(holder)`,
	ReadToken: `SELECT fence_token FROM ` + Table + ` WHERE id = ?`,
}

// needEnv returns the harness's environment, skipping the test when scripts/servers.sh
// did not export it (failing under FENCEDSQL_REQUIRE_SERVERS=1).
func needEnv(t *testing.T) Env {
	t.Helper()
	env, missing := EnvFromOS()
	if missing != "" {
		testdb.NeedServer(t, missing, "failover (PostgreSQL and MariaDB primary/replica pairs)")
	}
	return env
}

// rounds is FENCEDSQL_FAILOVER_ROUNDS, 10 by default (the CI form).
func rounds(t *testing.T) int {
	v := os.Getenv(EnvRounds)
	if v == "" {
		return 10
	}
	n, err := strconv.Atoi(v)
	if err != nil || n < 1 {
		t.Fatalf("%s=%q: want a positive number", EnvRounds, v)
	}
	return n
}

// floorHook is the production hook: the database's floor raised to the lock service's
// last token + 1, on the new primary.
func floorHook(d dialect.Dialect) Hook {
	return func(ctx context.Context, db *sql.DB, last uint64) error {
		return schema.RaiseTokenFloor(ctx, db, d, last+1)
	}
}

// detacher is a Pair whose replica can be cut off (the control round).
type detacher interface {
	Pair
	Detach(ctx context.Context) error
}

// tally sums the outcomes of a mode's measured rounds.
type tally struct{ rounds, lost, staleNoFloor, staleFloor int }

func (s tally) String() string {
	return fmt.Sprintf("%d rounds: B's acknowledged write lost %d; A's stale write accepted without the floor %d, with the floor hook %d",
		s.rounds, s.lost, s.staleNoFloor, s.staleFloor)
}

// replicationProblems returns the problems of reports that are about replication.
func replicationProblems(reports []schema.TableReport) []string {
	var out []string
	for _, r := range reports {
		for _, p := range r.Problems {
			l := strings.ToLower(p)
			if strings.Contains(l, "replica") || strings.Contains(l, "synchronous") || strings.Contains(l, "semi-sync") {
				out = append(out, p)
			}
		}
	}
	return out
}

// runMode runs the rounds of one database and mode on a fresh pair.
func runMode(t *testing.T, name string, mode Mode, d DB, n int, newPair func(context.Context, Mode) (detacher, error)) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Minute)
	defer cancel()
	pair, err := newPair(ctx, mode)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := pair.Close(); err != nil {
			t.Errorf("closing the pair: %v", err)
		}
	})
	reports, err := Install(ctx, pair.DSN(), d)
	if err != nil {
		t.Fatal(err)
	}
	// The documented set-up reports an asynchronous replica as a problem, and only then.
	repl := replicationProblems(reports)
	switch {
	case mode == Async && len(repl) == 0:
		t.Errorf("%s %s: schema.Check does not report the asynchronous replica: %+v", name, mode, reports)
	case mode == Sync && len(repl) > 0:
		t.Errorf("%s %s: schema.Check reports a problem with synchronous replication: %q", name, mode, repl)
	}
	h, err := NewHolders(ctx)
	if err != nil {
		t.Fatal(err)
	}
	hook := floorHook(d.Dialect)
	if _, ok := d.Dialect.(dialect.Floorer); !ok {
		t.Errorf("%s: the dialect enforces no token floor (dialect.Floorer): measuring without the hook", name)
		hook = nil
	}

	// The control (async only): the replica is cut off before B writes, so B's write is
	// surely lost. It shows that the round sees a lost write, that the row guard alone
	// then lets A's stale token win, and that the floor hook refuses it.
	if mode == Async {
		out, err := Round(ctx, pair, d, h, 0, RoundOptions{KillDelay: killDelay, Detach: pair.Detach, Hook: hook})
		if err != nil {
			t.Fatalf("control round: %v", err)
		}
		if !out.Lost || !out.StaleAcceptedNoFloor {
			t.Errorf("control round: B's write lost %v (want true), A's stale write accepted without the floor %v (want true)",
				out.Lost, out.StaleAcceptedNoFloor)
		}
		if hook != nil && (out.StaleAccepted || !errors.Is(out.StaleErr, fencedsql.ErrBelowFloor)) {
			t.Errorf("control round: A's stale write after the floor hook: accepted %v, error %v (want ErrBelowFloor)",
				out.StaleAccepted, out.StaleErr)
		}
		if err := pair.Rebuild(ctx); err != nil {
			t.Fatal(err)
		}
	}

	var s tally
	var failover time.Duration
	start := time.Now()
	for r := 1; r <= n; r++ {
		out, err := Round(ctx, pair, d, h, int64(r), RoundOptions{KillDelay: killDelay, Hook: hook})
		if err != nil {
			t.Fatalf("round %d: %v", r, err)
		}
		s.rounds++
		failover += out.Failover
		if out.Lost {
			s.lost++
		}
		if out.StaleAcceptedNoFloor {
			s.staleNoFloor++
		}
		if hook == nil {
			// nothing to assert after the hook
		} else if out.StaleAccepted {
			s.staleFloor++
			t.Errorf("round %d (t1 %d, t2 %d): A's stale write was accepted after the floor hook", r, out.T1, out.T2)
		} else if !errors.Is(out.StaleErr, fencedsql.ErrFenced) {
			t.Errorf("round %d: A's stale write after the floor hook failed with %v, want ErrFenced", r, out.StaleErr)
		}
		if mode == Sync && out.Lost {
			t.Errorf("round %d (t2 %d): B's acknowledged write was lost with synchronous replication", r, out.T2)
		}
		if mode == Sync && out.StaleAcceptedNoFloor {
			t.Errorf("round %d: with synchronous replication A's stale write was accepted even without the floor", r)
		}
		if r < n {
			if err := pair.Rebuild(ctx); err != nil {
				t.Fatalf("rebuilding after round %d: %v", r, err)
			}
		}
	}
	t.Logf("RESULT %s %s: %s (failover %v on average, %v for all rounds)", name, mode, s,
		(failover / time.Duration(n)).Round(time.Millisecond), time.Since(start).Round(time.Second))
}

func TestFailoverPostgres(t *testing.T) {
	env := needEnv(t)
	n := rounds(t)
	t.Parallel()
	for _, mode := range []Mode{Async, Sync} {
		t.Run(string(mode), func(t *testing.T) {
			runMode(t, "PostgreSQL", mode, pgDB, n, func(ctx context.Context, m Mode) (detacher, error) {
				return NewPostgres(ctx, env, m)
			})
		})
	}
}

func TestFailoverMariaDB(t *testing.T) {
	env := needEnv(t)
	n := rounds(t)
	t.Parallel()
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	defer cancel()
	tmpl, err := NewMariaDBTemplate(ctx, env)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tmpl.Close() })
	for _, mode := range []Mode{Async, Sync} {
		t.Run(string(mode), func(t *testing.T) {
			runMode(t, "MariaDB", mode, myDB, n, func(ctx context.Context, m Mode) (detacher, error) {
				return NewMariaDB(ctx, tmpl, m)
			})
		})
	}
}
