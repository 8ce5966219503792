package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/stdlib"
)

// The relatives of a guarded table (partitions, inheritance children, parents and
// partitioned roots) are read at a pool's first connection; a running pool cannot
// start guarding a relative that appears later. A new inheritance parent or
// partitioned root gives the table's existing rows a second name: the lazy check reads
// the table's ancestors and stops the pool's writes when one is unguarded (red-team
// rt42b F1, fencedsql/relatives.go). Two guards of relatives on other columns are a
// contradictory configuration, refused when the pool opens (rt42b F2).

const relAccDDL = `CREATE TABLE acc (id int PRIMARY KEY, v int NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`

// relAccRow reads acc row id's v (-1: no such row).
func relAccRow(t *testing.T, ctx context.Context, raw *sql.DB, id int) int64 {
	t.Helper()
	v := int64(-1)
	if err := raw.QueryRowContext(ctx, "SELECT v FROM acc WHERE id = $1", id).Scan(&v); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return v
}

// TestAncestorAddedWhilePoolRunsStopsWrites: a migration makes the guarded table a
// child (ALTER TABLE acc INHERIT p) or a partition (ATTACH PARTITION) of a new table
// while a pool (WithSchemaRecheck(0), guard installed) runs. The next guarded write's
// check sees the unguarded ancestor: it and every later write, the stale one through
// the new parent included (whose `version = version + 1` shape the row guard accepts),
// are refused with ErrSchema; reads still pass; a pool opened now refuses the stale
// write through the parent (ErrFenced, or ErrSchema for an inheritance parent in a
// database with a token floor: its own rows carry no guard).
func TestAncestorAddedWhilePoolRunsStopsWrites(t *testing.T) {
	for _, c := range []struct{ name, create, attach string }{
		{"inherit", `CREATE TABLE rel_p (id int, v int, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`, `ALTER TABLE acc INHERIT rel_p`},
		{"attach-partition", `CREATE TABLE rel_p (id int NOT NULL, v int NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id)`, `ALTER TABLE rel_p ATTACH PARTITION acc FOR VALUES FROM (0) TO (1000)`},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn := testdb.Postgres(t)
			raw := testdb.Open(t, "pgx", dsn, relAccDDL, `INSERT INTO acc VALUES (1, 1, 10, 1), (2, 1, 10, 1)`)
			fencetest.Guard(t, ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc", TokenColumn: "fence_token", VersionColumn: "version"})
			db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn),
				fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("acc"), fencedsql.WithSchemaRecheck(0))
			defer db.Close()
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET v = 2 WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			testdb.Exec(t, raw, c.create, c.attach) // the migration, on its own connection
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "UPDATE acc SET v = 3 WHERE id = 2"); !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("guarded write after %q: %v; want ErrSchema naming rel_p", c.attach, err)
			}
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE rel_p SET v = 99, version = version + 1 WHERE id = 1")
			if !errors.Is(err, fencedsql.ErrSchema) || relAccRow(t, ctx, raw, 1) != 1 {
				t.Errorf("stale write through the new parent: %v, acc row 1 v=%d; want ErrSchema, row unchanged", err, relAccRow(t, ctx, raw, 1))
			}
			var n int
			if err := db.QueryRowContext(ctx, "SELECT count(*) FROM rel_p").Scan(&n); err != nil || n != 2 {
				t.Errorf("a read through the stopped pool: %d, %v; want 2 rows", n, err)
			}
			fresh := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn),
				fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("acc"))
			defer fresh.Close()
			// Refused either way: fenced by acc's row (token 10), or — an inheritance
			// parent, whose own rows no guard covers, in a database with a token floor —
			// refused as a table the floor does not reach (ErrSchema, floorguard.go).
			_, err = fresh.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE rel_p SET v = 99 WHERE id = 1")
			if !errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrSchema) || relAccRow(t, ctx, raw, 1) != 1 {
				t.Errorf("a pool opened after the migration: stale write through the parent: %v, acc row 1 v=%d; want ErrFenced or ErrSchema, row unchanged", err, relAccRow(t, ctx, raw, 1))
			}
		})
	}
}

// TestAncestorAddedWhilePoolRunsNoGuard: the same without the database-side guard (the
// wrapper alone): after the check saw the new parent, a stale UPDATE and DELETE through
// it are refused, and so is a statement naming it that was prepared before the check.
func TestAncestorAddedWhilePoolRunsNoGuard(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, relAccDDL, `INSERT INTO acc VALUES (1, 1, 10, 1), (2, 1, 10, 1), (3, 1, 10, 1)`)
	db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn),
		fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("acc"), fencedsql.WithSchemaRecheck(0))
	defer db.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET v = 2 WHERE id = 2"); err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, `CREATE TABLE rel_p (id int, v int, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`, `ALTER TABLE acc INHERIT rel_p`)
	conn, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	prepared, err := conn.PrepareContext(ctx, "UPDATE rel_p SET v = 77 WHERE id = 3") // before any check
	if err != nil {
		t.Fatal(err)
	}
	defer prepared.Close()
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE acc SET v = 3 WHERE id = 2"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Fatalf("guarded write after the migration: %v; want ErrSchema", err)
	}
	_, uerr := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE rel_p SET v = 99 WHERE id = 1")
	_, derr := db.ExecContext(fencedsql.WithToken(ctx, 5), "DELETE FROM rel_p WHERE id = 2")
	_, perr := prepared.ExecContext(fencedsql.WithToken(ctx, 5))
	for _, e := range []error{uerr, derr, perr} {
		if !errors.Is(e, fencedsql.ErrSchema) {
			t.Errorf("write through the new parent: %v; want ErrSchema", e)
		}
	}
	if v1, v2, v3 := relAccRow(t, ctx, raw, 1), relAccRow(t, ctx, raw, 2), relAccRow(t, ctx, raw, 3); v1 != 1 || v2 != 2 || v3 != 1 {
		t.Errorf("rows after the refused writes: v=%d, %d, %d; want 1, 2, 1", v1, v2, v3)
	}
}

// TestListedTableCreatedLaterAsPartitionStopsWrites: a pool with fenced_allow=ddl opened
// before its listed table exists (it refuses writes until it does) read no relatives of
// it. The migration creates it as a partition of a new root: the first write after
// that — a stale one naming the root — finds the table, reads its ancestors, and is
// refused with ErrSchema, as is every write after it.
func TestListedTableCreatedLaterAsPartitionStopsWrites(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&fenced_allow=ddl")
	if err := db.PingContext(ctx); err != nil { // first connection: acc missing, logged
		t.Fatal(err)
	}
	testdb.Exec(t, raw,
		`CREATE TABLE rel_root (id int NOT NULL, v int NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id)`,
		`CREATE TABLE acc PARTITION OF rel_root FOR VALUES FROM (0) TO (1000)`,
		`ALTER TABLE acc ADD PRIMARY KEY (id)`,
		`INSERT INTO acc VALUES (1, 1, 10, 1)`)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE rel_root SET v = 99 WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) || relAccRow(t, ctx, raw, 1) != 1 {
		t.Errorf("stale UPDATE of the new root: %v, acc row 1 v=%d; want ErrSchema, row unchanged", err, relAccRow(t, ctx, raw, 1))
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 20), "INSERT INTO acc (id, v) VALUES (2, 1)"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("guarded INSERT after the root was found: %v; want ErrSchema (the pool is stopped until reopened)", err)
	}
}

// TestRelativeGuardedOnOtherColumnsRefused: a table and its inheritance child, or its
// partition, or two parents of one child, guarded on other columns fence the same rows
// on other columns by each name (a stale write through one name overwrote a newer one
// made through the other). The pool refuses the configuration at its first connection
// with a *ConfigError; guarded on the same columns, it opens.
func TestRelativeGuardedOnOtherColumnsRefused(t *testing.T) {
	other := []fencedsql.GuardOption{fencedsql.TokenColumn("tok2"), fencedsql.VersionColumn("ver2")}
	for _, c := range []struct {
		name   string
		setup  []string
		guards []fencedsql.Option
	}{
		{"inheritance-child", []string{relAccDDL, `CREATE TABLE acc_c (tok2 bigint NOT NULL DEFAULT 0, ver2 bigint NOT NULL DEFAULT 0) INHERITS (acc)`},
			[]fencedsql.Option{fencedsql.Guard("acc"), fencedsql.Guard("acc_c", other...)}},
		{"partition-swapped-columns", []string{`CREATE TABLE acc (id int NOT NULL, v int NOT NULL, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0) PARTITION BY RANGE (id)`,
			`CREATE TABLE acc_p PARTITION OF acc FOR VALUES FROM (0) TO (1000)`},
			[]fencedsql.Option{fencedsql.Guard("acc"), fencedsql.Guard("acc_p", fencedsql.TokenColumn("version"), fencedsql.VersionColumn("fence_token"))}},
		{"two-parents-of-a-child", []string{relAccDDL, `CREATE TABLE acc2 (id int, v int, tok2 bigint NOT NULL DEFAULT 0, ver2 bigint NOT NULL DEFAULT 0)`,
			`CREATE TABLE acc_c (fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0) INHERITS (acc, acc2)`},
			[]fencedsql.Option{fencedsql.Guard("acc"), fencedsql.Guard("acc2", other...)}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn := testdb.Postgres(t)
			testdb.Open(t, "pgx", dsn, c.setup...)
			db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn),
				append([]fencedsql.Option{fencedsql.WithDialect(postgres.Dialect)}, c.guards...)...)
			defer db.Close()
			var ce *fencedsql.ConfigError
			if err := db.PingContext(ctx); !errors.As(err, &ce) {
				t.Errorf("relatives guarded on other columns: Ping = %v; want a *ConfigError", err)
			}
		})
	}
	t.Run("same-columns-open", func(t *testing.T) {
		ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
		defer cancel()
		dsn := testdb.Postgres(t)
		testdb.Open(t, "pgx", dsn, relAccDDL, `CREATE TABLE acc_c (tok2 bigint NOT NULL DEFAULT 0) INHERITS (acc)`)
		db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn),
			fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("acc"), fencedsql.Guard("acc_c"))
		defer db.Close()
		if err := db.PingContext(ctx); err != nil {
			t.Fatalf("parent and child guarded on the same columns: %v", err)
		}
	})
}
