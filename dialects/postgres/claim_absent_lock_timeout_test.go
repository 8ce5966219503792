package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// TestClaimOfAbsentKeyUnderCallerLockTimeout (red-team rt62a F1): a claim of an absent
// key while an older holder's INSERT of it is uncommitted, in a session whose
// lock_timeout is short. The plain locking read returns no row at once; the claim's
// record waits for the INSERT (its tombstone check's placeholder), and when the
// caller's lock_timeout runs out there the claim fails with ErrClaimConflict (retry
// the transaction), wrapping the server's 55P03 — it was the raw 55P03 — in every
// isolation level, on a plain and a partitioned table, for a key never seen and one
// with an older tombstone. A NOWAIT claim (on the plain table) keeps the server's own 55P03 (as the NOWAIT
// read's failure on a locked row).
func TestClaimOfAbsentKeyUnderCallerLockTimeout(t *testing.T) {
	dsn := testdb.Postgres(t)
	cols := fencetest.FencedColumns
	raw := rawWith(t, dsn,
		"CREATE TABLE acc (id bigint PRIMARY KEY, "+cols+")",
		"CREATE TABLE accp (id bigint PRIMARY KEY, "+cols+") PARTITION BY RANGE (id)",
		"CREATE TABLE accp_lo PARTITION OF accp FOR VALUES FROM (0) TO (100000)")
	for _, tb := range []string{"acc", "accp"} {
		checkTable(t, raw, dsn, tb)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc,accp")
	short := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc,accp&options=-c%20lock_timeout%3D100ms")
	svc := memlock.New()
	ctx := context.Background()
	n := 0
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
		for _, tb := range []string{"acc", "accp"} {
			for _, tombstoned := range []bool{false, true} {
				for _, nowait := range []bool{false, true} {
					if nowait && tb == "accp" {
						continue // NOWAIT on a partitioned table: ErrUnsupported (a claim by row locator)
					}
					n++
					key := 900 + n
					name := fmt.Sprintf("%v/%s/tombstoned=%v/nowait=%v", iso, tb, tombstoned, nowait)
					t.Run(name, func(t *testing.T) {
						l0, l1, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("lt%d", key))
						if tombstoned {
							testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", tb, key))
							if _, err := db.ExecContext(fencedsql.WithLease(ctx, l0), fmt.Sprintf("DELETE FROM %s WHERE id = %d", tb, key)); err != nil {
								t.Fatal(err)
							}
						}
						c1 := fencedsql.WithLease(ctx, l1)
						older, err := db.BeginTx(c1, nil)
						if err != nil {
							t.Fatal(err)
						}
						defer older.Rollback() //nolint:errcheck
						if _, err := older.ExecContext(c1, fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", tb, key)); err != nil {
							t.Fatal(err)
						}
						c3 := fencedsql.WithLease(ctx, l3)
						tx, err := short.BeginTx(c3, &sql.TxOptions{Isolation: iso})
						if err != nil {
							t.Fatal(err)
						}
						defer tx.Rollback() //nolint:errcheck
						q := fmt.Sprintf("SELECT id FROM %s WHERE id = %d FOR UPDATE", tb, key)
						if nowait {
							q += " NOWAIT"
						}
						var id int64
						err = tx.QueryRowContext(c3, q).Scan(&id)
						var pe *pgconn.PgError
						if !errors.As(err, &pe) || pe.Code != "55P03" {
							t.Fatalf("claim: %v; want the server's 55P03 inside", err)
						}
						if conflict := errors.Is(err, fencedsql.ErrClaimConflict); conflict == nowait {
							t.Errorf("claim: %T %v; want ErrClaimConflict %v", err, err, !nowait)
						}
					})
				}
			}
		}
	}
}

// TestClaimKeyProbeUnderCallerLockTimeout (red-team rt63a F2): a claim whose WHERE pins
// the key and has another conjunct (`id = K AND balance = 5`) of a row that does not
// meet it, while another transaction locks the row (a plain reader FOR UPDATE, an older
// holder's fenced DELETE or claim). The plain locking read returns no row at once; the
// claim stamps nothing and probes whether the key's row exists (keyPresent, FOR KEY
// SHARE), which waits for that lock. When the caller's lock_timeout runs out there the
// claim fails with ErrClaimConflict wrapping the 55P03 (it was the raw 55P03); under
// NOWAIT the server's 55P03 stands.
func TestClaimKeyProbeUnderCallerLockTimeout(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, "+fencetest.FencedColumns+")")
	checkTable(t, raw, dsn, "acc")
	short := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&options=-c%20lock_timeout%3D100ms")
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	svc := memlock.New()
	ctx := context.Background()
	n := 0
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
		for _, holder := range []struct{ name, stmt string }{
			{"plain reader", "SELECT id FROM acc WHERE id = %d FOR UPDATE"},
			{"fenced DELETE", "DELETE FROM acc WHERE id = %d"},
			{"fenced claim", "SELECT id FROM acc WHERE id = %d FOR UPDATE"},
		} {
			for _, nowait := range []bool{false, true} {
				n++
				key := 5000 + n
				t.Run(fmt.Sprintf("%v/%s/nowait=%v", iso, holder.name, nowait), func(t *testing.T) {
					testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO acc (id, balance) VALUES (%d, 0)", key))
					_, l1, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("kp%d", key))
					hdb, hctx := raw, ctx
					if holder.name != "plain reader" {
						hdb, hctx = db, fencedsql.WithLease(ctx, l1)
					}
					other, err := hdb.BeginTx(hctx, nil)
					if err != nil {
						t.Fatal(err)
					}
					defer other.Rollback() //nolint:errcheck
					if _, err := other.ExecContext(hctx, fmt.Sprintf(holder.stmt, key)); err != nil {
						t.Fatal(err)
					}
					q := fmt.Sprintf("SELECT id FROM acc WHERE id = %d AND balance = 5 FOR UPDATE", key)
					if nowait {
						q += " NOWAIT"
					}
					c3 := fencedsql.WithLease(ctx, l3)
					tx, err := short.BeginTx(c3, &sql.TxOptions{Isolation: iso})
					if err != nil {
						t.Fatal(err)
					}
					defer tx.Rollback() //nolint:errcheck
					var id int64
					err = tx.QueryRowContext(c3, q).Scan(&id)
					var pe *pgconn.PgError
					if !errors.As(err, &pe) || pe.Code != "55P03" {
						t.Fatalf("claim: %v; want the server's 55P03 inside", err)
					}
					if conflict := errors.Is(err, fencedsql.ErrClaimConflict); conflict == nowait {
						t.Errorf("claim: %T %v; want ErrClaimConflict %v", err, err, !nowait)
					}
				})
			}
		}
	}
}
