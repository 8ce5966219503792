package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Red-team rt45b F7: a claim of an absent key through a partition's name (the wrapper
// guards it as its root, "A partition is its table") recorded nothing: the recorder
// was looked up as fencedsql_tombclaim_<partition>, which does not exist (the tombstone
// guard is the root's, its triggers cloned onto the partition), and a missing recorder
// meant "claim nothing", silently. Now the root's recorder records it (or the claim is
// refused), and an older holder's INSERT of the key is fenced.
func TestAbsentClaimThroughPartitionRecordedByRoot(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id)",
		"CREATE TABLE acc_p1 PARTITION OF acc FOR VALUES FROM (0) TO (100)")
	checkAcc(t, raw, dsn)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	for i, q := range []string{"SELECT id FROM acc_p1 WHERE id = $1 FOR UPDATE", "SELECT id FROM public.acc_p1 WHERE id = $1 FOR UPDATE"} {
		key := 7 + i
		ctx := fencedsql.WithToken(context.Background(), 60)
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		cerr := tx.QueryRowContext(ctx, q, key).Scan(&id)
		if !errors.Is(cerr, sql.ErrNoRows) {
			_ = tx.Rollback()
			if !errors.Is(cerr, fencedsql.ErrUnsupported) {
				t.Errorf("%s (key %d): %v, want sql.ErrNoRows (recorded) or ErrUnsupported", q, key, cerr)
			}
			continue
		}
		if err := tx.Commit(); err != nil {
			t.Fatal(err)
		}
		if err := insertAs(db, 40, "INSERT INTO acc (id) VALUES ($1)", key); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("%s (key %d) under 60 claimed the key absent; INSERT of it under 40 afterwards: %v, want ErrFenced (or the claim refused)", q, key, err)
		}
	}
}

// A table whose tombstone triggers are there but whose recorder is not (dropped, or
// the root's of a partition) refuses a claim of an absent key with ErrUnsupported
// instead of recording nothing (red-team rt45b F7, the general case).
func TestAbsentClaimWithoutRecorderRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id)",
		"CREATE TABLE acc_p1 PARTITION OF acc FOR VALUES FROM (0) TO (100)")
	checkAcc(t, raw, dsn)
	rawWith(t, dsn, "DROP FUNCTION public.fencedsql_tombclaim_acc(bigint, bigint, boolean)")
	for _, q := range []string{"SELECT id FROM acc_p1 WHERE id = $1 FOR UPDATE", "SELECT id FROM acc WHERE id = $1 FOR UPDATE"} {
		pool := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
		ctx := fencedsql.WithToken(context.Background(), 60)
		tx, err := pool.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		var id int64
		cerr := tx.QueryRowContext(ctx, q, 7).Scan(&id)
		_ = tx.Rollback()
		if !errors.Is(cerr, fencedsql.ErrUnsupported) && !errors.Is(cerr, fencedsql.ErrSchema) {
			t.Errorf("%s without the root's recorder: %v, want ErrUnsupported (or the table refused, ErrSchema)", q, cerr)
		}
	}
}
