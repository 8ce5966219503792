package redteam

// Red-team pass "rtt" (deleted stays deleted), MariaDB: protected session settings
// set by a DSN parameter. The wrapper refuses SET timestamp, SET autocommit = 0 and SET
// completion_type = CHAIN/RELEASE as statements, but go-sql-driver/mysql sends every
// DSN parameter it does not know as SET name=value at connect; the session check must
// read them (dialects/mysql/session.go).

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	fmy "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func rttTok(n uint64) context.Context { return fencedsql.WithToken(context.Background(), n) }

// rttMariaDB opens a fresh MariaDB database with table acc guarded (schema.Check's
// fix applied) and row (1, 10) under token 5, and returns its DSN and a raw pool.
func rttMariaDB(t *testing.T) (string, *sql.DB) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	ctx := context.Background()
	mustExec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := raw.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	mustExec("CREATE TABLE acc (id BIGINT PRIMARY KEY, bal BIGINT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	reps, err := schema.Check(ctx, raw, fmy.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	mustExec(reps[0].Fix...)
	mustExec("INSERT INTO acc (id, bal, fence_token) VALUES (1, 10, 5)")
	return dsn, raw
}

// wantSessionRefused checks err is the session check's refusal of setting.
func wantSessionRefused(t *testing.T, err error, setting string) {
	t.Helper()
	var se *fencedsql.SessionError
	if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) || se.Setting != setting {
		t.Fatalf("err = %v, want a *fencedsql.SessionError for %s", err, setting)
	}
}

// TestRttMariaDBTimestampFromDSN: with timestamp=1000000000 in the DSN a DELETE through
// the fenced pool dated its tombstone in 2001 (UTC_TIMESTAMP(6) follows @@timestamp),
// PurgeTombstones with a retention of a week removed it at once, and the stale
// holder's INSERT brought the row back. The session check now refuses the clock; the
// same DELETE on a pool without the parameter keeps its tombstone through the purge.
func TestRttMariaDBTimestampFromDSN(t *testing.T) {
	dsn, raw := rttMariaDB(t)
	bad, err := sql.Open("fenced-mysql", withParam(withParam(dsn, "fenced_tables=acc"), "timestamp=1000000000"))
	if err != nil {
		t.Fatal(err)
	}
	defer bad.Close()
	_, err = bad.ExecContext(rttTok(7), "DELETE FROM acc WHERE id = 1")
	wantSessionRefused(t, err, "timestamp")
	var tok int64
	if err := raw.QueryRow("SELECT fence_token FROM acc WHERE id = 1").Scan(&tok); err != nil || tok != 5 {
		t.Fatalf("row 1 after the refused DELETE: token %d, %v", tok, err)
	}

	db, err := sql.Open("fenced-mysql", withParam(dsn, "fenced_tables=acc"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(rttTok(7), "DELETE FROM acc WHERE id = 1"); err != nil {
		t.Fatalf("DELETE under the newer token: %v", err)
	}
	var age int64
	if err := raw.QueryRow("SELECT TIMESTAMPDIFF(SECOND, deleted_at, UTC_TIMESTAMP()) FROM fencedsql_tomb_acc WHERE id = 1").Scan(&age); err != nil || age < -60 || age > 60 {
		t.Fatalf("tombstone age %d s, %v: want one dated now", age, err)
	}
	n, err := schema.PurgeTombstones(context.Background(), raw, fmy.Dialect, 7*24*time.Hour, "acc")
	if err != nil || n != 0 {
		t.Fatalf("PurgeTombstones with a retention of a week: %d, %v; want 0", n, err)
	}
	if _, err := db.ExecContext(rttTok(6), "INSERT INTO acc (id, bal) VALUES (1, 99)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("stale INSERT of the row deleted a moment ago under a newer token: err = %v, want ErrFenced", err)
	}
}

// TestRttMariaDBProtectedSettingsFromDSN: with autocommit=0 or completion_type=1 (CHAIN,
// after the first COMMIT) in the DSN, a DELETE through the fenced pool reported 1 row
// deleted and the row stayed there for every other session (never committed).
// completion_type=2 (RELEASE) closed the connection after each COMMIT. The session
// check now refuses each before the first guarded write.
func TestRttMariaDBProtectedSettingsFromDSN(t *testing.T) {
	for _, c := range []struct{ param, setting string }{
		{"autocommit=0", "autocommit"},
		{"completion_type=1", "completion_type"},
		{"completion_type=2", "completion_type"},
		{"skip_replication=1", "skip_replication"},
	} {
		t.Run(c.param, func(t *testing.T) {
			dsn, raw := rttMariaDB(t)
			db, err := sql.Open("fenced-mysql", withParam(withParam(dsn, "fenced_tables=acc"), c.param))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			db.SetMaxOpenConns(1)
			// A fenced transaction first (CHAIN and RELEASE act at its COMMIT): its first
			// guarded write is refused.
			tx, err := db.BeginTx(rttTok(6), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.ExecContext(rttTok(6), "UPDATE acc SET bal = 11 WHERE id = 1")
			wantSessionRefused(t, err, c.setting)
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			_, err = db.ExecContext(rttTok(7), "DELETE FROM acc WHERE id = 1")
			if c.param == "completion_type=2" {
				// RELEASE acts at the ROLLBACK too: the server closes the connection, and
				// the next check may meet the closed socket (the driver's invalid
				// connection) before it reads the setting. Either way nothing is written.
				if err == nil {
					t.Fatal("DELETE after a released connection: no error")
				}
			} else {
				wantSessionRefused(t, err, c.setting)
			}
			var bal, tok int64
			if err := raw.QueryRow("SELECT bal, fence_token FROM acc WHERE id = 1").Scan(&bal, &tok); err != nil || bal != 10 || tok != 5 {
				t.Fatalf("row 1: bal %d token %d, %v; want it untouched (10, 5)", bal, tok, err)
			}
		})
	}
}
