package postgres_test

// Session profiles (red-team rt58b, held): the isolation level and session settings
// of the transactions that delete, re-insert, upsert and claim — set by the DSN's
// startup parameters (default_transaction_isolation, lock_timeout, statement_timeout,
// idle_in_transaction_session_timeout, session_replication_role on the plain pool), by
// BeginTx with or without a level, or by text (SET TRANSACTION …) — crossed with
// stale and current holders. Oracle: deleted stays deleted, tokens never go back,
// errors typed or the server's serialization, lock and timeout errors.
//
// TestSchedulesIsolationProfiles runs TestSchedulesRandom's schedules (schedGen,
// schedRunSchedule, schedCheck) with each transaction on a drawn profile's pools,
// for at most isolationProfilesBudget by default (CI); the FENCEDSQL_SCHEDULES_*
// variables (schedules_random_test.go) replay a seed or run a long form:
//
//	FENCEDSQL_SCHEDULES_ITERS=500 go test -timeout 0 -count=1 -run '^TestSchedulesIsolationProfiles$' ./dialects/postgres/

import (
	"context"
	"database/sql"
	"errors"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// isolationProfilesBudget bounds each generator's default run (CI); with
// FENCEDSQL_SCHEDULES_ITERS set there is none.
const isolationProfilesBudget = 3 * time.Second

// sessionProfile is a pair of pools on acc opened with startup parameters.
type sessionProfile struct {
	name    string
	params  []string
	iso     sql.IsolationLevel // the session default's effective level
	fenced  *sql.DB
	raw     *sql.DB
	timeout bool // its settings may end a statement or the session
}

// sessionProfiles opens the profiles' pools on dsn (fenced on acc).
func sessionProfiles(t *testing.T, dsn string) []*sessionProfile {
	ps := []*sessionProfile{
		{name: "default", iso: sql.LevelReadCommitted},
		{name: "dsnSER", params: []string{"default_transaction_isolation=serializable"}, iso: sql.LevelSerializable},
		{name: "dsnRR", params: []string{"default_transaction_isolation=repeatable%20read"}, iso: sql.LevelRepeatableRead},
		{name: "dsnRU", params: []string{"default_transaction_isolation=read%20uncommitted"}, iso: sql.LevelReadCommitted},
		{name: "lt50", params: []string{"lock_timeout=50"}, iso: sql.LevelReadCommitted, timeout: true},
		{name: "st300RR", params: []string{"statement_timeout=300", "default_transaction_isolation=repeatable%20read"}, iso: sql.LevelRepeatableRead, timeout: true},
		{name: "replicaRaw", params: []string{"session_replication_role=replica"}, iso: sql.LevelReadCommitted},
		{name: "idle400SER", params: []string{"idle_in_transaction_session_timeout=400", "default_transaction_isolation=serializable"}, iso: sql.LevelSerializable, timeout: true},
	}
	for _, p := range ps {
		d := dsn
		for _, kv := range p.params {
			d = fencetest.WithParam(d, kv)
		}
		p.raw = testdb.Open(t, "pgx", d)
		fd := d
		if p.name == "replicaRaw" {
			fd = dsn // a protected setting: only the raw pool runs as a replica
		}
		p.fenced = testdb.Open(t, "fenced-pgx", fencetest.WithParam(fd, "fenced_tables=acc"))
		p.raw.SetMaxOpenConns(8)
		p.fenced.SetMaxOpenConns(8)
	}
	return ps
}

// sessionAllowed reports whether err is an expected error under a profile: a typed one
// (schedAllowedErr), a lock, timeout, serialization or deadlock error of the server,
// or, under a profile whose settings end sessions, the connection's end.
func sessionAllowed(err error, timeoutProfile bool) bool {
	if schedAllowedErr(err) {
		return true
	}
	var pe *pgconn.PgError
	if errors.As(err, &pe) {
		switch pe.Code {
		case "55P03", "57014", "25P03", "40001", "40P01":
			return true
		}
	}
	return timeoutProfile && sessionEnded(err.Error())
}

// sessionEnded reports whether an error's text is a statement or session ended by a
// profile's timeout.
func sessionEnded(e string) bool {
	for _, s := range []string{"SQLSTATE 57014", "SQLSTATE 55P03", "25P03", "57P05", "conn closed", "bad connection", "transaction has already been committed or rolled back", "EOF"} {
		if strings.Contains(e, s) {
			return true
		}
	}
	return false
}

// sessionAcc creates acc with its guards: the DSN and a plain pool.
func sessionAcc(t *testing.T) (dsn string, raw *sql.DB) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)")
	checkAcc(t, raw, dsn)
	return dsn, raw
}

func TestSchedulesIsolationProfiles(t *testing.T) {
	k := schedKnobsFromEnv(t, 200)
	dsn, raw := sessionAcc(t)
	profs := sessionProfiles(t, dsn)
	schedRunMany(t, k, raw, isolationProfilesBudget, func(r *rand.Rand, txs []schedTx) schedDrawn {
		prof := make([]*sessionProfile, len(txs))
		for i := range txs {
			prof[i] = profs[r.Intn(len(profs))]
			if r.Intn(2) == 0 {
				txs[i].iso = sql.LevelDefault
			}
		}
		return schedDrawn{
			pools:   func(i int) (*sql.DB, *sql.DB, sql.IsolationLevel) { return prof[i].fenced, prof[i].raw, prof[i].iso },
			label:   func(i int) string { return prof[i].name },
			excused: func(i int, e string) bool { return prof[i].timeout && sessionEnded(e) },
		}
	})
}

// TestTxSettingStatementsKeepDeleted: transaction-level settings sent as text through a
// token-bound transaction of the fenced pool (first statement, or after a write), then a
// DELETE by the current holder, a stale re-INSERT / upsert / claim (refused ErrFenced or
// a serialization/lock error), and the key must stay deleted.
func TestTxSettingStatementsKeepDeleted(t *testing.T) {
	dsn, raw := sessionAcc(t)
	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=acc"))
	settings := []string{
		"SET TRANSACTION ISOLATION LEVEL SERIALIZABLE",
		"SET TRANSACTION ISOLATION LEVEL REPEATABLE READ",
		"SET TRANSACTION ISOLATION LEVEL READ UNCOMMITTED",
		"set transaction isolation level serializable, read write",
		"SET transaction_isolation = 'repeatable read'",
		"SET LOCAL transaction_isolation TO 'serializable'",
		"SET LOCAL lock_timeout = '100ms'",
		"SET LOCAL statement_timeout = 500",
		"SET LOCAL idle_in_transaction_session_timeout = 2000",
		"SET SESSION CHARACTERISTICS AS TRANSACTION ISOLATION LEVEL SERIALIZABLE",
		"SET TRANSACTION DEFERRABLE",
	}
	ctx := context.Background()
	key := int64(1000)
	for _, s := range settings {
		for _, pos := range []string{"first", "afterwrite"} {
			key++
			if _, err := raw.Exec("INSERT INTO acc (id, balance, fence_token, version) VALUES ($1, 1, 10, 1)", key); err != nil {
				t.Fatal(err)
			}
			// the current holder (token 50) deletes the key in a tx with the setting
			cur := fencedsql.WithToken(ctx, 50)
			tx, err := db.BeginTx(cur, nil)
			if err != nil {
				t.Fatal(err)
			}
			if pos == "afterwrite" {
				if _, err := tx.ExecContext(cur, "UPDATE acc SET balance = 2 WHERE id = $1", key); err != nil {
					t.Errorf("%s/%s: update: %v", s, pos, err)
				}
			}
			_, serr := tx.ExecContext(cur, s)
			if serr != nil {
				t.Logf("%s/%s: setting: %v", s, pos, serr)
				if pos == "first" {
					t.Errorf("over-refusal? %q as the first statement of a token-bound transaction: %v", s, serr)
				}
				tx.Rollback() //nolint:errcheck
				continue
			}
			if _, err := tx.ExecContext(cur, "DELETE FROM acc WHERE id = $1", key); err != nil {
				t.Errorf("%s/%s: current delete: %v", s, pos, err)
			}
			if err := tx.Commit(); err != nil {
				t.Errorf("%s/%s: current commit: %v", s, pos, err)
				continue
			}
			// the stale holder (token 30), with the same setting, tries to bring it back
			for _, q := range []string{
				"INSERT INTO acc (id, balance) VALUES ($1, 7)",
				"INSERT INTO acc (id, balance) VALUES ($1, 7) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance",
				"SELECT id FROM acc WHERE id = $1 FOR UPDATE",
			} {
				old := fencedsql.WithToken(ctx, 30)
				tx, err := db.BeginTx(old, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := tx.ExecContext(old, s); err != nil {
					tx.Rollback() //nolint:errcheck
					continue
				}
				var werr error
				if strings.HasPrefix(q, "SELECT") {
					var rows *sql.Rows
					rows, werr = tx.QueryContext(old, q, key)
					if werr == nil {
						for rows.Next() {
						}
						rows.Close()
						werr = rows.Err()
					}
					if werr == nil {
						_, werr = tx.ExecContext(old, "INSERT INTO acc (id, balance) VALUES ($1, 8)", key)
					}
				} else {
					_, werr = tx.ExecContext(old, q, key)
				}
				cerr := tx.Commit()
				if werr == nil && cerr == nil {
					t.Errorf("%s/%s: stale %q committed", s, pos, q)
				} else if werr != nil && !sessionAllowed(werr, true) {
					t.Errorf("%s/%s: stale %q: untyped error %T %v", s, pos, q, werr, werr)
				}
			}
			var n int
			if err := raw.QueryRow("SELECT count(*) FROM acc WHERE id = $1", key).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("%s/%s: key deleted under 50 is back", s, pos)
			}
		}
	}
}
