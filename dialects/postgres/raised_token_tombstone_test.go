package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// A transaction that fenced a row under one lease and deleted it after a later lease
// raised its token ("Only a lease raises a transaction's token") — by an ON DELETE
// CASCADE from a parent, or by a cross-partition UPDATE, which PostgreSQL runs as a
// DELETE and an INSERT — records the row's tombstone at no less than the raised token
// (docs/design.md G9; red-team rt59b F2, F3: it recorded the row's stamp, and a holder
// of a token in between re-created the key).

// raisedSetup: acc (plain), accp (partitioned: accp_lo [0,1000), accp_hi [1000,
// 100000)), par (plain) and kid (ON DELETE CASCADE to par), all guarded with
// tombstones; a pool over the four.
func raisedSetup(t *testing.T) (raw, db *sql.DB) {
	t.Helper()
	dsn := testdb.Postgres(t)
	cols := fencetest.FencedColumns
	raw = rawWith(t, dsn, append([]string{
		"CREATE TABLE acc (id bigint PRIMARY KEY, " + cols + ")",
		"CREATE TABLE accp (id bigint PRIMARY KEY, " + cols + ") PARTITION BY RANGE (id)",
		"CREATE TABLE accp_lo PARTITION OF accp FOR VALUES FROM (0) TO (1000)",
		"CREATE TABLE accp_hi PARTITION OF accp FOR VALUES FROM (1000) TO (100000)"},
		fencetest.ParKidTables()...)...)
	for _, tb := range []string{"acc", "accp", "par", "kid"} {
		checkTable(t, raw, dsn, tb)
	}
	return raw, testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc,accp,par,kid")
}

func TestCrossPartitionMoveTombstoneTakesRaisedToken(t *testing.T) {
	raw, db := raisedSetup(t)
	l1, l2, l3 := fencetest.ThreeLeases(t, memlock.New(), "move")
	testdb.Exec(t, raw, "INSERT INTO accp (id) VALUES (8)")
	ctx := context.Background()
	tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	// the documented workaround for a cross-partition move: a fenced no-op UPDATE first
	if _, err := tx.ExecContext(fencedsql.WithLease(ctx, l1), "UPDATE accp SET balance = balance WHERE id = 8"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(fencedsql.WithLease(ctx, l3), "UPDATE accp SET id = 5000 WHERE id = 8"); err != nil {
		t.Fatalf("move under the joined lease: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var tomb uint64
	if err := raw.QueryRow("SELECT fence_token FROM fencedsql_tomb_accp WHERE id = 8").Scan(&tomb); err != nil || tomb < l3.Token() {
		t.Errorf("tombstone of key 8 moved away under %d: %d (%v), want at least %d", l3.Token(), tomb, err, l3.Token())
	}
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, l2), "INSERT INTO accp (id) VALUES (8)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("INSERT of key 8 under %d, between the fence's %d and the move's %d: %v, want ErrFenced", l2.Token(), l1.Token(), l3.Token(), err)
	}
}

func TestCascadeDeleteTombstoneTakesRaisedToken(t *testing.T) {
	raw, db := raisedSetup(t)
	l1, l2, l3 := fencetest.ThreeLeases(t, memlock.New(), "cascade")
	testdb.Exec(t, raw, "INSERT INTO par (id) VALUES (8)", "INSERT INTO kid (id, pid) VALUES (1, 8)")
	ctx := context.Background()
	tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(fencedsql.WithLease(ctx, l1), "UPDATE kid SET balance = balance WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(fencedsql.WithLease(ctx, l3), "DELETE FROM par WHERE id = 8"); err != nil {
		t.Fatalf("DELETE of the parent under the joined lease: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	var tomb uint64
	if err := raw.QueryRow("SELECT fence_token FROM fencedsql_tomb_kid WHERE id = 1").Scan(&tomb); err != nil || tomb < l3.Token() {
		t.Errorf("tombstone of kid 1 deleted by a cascade under %d: %d (%v), want at least %d", l3.Token(), tomb, err, l3.Token())
	}
	if _, err := db.ExecContext(fencedsql.WithLease(ctx, l2), "INSERT INTO kid (id, pid) VALUES (1, NULL)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("INSERT of kid 1 under %d, between the fence's %d and the cascade's %d: %v, want ErrFenced", l2.Token(), l1.Token(), l3.Token(), err)
	}
}

// TestDeletionUnderRaisedTokenGenerated: every deletion kind the pool lets a
// transaction make (a cascade from a parent, a cross-partition move, the one- and the
// two-statement DELETE, the one-statement DELETE of a partitioned table) of a row it fenced first under
// l1, made under l3 (a lease joined and raised the transaction) or under l1 again; in a
// transaction begun under l1 or without a binding; with or without a savepoint
// statement, a statement under the deleting lease and a rollback to the savepoint between
// (the rollback reverts the token recorded inside the savepoint). Oracle:
// raised, the key's tombstone holds at least l3 and an INSERT of the key under l2 (in
// between) is ErrFenced; not raised, the tombstone holds l1 and the INSERT under l2
// goes through (no over-refusal).
func TestDeletionUnderRaisedTokenGenerated(t *testing.T) {
	raw, db := raisedSetup(t)
	svc := memlock.New()
	ctx := context.Background()
	type kind struct {
		name, table, fence, del string
		setup                   []string
	}
	kinds := []kind{
		{"cascade", "kid", "UPDATE kid SET balance = balance WHERE id = %[1]d", "DELETE FROM par WHERE id = %[1]d",
			[]string{"INSERT INTO par (id) VALUES (%[1]d)", "INSERT INTO kid (id, pid) VALUES (%[1]d, %[1]d)"}},
		{"move", "accp", "UPDATE accp SET balance = balance WHERE id = %[1]d", "UPDATE accp SET id = %[1]d + 10000 WHERE id = %[1]d",
			[]string{"INSERT INTO accp (id) VALUES (%[1]d)"}},
		{"one-statement", "acc", "UPDATE acc SET balance = balance WHERE id = %[1]d", "DELETE FROM acc WHERE id = %[1]d",
			[]string{"INSERT INTO acc (id) VALUES (%[1]d)"}},
		{"two-statement", "acc", "UPDATE acc SET balance = balance WHERE id = %[1]d", "DELETE FROM acc WHERE id IN (SELECT %[1]d)",
			[]string{"INSERT INTO acc (id) VALUES (%[1]d)"}},
		{"partitioned", "accp", "UPDATE accp SET balance = balance WHERE id = %[1]d", "DELETE FROM accp WHERE id = %[1]d",
			[]string{"INSERT INTO accp (id) VALUES (%[1]d)"}},
	}
	key := 100
	for _, k := range kinds {
		for _, raised := range []bool{true, false} {
			for _, bound := range []bool{true, false} {
				for _, savepoint := range []bool{false, true} {
					key++
					name := fmt.Sprintf("%s/raised=%v/bound=%v/savepoint=%v", k.name, raised, bound, savepoint)
					for _, q := range k.setup {
						testdb.Exec(t, raw, fmt.Sprintf(q, key))
					}
					l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("gen%d", key))
					del := l1
					if raised {
						del = l3
					}
					begin := ctx
					if bound {
						begin = fencedsql.WithLease(ctx, l1)
					}
					tx, err := db.BeginTx(begin, nil)
					if err != nil {
						t.Fatal(err)
					}
					type step struct {
						l *lockclient.Lease
						q string
					}
					steps := []step{{l1, fmt.Sprintf(k.fence, key)}}
					if savepoint {
						// the raise recorded inside the savepoint, and reverted with it
						steps = append(steps, step{l1, "SAVEPOINT s"}, step{del, "SELECT 1"}, step{del, "ROLLBACK TO SAVEPOINT s"})
					}
					steps = append(steps, step{del, fmt.Sprintf(k.del, key)})
					for _, s := range steps {
						if _, err := tx.ExecContext(fencedsql.WithLease(ctx, s.l), s.q); err != nil {
							_ = tx.Rollback()
							t.Fatalf("%s: %s under %d: %v", name, s.q, s.l.Token(), err)
						}
					}
					if err := tx.Commit(); err != nil {
						t.Fatalf("%s: commit: %v", name, err)
					}
					var tomb uint64
					if err := raw.QueryRow(fmt.Sprintf("SELECT fence_token FROM fencedsql_tomb_%s WHERE id = %d", k.table, key)).Scan(&tomb); err != nil {
						t.Fatalf("%s: tombstone: %v", name, err)
					}
					ins := fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", k.table, key)
					_, err = db.ExecContext(fencedsql.WithLease(ctx, l2), ins)
					switch {
					case raised && (tomb < l3.Token() || !errors.Is(err, fencedsql.ErrFenced)):
						t.Errorf("%s: deleted under %d after fenced under %d: tombstone %d; %s under %d: %v, want a tombstone of at least %d and ErrFenced",
							name, l3.Token(), l1.Token(), tomb, ins, l2.Token(), err, l3.Token())
					case !raised && (tomb != l1.Token() || err != nil):
						t.Errorf("%s: deleted under %d: tombstone %d; %s under %d: %v, want a tombstone of %d and the INSERT through",
							name, l1.Token(), tomb, ins, l2.Token(), err, l1.Token())
					}
				}
			}
		}
	}
}
