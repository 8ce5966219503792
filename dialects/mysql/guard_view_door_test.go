package mysql_test

import (
	"context"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestViewOverTombstoneTableIsGuardDoor: an updatable view over the tombstone table
// let the fenced pool erase every tombstone (DELETE FROM view), and a stale holder
// re-created a key deleted under token 50 under token 40 (red-team rt40a F2). Now
// schema.Check reports the view as a guard-table door, with ALGORITHM=TEMPTABLE as
// its fix; the pool refuses the write through the view (ErrUnsupported), also before
// any guarded write, and a view over that view too; the lazy check refuses the
// table's guarded writes (ErrSchema) while the view is updatable. After the fix the
// view still reads, the pool writes again, and the tombstone still refuses token 40.
func TestViewOverTombstoneTableIsGuardDoor(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE acc (id INT NOT NULL PRIMARY KEY, v INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "acc"})
	testdb.Exec(t, raw,
		"INSERT INTO acc (id, v, fence_token) VALUES (2, 1, 50)",
		"DELETE FROM acc WHERE id = 2", // tombstone of key 2 at 50
		"CREATE VIEW tomb_view AS SELECT * FROM fencedsql_tomb_acc",
		"CREATE VIEW tomb_view2 AS SELECT * FROM tomb_view")
	p := checkProblems(t, ctx, raw, "acc")
	for _, v := range []string{"tomb_view", "tomb_view2"} {
		if !strings.Contains(p, "."+v+" reaches the tombstone table") {
			t.Errorf("schema.Check does not report %s; problems:\n%s", v, p)
		}
	}
	if !strings.Contains(p, "fencedsql_tomb_acc") {
		t.Errorf("schema.Check does not name the tombstone table; problems:\n%s", p)
	}

	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acc")
	for _, q := range []string{"DELETE FROM tomb_view", "DELETE FROM tomb_view2", "UPDATE tomb_view SET fence_token = 0",
		"REPLACE INTO tomb_view (id, fence_token, deleted_at) VALUES (2, 0, NOW())"} {
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s through the fenced pool: %v; want ErrUnsupported", q, err)
		}
	}
	ddl := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acc&fenced_allow=ddl")
	if _, err := ddl.ExecContext(ctx, "CREATE VIEW tomb_view3 AS SELECT * FROM tomb_view"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("CREATE VIEW over the view through a DDL pool: %v; want ErrUnsupported", err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 60), "INSERT INTO acc (id, v) VALUES (1, 1)"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("guarded INSERT with an updatable view over the tombstone table: %v; want ErrSchema", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM fencedsql_tomb_acc").Scan(&n); err != nil || n != 1 {
		t.Fatalf("tombstones: %d (%v); want 1", n, err)
	}

	fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "acc"}) // ALGORITHM=TEMPTABLE
	if p := checkProblems(t, ctx, raw, "acc"); p != "" {
		t.Errorf("schema.Check after the fix:\n%s", p)
	}
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM tomb_view2").Scan(&n); err != nil || n != 1 {
		t.Errorf("the view after the fix reads %d (%v); want 1", n, err)
	}
	fresh := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acc")
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 60), "INSERT INTO acc (id, v) VALUES (1, 1)"); err != nil {
		t.Errorf("guarded INSERT after the fix: %v", err)
	}
	if _, err := fresh.ExecContext(fencedsql.WithToken(ctx, 40), "INSERT INTO acc (id, v) VALUES (2, 9)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale INSERT of the key deleted under token 50: %v; want ErrFenced", err)
	}
}

// TestViewOverFloorIsGuardDoor: the same door over the token floor (red-team rt40a
// F2): with the floor at 45, UPDATE floor_view SET floor = 0 through the fenced pool
// lowered it and token 40 wrote again. Now the view is reported, the write through it
// refused (ErrUnsupported) and the floor stays 45.
func TestViewOverFloorIsGuardDoor(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE acc (id INT NOT NULL PRIMARY KEY, v INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fencetest.Guard(t, ctx, raw, mysql.Dialect, schema.GuardSpec{Table: "acc"})
	testdb.Exec(t, raw,
		"UPDATE fencedsql_floor SET floor = 45 WHERE id = 1",
		"CREATE VIEW floor_view AS SELECT * FROM fencedsql_floor")
	if p := checkProblems(t, ctx, raw, "acc"); !strings.Contains(p, "floor_view") || !strings.Contains(p, "token floor") {
		t.Errorf("schema.Check does not report the view over the floor; problems:\n%s", p)
	}
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=acc")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE floor_view SET floor = 0"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Errorf("UPDATE floor_view through the fenced pool: %v; want ErrUnsupported", err)
	}
	var floor int64
	if err := raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor").Scan(&floor); err != nil || floor != 45 {
		t.Errorf("floor %d (%v); want 45", floor, err)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "INSERT INTO acc (id, v) VALUES (1, 1)"); !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("guarded INSERT with an updatable view over the floor: %v; want ErrSchema", err)
	}
}
