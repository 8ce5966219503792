package failover

import (
	"context"
	"database/sql"
	"errors"
	"net/url"
	"os"
	"os/exec"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

// hookBinaries builds lockfloor and fencedsql-schema for the hook scripts and returns
// the environment naming them (FENCEDSQL_LOCKFLOOR, FENCEDSQL_SCHEMA, one attempt).
func hookBinaries(ctx context.Context, t *testing.T) []string {
	t.Helper()
	bin := t.TempDir()
	for name, pkg := range map[string]string{"fencedsql-schema": "github.com/fencedsql/fencedsql/fencedsql/cmd/fencedsql-schema",
		"lockfloor": "github.com/fencedsql/fencedsql/lockclient/cmd/lockfloor"} {
		if out, err := exec.CommandContext(ctx, "go", "build", "-o", filepath.Join(bin, name), pkg).CombinedOutput(); err != nil {
			t.Fatalf("go build %s: %v\n%s", name, err, out)
		}
	}
	return append(os.Environ(), "FENCEDSQL_LOCKFLOOR="+filepath.Join(bin, "lockfloor"),
		"FENCEDSQL_SCHEMA="+filepath.Join(bin, "fencedsql-schema"), "FENCEDSQL_FLOOR_ATTEMPTS=1")
}

// TestRestoreForgetsLockServiceSwitchRaise (red-team rt59c F2, restore form): sqllock's
// lease table lives in the guarded PostgreSQL database. The application ran on Redis
// (tokens ≈ the clock in µs); a backup was taken; the application was switched to
// sqllock by the README's procedure (sqllock raised above Redis's retirement answer,
// last + 2^52); holder H1 got a token of sqllock and wrote. The database is restored
// from the backup: its token sequence forgot the switch's raise, which no grant-sized
// margin covers, and its rows still carry the Redis-era tokens. The documented step,
// deploy/failover/raise-floor.sh run against sqllock on the restored database:
//
//   - with the switch's answer recorded outside the database and applied
//     (FENCEDSQL_FLOOR_AT_LEAST): H1's late write (its lease granted after the
//     backup) is refused by the floor, and sqllock's next grant H2 is above H1's
//     token and writes;
//   - without it: the hook still lifts sqllock above every token the restored database
//     holds (fencedsql-schema -max-token + the margin), so H2 is above the Redis-era
//     tokens and is not fenced on the rows written before the switch. H1's token,
//     which nothing left in the database shows, is the open finding (design.md, Known
//     open findings): it is logged, not asserted.
//
// Before the fix the hook raised sqllock to its restored LastToken + 2^32: H2 was
// fenced on every restored row and H1 wrote over it.
func TestRestoreForgetsLockServiceSwitchRaise(t *testing.T) {
	if _, err := exec.LookPath("bash"); err != nil {
		t.Skip("bash not installed")
	}
	admin := testdb.NeedServer(t, testdb.EnvPostgres, "PostgreSQL")
	testdb.NeedServer(t, testdb.EnvRedis, "Redis")
	ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
	defer cancel()
	hookEnv := hookBinaries(ctx, t)
	t.Run("recorded answer applied", func(t *testing.T) { restoreAcrossSwitch(ctx, t, admin, hookEnv, true) })
	t.Run("no recorded answer", func(t *testing.T) { restoreAcrossSwitch(ctx, t, admin, hookEnv, false) })
}

func restoreAcrossSwitch(ctx context.Context, t *testing.T, admin string, hookEnv []string, recorded bool) {
	dsn := testdb.Postgres(t)
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	orig := strings.TrimPrefix(u.Path, "/")
	backup := "bk_" + orig[max(0, len(orig)-40):] // within PostgreSQL's 63 bytes
	adm, err := sql.Open("pgx", admin)
	if err != nil {
		t.Fatal(err)
	}
	defer adm.Close()
	t.Cleanup(func() {
		adm.ExecContext(context.Background(), `DROP DATABASE IF EXISTS "`+backup+`" WITH (FORCE)`) //nolint:errcheck
	})

	// The guarded table, its guard and sqllock's lease table (a migration).
	raw := testdb.Open(t, "pgx", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance) VALUES (1, 0), (2, 0)")
	testdb.Exec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	if err := sqllock.CreateTable(ctx, raw, sqllock.Postgres, sqllock.DefaultTable); err != nil {
		t.Fatal(err)
	}
	app, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()
	write := func(db *sql.DB, ctx context.Context, id int) error {
		_, err := db.ExecContext(ctx, "UPDATE accounts SET balance = balance + 1 WHERE id = $1", id)
		return err
	}

	// The application on Redis writes both accounts.
	addr, prefix := testdb.Redis(t)
	rc := redis.NewClient(&redis.Options{Addr: addr})
	defer rc.Close()
	oldSvc := lockclient.New(redislock.New(rc, redislock.WithPrefix(prefix)), lockclient.WithTTL(30*time.Second))
	defer oldSvc.Close(context.Background())
	l0, err := oldSvc.Acquire(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	for _, id := range []int{1, 2} {
		if err := write(app, fencedsql.WithLease(ctx, l0), id); err != nil {
			t.Fatal(err)
		}
	}
	if err := l0.Release(ctx); err != nil {
		t.Fatal(err)
	}

	// The backup: a physical copy (every connection closed for it).
	app.Close()
	raw.Close()
	if _, err := adm.ExecContext(ctx, `CREATE DATABASE "`+backup+`" TEMPLATE "`+orig+`"`); err != nil {
		t.Fatalf("backup: %v", err)
	}
	raw = testdb.Open(t, "pgx", dsn)
	app, err = sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer app.Close()

	// The switch Redis → sqllock; its answer is recorded outside the database. H1 writes.
	sb, err := sqllock.New(raw)
	if err != nil {
		t.Fatal(err)
	}
	newSvc := lockclient.New(sb, lockclient.WithTTL(30*time.Second))
	answer, err := switchLockServiceAnswer(ctx, raw, oldSvc, newSvc)
	if err != nil {
		t.Fatalf("switch: %v", err)
	}
	h1, err := newSvc.Acquire(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	t1 := h1.Token()
	if err := write(app, fencedsql.WithLease(ctx, h1), 1); err != nil {
		t.Fatalf("H1 (token %d) on the switched service: %v", t1, err)
	}

	// The restore, then the hook on the restored database, for sqllock.
	app.Close()
	raw.Close()
	newSvc.Close(context.Background()) //nolint:errcheck // its sessions were on the lost database
	if _, err := adm.ExecContext(ctx, `DROP DATABASE "`+orig+`" WITH (FORCE)`); err != nil {
		t.Fatal(err)
	}
	if _, err := adm.ExecContext(ctx, `ALTER DATABASE "`+backup+`" RENAME TO "`+orig+`"`); err != nil {
		t.Fatal(err)
	}
	raw2 := testdb.Open(t, "pgx", dsn)
	restoredMax, err := schema.MaxToken(ctx, raw2, postgres.Dialect)
	if err != nil {
		t.Fatal(err)
	}
	env := append(append([]string{}, hookEnv...), "FENCEDSQL_FLOOR_DSN="+dsn, "FENCEDSQL_LOCK_DSN="+dsn,
		"FENCEDSQL_LOCKFLOOR_ARGS=-backend postgres -dsn-env FENCEDSQL_LOCK_DSN")
	if recorded {
		env = append(env, "FENCEDSQL_FLOOR_AT_LEAST="+strconv.FormatUint(answer, 10))
	}
	out, code := runHook(t, env, "raise-floor.sh", "postgres")
	if code != 0 {
		t.Fatalf("raise-floor.sh on the restored database: exit %d\n%s", code, out)
	}
	floor, err := schema.TokenFloor(ctx, raw2, postgres.Dialect)
	if err != nil {
		t.Fatal(err)
	}

	// The application restarts on sqllock: H1 writes late to account 2, and H2.
	app2, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer app2.Close()
	sb2, err := sqllock.New(raw2)
	if err != nil {
		t.Fatal(err)
	}
	svc2 := lockclient.New(sb2, lockclient.WithTTL(30*time.Second))
	defer svc2.Close(context.Background())
	h2, err := svc2.Acquire(ctx, "acct")
	if err != nil {
		t.Fatal(err)
	}
	defer h2.Release(context.Background()) //nolint:errcheck
	t2 := h2.Token()
	var errLate, errH2 error
	if recorded {
		errLate = write(app2, fencedsql.WithToken(ctx, t1), 2)
		errH2 = write(app2, fencedsql.WithLease(ctx, h2), 2)
	} else { // H1's late write is the open finding: H2 first, on a row written before the switch
		errH2 = write(app2, fencedsql.WithLease(ctx, h2), 2)
		errLate = write(app2, fencedsql.WithToken(ctx, t1), 2)
	}
	t.Logf("Redis-era token %d (the restored database's highest token %d); switch answer %d; H1 token %d; after the hook: floor %d, H2 token %d (write: %v); H1's late write: %v",
		l0.Token(), restoredMax, answer, t1, floor, t2, errH2, errLate)
	if t2 <= restoredMax || floor <= restoredMax+lockclient.DefaultFailoverMargin {
		t.Errorf("after the hook sqllock granted token %d and the floor is %d: not above token %d the restored database holds (+ the margin)", t2, floor, restoredMax)
	}
	if errH2 != nil {
		t.Errorf("the new holder H2 (token %d) on a row written before the switch: %v; want it written", t2, errH2)
	}
	if !recorded {
		return
	}
	if t2 <= t1 || floor <= t1 {
		t.Errorf("with the switch's answer %d applied, sqllock granted token %d (floor %d): not above token %d it granted before the restore", answer, t2, floor, t1)
	}
	if !errors.Is(errLate, fencedsql.ErrBelowFloor) {
		t.Errorf("H1 (token %d, its lease granted after the backup) wrote after the restore procedure: %v; want ErrBelowFloor", t1, errLate)
	}
}
