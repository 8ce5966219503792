package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// red-team rt40c F3: schema.MaxToken — what `fencedsql-schema -max-token` prints at a lock-service
// switch, rebuild or restore, and what the new service's floor is raised to — answers on
// a PostgreSQL standby from its lagging copy of the rows. RaiseTokenFloor on the same
// standby is refused (ErrNotPrimary), sqllock's and redislock's LastToken are refused on
// a replica (rt31b, rt37c), but MaxToken asks nothing: a standby whose replication lags
// (or is cut) answers a maximum below tokens the primary accepted, and a new lock service
// raised to it hands out tokens below them.
func TestMaxTokenRefusesStandby(t *testing.T) {
	env := needEnv(t)
	t.Parallel() // its own pair (fresh directories and ports): waits for its servers
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair, err := NewPostgres(ctx, env, Async)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { pair.Close() })

	primary, err := sql.Open("pgx", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if _, err := primary.ExecContext(ctx, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, primary, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		for _, q := range r.Fix {
			if _, err := primary.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	if _, err := primary.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 10, 1)"); err != nil {
		t.Fatal(err)
	}
	standby, err := sql.Open("pgx", pair.replica.dsn())
	if err != nil {
		t.Fatal(err)
	}
	defer standby.Close()
	if err := waitFor(ctx, "row 1 on the standby", pair.replica.srv, func(ctx context.Context) error {
		var n int
		if err := standby.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%d rows", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	// Replication lags (here: cut): the primary accepts token 500.
	if err := pair.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.ExecContext(ctx, "UPDATE accounts SET fence_token = 500, version = version + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if m, err := schema.MaxToken(ctx, primary, postgres.Dialect); err != nil || m != 500 {
		t.Fatalf("setup: MaxToken on the primary = %d, %v; want 500", m, err)
	}
	// The control: the floor's raise refuses the standby.
	if err := schema.RaiseTokenFloor(ctx, standby, postgres.Dialect, 1000); !errors.Is(err, schema.ErrNotPrimary) {
		t.Fatalf("setup: RaiseTokenFloor on the standby: %v, want ErrNotPrimary", err)
	}
	m, err := schema.MaxToken(ctx, standby, postgres.Dialect)
	if !errors.Is(err, schema.ErrNotPrimary) {
		t.Fatalf("MaxToken on a lagging standby = %d, %v; want an error (ErrNotPrimary, as RaiseTokenFloor) — the primary accepted token 500, "+
			"and a lock service raised to %d grants tokens below it", m, err, m+1)
	}
}

// red-team rt40c F3 on MariaDB: the same, on a replica (read_only, SQL thread running, IO thread
// stopped: replication cut).
func TestMaxTokenRefusesMariaDBReplica(t *testing.T) {
	env := needEnv(t)
	t.Parallel() // its own pair (fresh directories and ports): waits for its servers
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	pair := asyncMariaDBPair(t, ctx, env)

	primary, err := sql.Open("mysql", pair.DSN())
	if err != nil {
		t.Fatal(err)
	}
	defer primary.Close()
	if _, err := primary.ExecContext(ctx, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, primary, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reports {
		for _, q := range r.Fix {
			if _, err := primary.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	if _, err := primary.ExecContext(ctx, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 10, 1)"); err != nil {
		t.Fatal(err)
	}
	replica, err := sql.Open("mysql", pair.replica.dsn(mariaDBDatabase))
	if err != nil {
		t.Fatal(err)
	}
	defer replica.Close()
	if err := waitFor(ctx, "row 1 on the replica", nil, func(ctx context.Context) error {
		var n int
		if err := replica.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil {
			return err
		}
		if n != 1 {
			return fmt.Errorf("%d rows", n)
		}
		return nil
	}); err != nil {
		t.Fatal(err)
	}
	if err := pair.Detach(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := primary.ExecContext(ctx, "UPDATE accounts SET fence_token = 500, version = version + 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if m, err := schema.MaxToken(ctx, primary, mysql.Dialect); err != nil || m != 500 {
		t.Fatalf("setup: MaxToken on the primary = %d, %v; want 500", m, err)
	}
	if err := schema.RaiseTokenFloor(ctx, replica, mysql.Dialect, 1000); !errors.Is(err, schema.ErrNotPrimary) {
		t.Fatalf("setup: RaiseTokenFloor on the replica: %v, want ErrNotPrimary", err)
	}
	m, err := schema.MaxToken(ctx, replica, mysql.Dialect)
	if !errors.Is(err, schema.ErrNotPrimary) {
		t.Fatalf("MaxToken on a lagging replica = %d, %v; want an error (ErrNotPrimary, as RaiseTokenFloor) — the primary accepted token 500", m, err)
	}
}
