package sqllock_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/logtest"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// TestGrantCommitsDurablyUnderAsyncDefault (red-team rt31b F3): the lock database runs
// its sessions with synchronous_commit = off (a database default set for throughput).
// A grant acknowledged before its commit is flushed — the lease row and the sequence's
// advance — is forgotten by a server crash within the WAL writer's delay, after which
// the sequence grants the same token again. Every PostgreSQL grant sets
// synchronous_commit on for its own transaction (SET LOCAL, in the grant statement):
// a deferred constraint trigger on the lease table, which fires at commit, records the
// setting the commit runs under, for the grant of TryAcquire, of a queued Acquire, and
// of a grant after a release. (The crash itself is not reproduced here.)
func TestGrantCommitsDurablyUnderAsyncDefault(t *testing.T) {
	srv := servers[0]
	if srv.dialect != sqllock.Postgres {
		t.Fatal("servers[0] is not PostgreSQL")
	}
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 20*time.Second)
	for _, q := range []string{
		`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database()); END $$`,
		`CREATE TABLE commit_log (setting text NOT NULL)`,
		`CREATE FUNCTION log_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO commit_log VALUES (current_setting('synchronous_commit')); RETURN NULL; END $$`,
		`CREATE CONSTRAINT TRIGGER log_commit AFTER INSERT OR UPDATE ON fencedsql_locks
 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION log_commit_setting()`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	db := srv.open(t, dsn)
	var sc string
	if err := db.QueryRowContext(ctx, "SHOW synchronous_commit").Scan(&sc); err != nil || sc != "off" {
		t.Fatalf("setup: synchronous_commit = %q (%v), want off", sc, err)
	}
	b, err := sqllock.New(db, sqllock.WithDialect(sqllock.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, b)
	g, err := s.TryAcquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	c := lockclient.New(b, lockclient.WithTTL(30*time.Second))
	defer c.Close(context.Background())
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if err := l.Release(ctx); err != nil {
		t.Fatal(err)
	}
	rows, err := admin.QueryContext(ctx, `SELECT setting FROM commit_log`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	n := 0
	for rows.Next() {
		var setting string
		if err := rows.Scan(&setting); err != nil {
			t.Fatal(err)
		}
		n++
		if setting != "on" {
			t.Errorf("a grant committed with synchronous_commit = %s (the database default is off): a crash can forget its token, "+
				"after which the sequence grants it again", setting)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if n < 2 {
		t.Fatalf("%d grant commits logged, want at least 2", n)
	}
}

// TestFlushLogSettingWarned: MySQL/MariaDB has no per-transaction durable commit, so
// a lock server run with innodb_flush_log_at_trx_commit other than 1 forgets the
// grants of about the last second in a crash and grants their tokens again. The
// first check of a Backend reads the setting in the statement that reads the tables'
// engines and warns through the backend's logger; with 1 it is silent. (The test
// servers run with 0 for speed; either value is judged.)
func TestFlushLogSettingWarned(t *testing.T) {
	srv := servers[1]
	if srv.dialect != sqllock.MySQL {
		t.Fatal("servers[1] is not MySQL")
	}
	_, admin := srv.fresh(t, "")
	ctx := ctxT(t, 20*time.Second)
	var flush string
	if err := admin.QueryRowContext(ctx, "SELECT @@global.innodb_flush_log_at_trx_commit").Scan(&flush); err != nil {
		t.Fatal(err)
	}
	rec := logtest.New()
	be, err := sqllock.New(admin, sqllock.WithLogger(rec.Logger()))
	if err != nil {
		t.Fatal(err)
	}
	c := lockclient.New(be, lockclient.WithTTL(5*time.Second))
	defer c.Close(context.Background())
	for i := 0; i < 2; i++ {
		l, err := c.TryAcquire(ctx, "k")
		if err != nil {
			t.Fatal(err)
		}
		if err := l.Release(ctx); err != nil {
			t.Fatal(err)
		}
	}
	var warned int
	for _, m := range rec.Messages() {
		if strings.Contains(m, "innodb_flush_log_at_trx_commit = "+flush) {
			warned++
		}
	}
	if want := map[bool]int{true: 0, false: 1}[flush == "1"]; warned != want {
		t.Errorf("innodb_flush_log_at_trx_commit = %s: warned %d times in two grants, want %d (messages %q)", flush, warned, want, rec.Messages())
	}
}

// TestRenewAndReleaseCommitDurablyUnderAsyncDefault (the durability suspicion of
// red-team rt41c): under a database default of synchronous_commit = off a renewal was
// acknowledged before its commit was flushed, so a crash (or a failover to a
// synchronous standby) could take back a renewal the client trusts (G7). Renew and
// Release set synchronous_commit on for their own transaction as the grant does: a
// deferred constraint trigger on UPDATE and DELETE records the setting they commit under.
func TestRenewAndReleaseCommitDurablyUnderAsyncDefault(t *testing.T) {
	srv := servers[0]
	if srv.dialect != sqllock.Postgres {
		t.Fatal("servers[0] is not PostgreSQL")
	}
	dsn, admin := srv.fresh(t, "")
	ctx := ctxT(t, 20*time.Second)
	for _, q := range []string{
		`DO $$ BEGIN EXECUTE format('ALTER DATABASE %I SET synchronous_commit = off', current_database()); END $$`,
		`CREATE TABLE commit_log (op text NOT NULL, setting text NOT NULL)`,
		`CREATE FUNCTION log_commit_setting() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN INSERT INTO commit_log VALUES (TG_OP, current_setting('synchronous_commit')); RETURN NULL; END $$`,
		`CREATE CONSTRAINT TRIGGER log_commit AFTER UPDATE OR DELETE ON fencedsql_locks
 DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION log_commit_setting()`,
	} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	b, err := sqllock.New(srv.open(t, dsn), sqllock.WithDialect(sqllock.Postgres))
	if err != nil {
		t.Fatal(err)
	}
	s := openSession(t, b)
	g, err := s.TryAcquire(ctx, "fresh") // an insert: not logged
	if err != nil {
		t.Fatal(err)
	}
	if err := s.Renew(ctx, g); err != nil {
		t.Fatal(err)
	}
	if err := s.Release(ctx, g); err != nil {
		t.Fatal(err)
	}
	rows, err := admin.QueryContext(ctx, `SELECT op, setting FROM commit_log`)
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	ops := map[string]bool{}
	for rows.Next() {
		var op, setting string
		if err := rows.Scan(&op, &setting); err != nil {
			t.Fatal(err)
		}
		ops[op] = true
		if setting != "on" {
			t.Errorf("a %s of the lease table (renewal or release) committed with synchronous_commit = %s (the database default is off): "+
				"a crash can take it back while the client trusts it", op, setting)
		}
	}
	if err := rows.Err(); err != nil {
		t.Fatal(err)
	}
	if !ops["UPDATE"] || !ops["DELETE"] {
		t.Fatalf("commits logged for %v, want UPDATE (renew) and DELETE (release)", ops)
	}
}
