package postgres_test

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestPartitionAttachDetachRefused (red-team rt34a F3): TRUNCATE of a guarded table or
// of its partition is refused whatever WithDDL says (it removes rows without the row
// triggers: no tombstones), and so are ALTER TABLE … DETACH PARTITION and ATTACH
// PARTITION, which move rows out of and into the guarded table without any row trigger
// either. Through a pool with fenced_allow=ddl and no token they brought key 2, deleted
// under token 40, back at token 30 (a table holding it attached) and took key 1 out
// with no tombstone. Now each is refused with ErrUnsupported and nothing changes;
// partition maintenance belongs on a plain connection of the migration role.
func TestPartitionAttachDetachRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := guardedWith(t, ctx, dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) PARTITION BY RANGE (id)",
		"CREATE TABLE accounts_p1 PARTITION OF accounts FOR VALUES FROM (0) TO (1000)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 5, 10, 1), (2, 5, 10, 1)")
	fenced := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts")+"&fenced_allow=ddl")
	for _, q := range []string{"UPDATE accounts SET balance = 1 WHERE id IN (1, 2)", "DELETE FROM accounts WHERE id = 2"} {
		if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 40), q); err != nil {
			t.Fatalf("%s under 40: %v", q, err)
		}
	}
	// Controls: TRUNCATE of the table or its partition is refused under WithDDL.
	for _, q := range []string{"TRUNCATE accounts", "TRUNCATE accounts_p1"} {
		if _, err := fenced.ExecContext(ctx, q); err == nil {
			t.Fatalf("control: %s passed", q)
		}
	}
	for _, q := range []string{
		"CREATE TABLE swap (LIKE accounts INCLUDING ALL)",
		"INSERT INTO swap (id, balance, fence_token, version) VALUES (2, 666, 30, 1)", // an unguarded table
	} {
		if _, err := fenced.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	for _, q := range []string{
		"ALTER TABLE accounts DETACH PARTITION accounts_p1",
		"ALTER TABLE accounts ATTACH PARTITION swap FOR VALUES FROM (1000) TO (2000)",
		"ALTER TABLE swap INHERIT accounts",
	} {
		if _, err := fenced.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s through the pool (fenced_allow=ddl): %v; want ErrUnsupported", q, err)
		}
	}
	// Even were the detach sent, the attach must not bring key 2 back.
	testdb.Exec(t, raw, "ALTER TABLE accounts DETACH PARTITION accounts_p1")
	if _, err := fenced.ExecContext(ctx, "ALTER TABLE accounts ATTACH PARTITION swap FOR VALUES FROM (0) TO (1000)"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("ATTACH PARTITION of a table holding a deleted key: %v; want ErrUnsupported", err)
	}
	testdb.Exec(t, raw, "ALTER TABLE accounts ATTACH PARTITION accounts_p1 FOR VALUES FROM (0) TO (1000)")
	var back, gone int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FILTER (WHERE id = 2), count(*) FILTER (WHERE id = 1) FROM accounts").Scan(&back, &gone); err != nil {
		t.Fatal(err)
	}
	if back != 0 || gone != 1 {
		t.Errorf("DETACH/ATTACH PARTITION through the fenced pool (fenced_allow=ddl): key 2, deleted under 40, is back at token 30 (%d row), key 1 written under 40 left without a tombstone (%d left, want 1); want both refused like TRUNCATE", back, gone)
	}
}

// TestPartitionCreatedThroughThePoolRefused (red-team rt34d F5): a pool with
// fenced_allow=ddl guarding the partitioned accounts ran CREATE TABLE accounts_p2
// PARTITION OF accounts; its guarded names (the descendants, read at its first
// connection) were not read again, and a write naming accounts_p2 — under a stale token
// or none — went out unfenced. Such DDL (PARTITION OF, INHERITS, ATTACH PARTITION of a
// new table) is refused through the pool whatever WithDDL says, with ErrUnsupported and
// nothing created: partitions are made on a plain connection, before the pools that
// write them open (design.md G9, "A partition is its table").
func TestPartitionCreatedThroughThePoolRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn,
		`CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) PARTITION BY RANGE (id)`,
		`CREATE TABLE accounts_p1 PARTITION OF accounts FOR VALUES FROM (0) TO (100)`,
		`INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts&fenced_allow=ddl")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"CREATE TABLE accounts_p2 PARTITION OF accounts FOR VALUES FROM (100) TO (200)",
		"CREATE TABLE accounts_p2 (LIKE accounts) INHERITS (accounts)",
	} {
		if _, err := db.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s through the pool (fenced_allow=ddl): %v; want ErrUnsupported (a relative this pool would not guard by its name)", q, err)
		}
	}
	var made bool
	if err := raw.QueryRowContext(ctx, "SELECT to_regclass('accounts_p2') IS NOT NULL").Scan(&made); err != nil {
		t.Fatal(err)
	}
	if made {
		t.Errorf("accounts_p2 was created through the fenced pool; want nothing sent")
	}
	// Unrelated DDL still passes under fenced_allow=ddl.
	if _, err := db.ExecContext(ctx, "CREATE TABLE swap (LIKE accounts INCLUDING ALL)"); err != nil {
		t.Errorf("CREATE TABLE swap (LIKE accounts): %v", err)
	}
}
