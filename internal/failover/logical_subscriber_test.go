package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// logicalNode starts one PostgreSQL server (its own: the shared one and the harness's
// pairs run wal_level=replica) with wal_level=logical and returns the DSN of database db on it.
func logicalNode(t *testing.T, ctx context.Context, env Env) func(db string) string {
	t.Helper()
	as, err := lookupRunAs("postgres")
	if err != nil {
		t.Fatal(err)
	}
	dir, err := os.MkdirTemp(env.Dir, "logical-")
	if err != nil {
		t.Fatal(err)
	}
	p := &PostgresPair{env: env, mode: Async, as: as, dir: dir}
	t.Cleanup(func() { p.Close() })
	if err := as.mkdir(dir); err != nil {
		t.Fatal(err)
	}
	n, err := p.newNode()
	if err != nil {
		t.Fatal(err)
	}
	if err := as.run(ctx, filepath.Join(n.dir, "initdb.log"), filepath.Join(env.PGBin, "initdb"), "-D", n.data(),
		"-U", "fenced", "--auth=trust", "-E", "UTF8", "--no-locale", "--no-sync", "--no-instructions"); err != nil {
		t.Fatal(err)
	}
	srv, err := as.start(filepath.Join(n.dir, "postgres.log"), filepath.Join(env.PGBin, "postgres"), "-D", n.data(),
		"-c", "listen_addresses=127.0.0.1", "-c", "port="+strconv.Itoa(n.port), "-c", "unix_socket_directories="+n.dir,
		"-c", "fsync=off", "-c", "full_page_writes=off", "-c", "max_connections=40", "-c", "shared_buffers=16MB",
		"-c", "wal_level=logical", "-c", "max_wal_senders=4", "-c", "max_replication_slots=4",
		"-c", "log_min_messages=warning")
	if err != nil {
		t.Fatal(err)
	}
	n.srv = srv
	p.primary = n
	if err := waitFor(ctx, "PostgreSQL answering", srv, func(ctx context.Context) error {
		return pgDo(ctx, n.dsn(), func(db *sql.DB) error { return db.PingContext(ctx) })
	}); err != nil {
		t.Fatal(err)
	}
	return func(db string) string {
		return fmt.Sprintf("postgres://fenced@127.0.0.1:%d/%s?sslmode=disable&connect_timeout=5", n.port, db)
	}
}

func logicalExec(t *testing.T, ctx context.Context, db *sql.DB, qs ...string) {
	t.Helper()
	for _, q := range qs {
		if _, err := db.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
}

func logicalInstall(t *testing.T, ctx context.Context, db *sql.DB) {
	t.Helper()
	logicalExec(t, ctx, db, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	if err := schema.RegisterTables(ctx, db, postgres.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, db, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		logicalExec(t, ctx, db, r.Fix...)
	}
}

// TestLogicalSubscriberIsNotPrimary (red-team rt50c F1–F3): a PostgreSQL database that
// receives the guarded tables by logical replication (a blue/green major-version
// upgrade, a migration to a new cluster, pglogical-style failover) is not in recovery,
// yet not a primary. MariaDB's version of the same case — a server
// with a replication connection configured, running or stopped — is refused by
// schema.requirePrimary (rt48i: "a replica, even with its replication stopped, lags
// behind the primary and has a raise undone when replication starts again"), and
// MaxToken on a lagging physical standby too (rt40c F3). Unrefused on the subscriber:
//   - MaxToken would answer its copy (10) while the publisher accepted 500: a new lock
//     service raised to it would hand out tokens below 500;
//   - a fenced pool would accept a guarded write under token 300, judged by the
//     subscriber's lagging row (10);
//   - RaiseTokenFloor would report success, and the publisher's floor row, applied by
//     the subscription, would lower the floor again.
//
// All three are refused with ErrNotPrimary (PostgreSQL's dialect.ReplicationLister:
// any pg_subscription row of the database, here a disabled one); the publisher, whose
// cluster holds the subscription in another database, is not; after DROP SUBSCRIPTION
// the subscriber is a primary. (Held: the apply worker does not write past the
// guards — they are ENABLE ALWAYS, so a publisher's row below the subscriber's newer
// one stops the apply.)
func TestLogicalSubscriberIsNotPrimary(t *testing.T) {
	env := needEnv(t)
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	dsn := logicalNode(t, ctx, env)
	admin, err := sql.Open("pgx", dsn("postgres"))
	if err != nil {
		t.Fatal(err)
	}
	defer admin.Close()
	logicalExec(t, ctx, admin, "CREATE DATABASE blue", "CREATE DATABASE green")
	blue, err := sql.Open("pgx", dsn("blue"))
	if err != nil {
		t.Fatal(err)
	}
	defer blue.Close()
	green, err := sql.Open("pgx", dsn("green"))
	if err != nil {
		t.Fatal(err)
	}
	defer green.Close()
	logicalInstall(t, ctx, blue)
	logicalInstall(t, ctx, green)
	logicalExec(t, ctx, blue, "CREATE PUBLICATION bg FOR TABLE accounts, fencedsql_floor",
		"SELECT pg_create_logical_replication_slot('bg', 'pgoutput')")
	// Same cluster: the slot is made beforehand (CREATE SUBSCRIPTION cannot create it
	// in its own cluster's other database).
	logicalExec(t, ctx, green, "CREATE SUBSCRIPTION bg CONNECTION '"+
		fmt.Sprintf("host=127.0.0.1 port=%s dbname=blue user=fenced", portOf(dsn("blue")))+
		"' PUBLICATION bg WITH (create_slot = false, slot_name = 'bg', copy_data = false)")
	logicalExec(t, ctx, blue, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 0, 10, 1)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 10, 1)")
	waitRow := func(want int64) {
		t.Helper()
		if err := waitFor(ctx, fmt.Sprintf("row 1 at token %d on green", want), nil, func(ctx context.Context) error {
			var tok int64
			if err := green.QueryRowContext(ctx, "SELECT fence_token FROM accounts WHERE id = 1").Scan(&tok); err != nil {
				return err
			}
			if tok != want {
				return fmt.Errorf("token %d", tok)
			}
			return nil
		}); err != nil {
			t.Fatal(err)
		}
	}
	waitRow(10)
	// Replication lags (here: the subscription disabled, as a lagging or paused one).
	logicalExec(t, ctx, green, "ALTER SUBSCRIPTION bg DISABLE")
	logicalExec(t, ctx, blue, "UPDATE accounts SET fence_token = 500, version = version + 1 WHERE id = 1")
	if m, err := schema.MaxToken(ctx, blue, postgres.Dialect); err != nil || m != 500 {
		t.Fatalf("setup: MaxToken on the publisher = %d, %v; want 500", m, err)
	}
	t.Run("MaxToken", func(t *testing.T) {
		if m, err := schema.MaxToken(ctx, green, postgres.Dialect); !errors.Is(err, schema.ErrNotPrimary) {
			t.Errorf("MaxToken on a lagging logical subscriber = %d, %v; want ErrNotPrimary (as on a physical standby, rt40c F3, "+
				"and a MariaDB server with replication configured, rt48i) — the publisher accepted token 500, "+
				"and a lock service raised to %d grants tokens below it", m, err, m+1)
		}
	})
	t.Run("FencedWrite", func(t *testing.T) {
		// A holder of token 300 (superseded by 500, which the publisher accepted) writes
		// through a fenced pool on the subscriber: judged by its lagging row (10).
		pool, err := sql.Open(postgres.DriverName, dsn("green")+"&"+fencedsql.ParamTables+"=accounts")
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		tx, err := pool.BeginTx(fencedsql.WithToken(ctx, 300), nil)
		if err != nil {
			t.Fatal(err)
		}
		defer tx.Rollback()
		_, err = tx.ExecContext(fencedsql.WithToken(ctx, 300), "UPDATE accounts SET balance = 300 WHERE id = 1")
		if !errors.Is(err, fencedsql.ErrNotPrimary) {
			t.Errorf("a guarded write under token 300 through a fenced pool on a logical subscriber (the publisher holds 500): %v; "+
				"want ErrNotPrimary, as a fenced pool on a MariaDB server with replication configured (rt42f F2, rt48i)", err)
		}
	})
	t.Run("RaiseTokenFloor", func(t *testing.T) {
		if err := schema.RaiseTokenFloor(ctx, green, postgres.Dialect, 400); !errors.Is(err, schema.ErrNotPrimary) {
			t.Errorf("RaiseTokenFloor on a server with a logical subscription configured: %v; want ErrNotPrimary, "+
				"as on MariaDB with replication configured (rt48i: a raise there is undone when replication runs)", err)
		}
	})
	// The cut-over: the subscription dropped, green is a primary of its own.
	logicalExec(t, ctx, green, "ALTER SUBSCRIPTION bg SET (slot_name = NONE)", "DROP SUBSCRIPTION bg")
	t.Run("AfterDropSubscription", func(t *testing.T) {
		if err := schema.RaiseTokenFloor(ctx, green, postgres.Dialect, 600); err != nil {
			t.Fatalf("RaiseTokenFloor on green after DROP SUBSCRIPTION: %v", err)
		}
		if m, err := schema.MaxToken(ctx, green, postgres.Dialect); err != nil || m != 599 {
			t.Errorf("MaxToken on green after DROP SUBSCRIPTION = %d, %v; want 599 (below its floor 600)", m, err)
		}
		pool, err := sql.Open(postgres.DriverName, dsn("green")+"&"+fencedsql.ParamTables+"=accounts")
		if err != nil {
			t.Fatal(err)
		}
		defer pool.Close()
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 700), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
			t.Errorf("a guarded write under token 700 on green after DROP SUBSCRIPTION: %v", err)
		}
	})
}

func portOf(dsn string) string {
	var port int
	fmt.Sscanf(dsn[len("postgres://fenced@127.0.0.1:"):], "%d", &port)
	return strconv.Itoa(port)
}
