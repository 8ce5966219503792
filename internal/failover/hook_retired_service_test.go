package failover

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"os/exec"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
)

// TestHookRefusesRetiredLockService: after a lock-service switch (README "Switching or
// rebuilding the lock service": -retire the old service, raise the new one, raise the
// database's floor), a failover hook whose FENCEDSQL_LOCKFLOOR_ARGS still names the old,
// retired service fails ("NOT raised", naming the retirement) instead of raising the
// floor from the retired service's last token — below every token of the service the
// application uses — and reporting success; the floor is left as it was. Pointed at the
// new service, the same hook raises the floor above a lease granted before the
// failover, which is then refused (red-team rt42c F6: raise-floor.sh runs lockfloor
// -show -live, which refuses a retired service).
func TestHookRefusesRetiredLockService(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	addr := testdb.NeedServer(t, testdb.EnvRedis, "Redis")
	ctx, cancel := context.WithTimeout(context.Background(), 6*time.Minute)
	defer cancel()
	var rnd [6]byte
	rand.Read(rnd[:])
	base := "hookretired:" + hex.EncodeToString(rnd[:]) + ":"
	oldPrefix, newPrefix := base+"old:", base+"new:"
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() {
		keys, _ := rdb.Keys(context.Background(), base+"*").Result()
		if len(keys) > 0 {
			rdb.Del(context.Background(), keys...)
		}
		rdb.Close()
	})

	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	spec := schema.GuardSpec{Table: "accounts"}
	if err := schema.RegisterTables(ctx, raw, postgres.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	fencetest.Guard(t, ctx, raw, postgres.Dialect, spec)

	// The old service grants, then is retired (lockfloor -retire).
	oldB := redislock.New(rdb, redislock.WithPrefix(oldPrefix))
	oldC := lockclient.New(oldB, lockclient.WithTTL(30*time.Second))
	defer oldC.Close(context.Background())
	l, err := oldC.Acquire(ctx, "account:9")
	if err != nil {
		t.Fatal(err)
	}
	l.Release(ctx)
	old, err := oldB.Retire(ctx)
	if err != nil {
		t.Fatal(err)
	}
	// The new service raised above it, the database's floor above the new one's last token.
	newB := redislock.New(rdb, redislock.WithPrefix(newPrefix))
	if err := newB.RaiseFloor(ctx, old); err != nil {
		t.Fatal(err)
	}
	next, err := newB.LastToken(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, next+1); err != nil {
		t.Fatal(err)
	}
	// The application runs on the new service: a few grants, then holder X's lease.
	newC := lockclient.New(newB, lockclient.WithTTL(30*time.Second))
	defer newC.Close(context.Background())
	for i := 0; i < 5; i++ {
		l, err := newC.Acquire(ctx, "account:"+strconv.Itoa(i))
		if err != nil {
			t.Fatal(err)
		}
		l.Release(ctx)
	}
	x, err := newC.Acquire(ctx, "account:1")
	if err != nil {
		t.Fatal(err)
	}
	defer x.Release(context.Background())

	// A failover (or a restore): the hook, still configured for the old service.
	bins := hookBinaries(ctx, t)
	hookEnv := func(prefix string) []string {
		return append(append([]string{}, bins...), "FENCEDSQL_LOCKFLOOR_ARGS=-backend redis -addr "+addr+" -prefix "+prefix,
			"FENCEDSQL_FLOOR_DSN="+dsn)
	}
	out, rc := runHook(t, hookEnv(oldPrefix), "raise-floor.sh", "postgres")
	floor, err := schema.TokenFloor(ctx, raw, postgres.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	if rc == 0 || !strings.Contains(out, "NOT raised") || !strings.Contains(out, "retired (its last token "+strconv.FormatUint(old, 10)+")") {
		t.Fatalf("the hook configured for the retired service (last token %d): exit %d, output:\n%s\nwant a failure naming the retirement (NOT raised)", old, rc, out)
	}
	if floor != next+1 {
		t.Fatalf("the failed hook left the floor at %d, want %d as it was", floor, next+1)
	}

	// The same hook, pointed at the service the application uses.
	out, rc = runHook(t, hookEnv(newPrefix), "raise-floor.sh", "postgres")
	if rc != 0 {
		t.Fatalf("the hook configured for the live service: exit %d\n%s", rc, out)
	}
	app, err := sql.Open(postgres.DriverName, fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	_, err = app.ExecContext(fencedsql.WithToken(ctx, x.Token()), "INSERT INTO accounts (id, balance) VALUES (1, 0)")
	if !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("a lease granted before the failover (token %d) wrote after the hook raised the floor from the live service: %v, want ErrBelowFloor", x.Token(), err)
	}
}
