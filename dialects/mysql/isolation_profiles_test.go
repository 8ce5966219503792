package mysql_test

// Session profiles (red-team rt58b, held): the isolation level and session settings of
// the transactions that delete, re-insert, upsert and claim, set by session variables
// on the DSN (tx_isolation, innodb_snapshot_isolation, innodb_lock_wait_timeout,
// unique_checks/foreign_key_checks/check_constraint_checks, tx_read_only) and by
// BeginTx with or without a level (the session's default applies), crossed with stale
// and current holders.
//
// TestSchedulesIsolationProfiles runs TestSchedulesRandom's rounds (schedGen,
// schedEnv.run, schedCheck: ledger order, deleted stays deleted) with each transaction
// on a drawn profile's pools, for at most isolationProfilesBudget by default (CI);
// errors typed or the server's deadlock, lock wait, snapshot-isolation (1020) and
// duplicate errors. The FENCEDSQL_SCHEDULES_* variables (schedules_random_test.go)
// replay a seed or run a long form:
//
//	FENCEDSQL_SCHEDULES_ITERS=1600 go test -timeout 0 -count=1 -run '^TestSchedulesIsolationProfiles$' ./dialects/mysql/

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// isolationProfilesBudget bounds each generator's default run (CI); with
// FENCEDSQL_SCHEDULES_ITERS set there is none.
const isolationProfilesBudget = 4 * time.Second

// sessionProfile is a fenced pool (on acc and pair) and a plain pool whose DSN sets
// session variables.
type sessionProfile struct {
	name   string
	params []string
	fenced *sql.DB
	plain  *sql.DB
}

// openSessionProfiles opens profs' pools on dsn with innodb_lock_wait_timeout=lockWait
// before their own variables (the plain ones only when plain), and logs each fenced
// pool's effective settings.
func openSessionProfiles(t *testing.T, dsn, lockWait string, plain bool, profs []*sessionProfile) {
	t.Helper()
	for _, p := range profs {
		d := fencetest.WithParam(dsn, "innodb_lock_wait_timeout="+lockWait)
		for _, kv := range p.params {
			d = fencetest.WithParam(d, kv)
		}
		p.fenced = schedOpen(t, "fenced-mysql", fencetest.WithParam(d, "fenced_tables=acc,pair"))
		p.fenced.SetMaxOpenConns(6)
		if plain {
			p.plain = schedOpen(t, "mysql", d)
			p.plain.SetMaxOpenConns(6)
		}
		var iso, snap, lwt, uc string
		if err := p.fenced.QueryRow("SELECT @@SESSION.tx_isolation, @@SESSION.innodb_snapshot_isolation, @@SESSION.innodb_lock_wait_timeout, CONCAT(@@SESSION.unique_checks, @@SESSION.foreign_key_checks, @@SESSION.check_constraint_checks)").Scan(&iso, &snap, &lwt, &uc); err != nil {
			t.Fatalf("%s: %v", p.name, err)
		}
		t.Logf("profile %s (fenced pool): %s snapshot=%s lock_wait=%s checks=%s", p.name, iso, snap, lwt, uc)
	}
}

func TestSchedulesIsolationProfiles(t *testing.T) {
	k := schedKnobsFromEnv(t, 200)
	dsn, admin, _ := absentMy(t)
	testdb.Exec(t, admin, "CREATE TABLE sched_ledger (k BIGINT PRIMARY KEY, maxtok BIGINT NOT NULL, viol INT NOT NULL, log TEXT NOT NULL, last_op VARCHAR(16), last_tok BIGINT) ENGINE=InnoDB")
	profs := []*sessionProfile{
		{name: "default"},
		{name: "snapRR", params: []string{"innodb_snapshot_isolation=ON"}},
		{name: "snapSER", params: []string{"innodb_snapshot_isolation=ON", "tx_isolation=%27SERIALIZABLE%27"}},
		{name: "RU", params: []string{"tx_isolation=%27READ-UNCOMMITTED%27"}},
		{name: "RC", params: []string{"tx_isolation=%27READ-COMMITTED%27"}},
		{name: "snapRU", params: []string{"innodb_snapshot_isolation=ON", "tx_isolation=%27READ-UNCOMMITTED%27"}},
		{name: "lwt0", params: []string{"innodb_lock_wait_timeout=0"}}, // after the default 1: it wins
		{name: "nochecks", params: []string{"unique_checks=0", "foreign_key_checks=0", "check_constraint_checks=0"}},
	}
	openSessionProfiles(t, dsn, "1", true, profs)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=<rounds run>)", k.seed, k.seed)
	n1020 := 0
	snapshotConflict := func(o string) bool {
		if strings.Contains(o, "raw 1020 ") {
			n1020++ // MariaDB's snapshot-isolation conflict: a serialization error
			return true
		}
		return false
	}
	start := time.Now()
	commits := schedRounds(t, k, admin, profs[0].fenced, false, schedPlainOps, isolationProfilesBudget, snapshotConflict, func(r *rand.Rand, txs []schedTx) []schedWorker {
		ws := make([]schedWorker, len(txs))
		for i := range txs {
			p := profs[r.Intn(len(profs))]
			ws[i] = schedWorker{env: &schedEnv{t: t, fenced: p.fenced, plain: p.plain}, label: "[" + p.name + "]"}
			if r.Intn(2) == 0 && txs[i].kind != "xa" {
				txs[i].iso = sql.LevelDefault
			}
		}
		return ws
	})
	t.Logf("%d commits, %d snapshot-isolation (1020) errors, in %v", commits, n1020, time.Since(start).Round(time.Millisecond))
}

// TestClaimInReadOnlyTx: a claim (SELECT … FOR UPDATE) of a present and of an
// absent key under token 50 in a READ ONLY transaction — sql.TxOptions{ReadOnly}, the
// session's tx_read_only on the DSN — either fails typed or records the claim: a later
// write under token 30 of the key must be refused. (MariaDB fails it with 1792:
// nothing is claimed, never a silent claim that records nothing.)
func TestClaimInReadOnlyTx(t *testing.T) {
	base, admin, _ := absentMy(t)
	for _, mode := range []string{"txopt", "dsn"} {
		d := fencetest.WithParam(base, "fenced_tables=acc,pair")
		ro := false
		if mode == "dsn" {
			d = fencetest.WithParam(d, "tx_read_only=1")
		} else {
			ro = true
		}
		db := schedOpen(t, "fenced-mysql", d)
		wdb := schedOpen(t, "fenced-mysql", fencetest.WithParam(base, "fenced_tables=acc,pair"))
		for i, present := range []bool{true, false} {
			key := int64(700000 + i)
			if mode == "dsn" {
				key += 10
			}
			if present {
				testdb.Exec(t, admin, fmt.Sprintf("INSERT INTO acc (id, balance, fence_token, version) VALUES (%d, 1, 10, 1)", key))
			}
			ctx := fencedsql.WithToken(context.Background(), 50)
			tx, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: ro})
			if err != nil {
				t.Fatalf("%s: begin: %v", mode, err)
			}
			rows, qerr := tx.QueryContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", key)
			n := 0
			if qerr == nil {
				for rows.Next() {
					n++
				}
				rows.Close()
				qerr = rows.Err()
			}
			cerr := tx.Commit()
			t.Logf("%s present=%v: claim rows=%d err=%v commit=%v", mode, present, n, qerr, cerr)
			if qerr != nil || cerr != nil {
				continue // refused: nothing claimed, nothing promised
			}
			old := fencedsql.WithToken(context.Background(), 30)
			var werr error
			if present {
				_, werr = wdb.ExecContext(old, "UPDATE acc SET balance = 9 WHERE id = ?", key)
			} else {
				_, werr = wdb.ExecContext(old, "INSERT INTO acc (id, balance) VALUES (?, 9)", key)
			}
			if !errors.Is(werr, fencedsql.ErrFenced) {
				t.Errorf("%s present=%v: the claim under 50 in a READ ONLY transaction committed, and a write under 30 then gave %v (want ErrFenced)", mode, present, werr)
			}
		}
	}
}
