package failover

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// guardedAccounts makes a PostgreSQL database with a guarded, registered accounts table
// (ids 0..2) and returns the plain pool and the fenced pool.
func guardedAccounts(ctx context.Context, t *testing.T) (raw, app *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, s := range []string{
		"CREATE TABLE accounts (id bigint PRIMARY KEY, balance bigint NOT NULL)",
		"INSERT INTO accounts (id, balance) VALUES (0, 0), (1, 0), (2, 0)",
	} {
		if _, err := raw.ExecContext(ctx, s); err != nil {
			t.Fatal(err)
		}
	}
	spec := schema.GuardSpec{Table: "accounts"}
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	reports, err := schema.Check(ctx, raw, postgres.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, s := range reports[0].Fix {
		if _, err := raw.ExecContext(ctx, s); err != nil {
			t.Fatalf("%v\n%s", err, s)
		}
	}
	app, err = sql.Open(postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { app.Close() })
	return raw, app
}

// TestSwitchRetiresOldService (red-team rt37c F4, G14 "Procedures", README "Switching
// or rebuilding the lock service"): after the switch (here in-process memlock → etcd)
// the old lock service still exists. Before the retirement step it kept counting, and
// the database's floor — only one or two tokens above the old service's last token
// (etcd's raise sets offset = min − H and its own write moves the revision by one) —
// let its second grant after the switch write, alongside the new service's holders,
// one of which could carry the same token. The procedure now retires the old service
// first (lockfloor -retire): a straggler still configured for it — a rolling deploy, a
// cron job, an instance not yet restarted — gets no lease at all (ErrRetired, at once),
// and a lease it got before the switch is below the database's floor.
func TestSwitchRetiresOldService(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	raw, app := guardedAccounts(ctx, t)

	oldService := memlock.New(memlock.WithMinToken(1_000_000))
	old := lockclient.New(oldService, lockclient.WithTTL(10*time.Second))
	defer old.Close(context.Background())
	cluster := etcdtest.StartSingle(t)
	next := lockclient.New(etcdlock.New(cluster.Client(t)), lockclient.WithTTL(10*time.Second))
	defer next.Close(context.Background())

	if w, f := transfers(ctx, t, old, app, 6); f != 0 || w != 6 {
		t.Fatalf("on the old service: %d written, %d fenced", w, f)
	}
	// A holder of the old service, granted before the switch and still within its TTL.
	before, err := old.Acquire(ctx, "account:2")
	if err != nil {
		t.Fatal(err)
	}
	if err := switchLockService(ctx, raw, old, next); err != nil {
		t.Fatal(err)
	}
	floors, err := schema.TokenFloors(ctx, raw, postgres.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	_, err = app.ExecContext(fencedsql.WithLease(ctx, before), "UPDATE accounts SET balance = balance + 1000 WHERE id = 2")
	if !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("the old service's lease from before the switch, token %d (database floor %d): err = %v, want ErrBelowFloor",
			before.Token(), floors[0].Floor, err)
	}
	_ = before.Release(ctx)

	// Stragglers still on the old service, after the switch: the Client that was
	// running, and one started afterwards. No grant, whatever the name.
	late := lockclient.New(oldService, lockclient.WithTTL(10*time.Second))
	defer late.Close(context.Background())
	for i, c := range []*lockclient.Client{old, late, old, late} {
		l, err := c.Acquire(ctx, "account:1")
		if err == nil {
			_, werr := app.ExecContext(fencedsql.WithLease(ctx, l), "UPDATE accounts SET balance = balance + 1000 WHERE id = 1")
			_ = l.Release(ctx)
			t.Fatalf("the retired service granted straggler #%d token %d after the switch (database floor %d; the write: %v)",
				i+1, l.Token(), floors[0].Floor, werr)
		}
		if !errors.Is(err, lockclient.ErrRetired) || !errors.Is(err, lockclient.ErrInvalidConfig) {
			t.Fatalf("straggler #%d on the retired service: err = %v, want ErrRetired", i+1, err)
		}
	}
	// The new service's holders write.
	if w, f := transfers(ctx, t, next, app, 6); f != 0 || w != 6 {
		t.Fatalf("on the new service: %d written, %d fenced", w, f)
	}
	var sum int
	if err := raw.QueryRowContext(ctx, "SELECT SUM(balance) FROM accounts").Scan(&sum); err != nil {
		t.Fatal(err)
	}
	if sum != 12 {
		t.Fatalf("balances sum to %d, want 12 (a refused write landed, or an acknowledged one was lost)", sum)
	}
}
