package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The guards read the token floor from its copy in a sequence on their fast path and
// from the floor table otherwise (postgres.FloorSQLState). The copy follows every raise;
// a raise that rolls back leaves it above the floor, where the table decides (slower,
// same answer); without the copy every guarded write fails and schema.Check reports the
// guard as not installed.
func TestFloorCopy(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer raw.Close()
	exec := func(qs ...string) {
		t.Helper()
		for _, q := range qs {
			if _, err := raw.ExecContext(ctx, q); err != nil {
				t.Fatalf("%s: %v", q, err)
			}
		}
	}
	exec("CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	g := postgres.Dialect.(dialect.Guarder)
	exec(g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	write := func(tok uint64, q string, args ...any) error {
		_, err := db.ExecContext(fencedsql.WithToken(ctx, tok), q, args...)
		return err
	}
	copyOf := func() int64 {
		t.Helper()
		var v sql.NullInt64
		if err := raw.QueryRowContext(ctx, "SELECT pg_catalog.pg_sequence_last_value('fencedsql_floor_seq')").Scan(&v); err != nil || !v.Valid {
			t.Fatalf("the floor's copy: %v, %v", v, err)
		}
		return v.Int64
	}
	installed := func() bool {
		t.Helper()
		q, args := g.GuardInstalledQuery(dialect.TableName{Name: "accounts"})
		var n int
		if err := raw.QueryRowContext(ctx, q, args...).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	if !installed() || copyOf() != 0 {
		t.Fatalf("fresh guard: installed %v, copy %d", installed(), copyOf())
	}
	for id := 1; id <= 4; id++ {
		if err := write(10, "INSERT INTO accounts (id, balance) VALUES ($1, 0)", id); err != nil {
			t.Fatal(err)
		}
	}

	// The copy follows a raise.
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
		t.Fatal(err)
	}
	if copyOf() != 50 {
		t.Fatalf("copy after raising to 50: %d", copyOf())
	}
	if err := write(40, "UPDATE accounts SET balance = 1 WHERE id = 1"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("UPDATE under 40 below the floor 50: %v, want ErrBelowFloor", err)
	}
	if err := write(60, "UPDATE accounts SET balance = 1 WHERE id = 1"); err != nil {
		t.Fatalf("UPDATE under 60 above the floor: %v", err)
	}

	// A raise that rolls back: the copy stays at 100, the floor is 50; between them the
	// table decides — accepted — and below the floor refused, for every operation.
	tx, err := raw.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(ctx, "UPDATE fencedsql_floor SET floor = 100 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if f, err := schema.TokenFloor(ctx, raw, postgres.Dialect); copyOf() != 100 || f != 50 || err != nil {
		t.Fatalf("after a rolled-back raise: copy %d, floor %d (%v); want 100 and 50", copyOf(), f, err)
	}
	for _, c := range []struct {
		tok  uint64
		q    string
		args []any
		ok   bool
	}{
		{70, "UPDATE accounts SET balance = 2 WHERE id = 1", nil, true},
		{45, "UPDATE accounts SET balance = 3 WHERE id = 2", nil, false},
		{70, "INSERT INTO accounts (id, balance) VALUES (5, 0)", nil, true},
		{45, "INSERT INTO accounts (id, balance) VALUES (6, 0)", nil, false},
		{70, "DELETE FROM accounts WHERE id = $1", []any{3}, true},
		{45, "DELETE FROM accounts WHERE id = $1", []any{4}, false},
	} {
		err := write(c.tok, c.q, c.args...)
		if c.ok && err != nil || !c.ok && !errors.Is(err, fencedsql.ErrBelowFloor) {
			t.Errorf("%q under %d (floor 50, copy 100): %v, want accepted %v", c.q, c.tok, err, c.ok)
		}
	}
	var rows int
	if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts WHERE id IN (2, 4, 6) AND fence_token = 10 OR id = 6").Scan(&rows); err != nil || rows != 2 {
		t.Fatalf("rows the refused writes name: %d (%v), want 2 unchanged and none inserted", rows, err)
	}
	// The next raise puts the copy back on the floor.
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 80); err != nil || copyOf() != 80 {
		t.Fatalf("raise to 80: copy %d (%v)", copyOf(), err)
	}

	// Through the wrapper the copy cannot be lowered, by name or by OID, nor shadowed by
	// a schema renamed and re-created with a serial column whose generated sequence is
	// named like the copy (both found by a red-team pass; each lowered the copy or had
	// the guards read a planted one, and a write under 40 then passed).
	var oid string
	if err := db.QueryRowContext(ctx, "SELECT 'fencedsql_floor_seq'::regclass::oid::text").Scan(&oid); err != nil {
		t.Fatal(err)
	}
	for _, q := range []string{
		"SELECT setval('fencedsql_floor_seq', 0)",
		"SELECT setval('" + oid + "', 0)",
		"SELECT * FROM pg_catalog.setval('" + oid + "'::regclass, 0, true)",
		"ALTER SCHEMA public RENAME TO app",
	} {
		if _, err := db.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%q through the wrapper: %v, want ErrUnsupported", q, err)
		}
	}
	if copyOf() != 80 {
		t.Fatalf("copy after the refused attacks: %d", copyOf())
	}
	if err := write(40, "UPDATE accounts SET balance = 4 WHERE id = 2"); !errors.Is(err, fencedsql.ErrBelowFloor) {
		t.Fatalf("UPDATE under 40 after the attacks: %v, want ErrBelowFloor", err)
	}

	// Without the copy every guarded write fails and the guard is reported missing;
	// the guard's DDL brings it back.
	exec("DROP SEQUENCE fencedsql_floor_seq")
	if err := write(90, "UPDATE accounts SET balance = 9 WHERE id = 1"); err == nil {
		t.Fatal("UPDATE with the floor's copy gone: accepted")
	}
	if installed() {
		t.Fatal("GuardInstalledQuery: installed without the floor's copy")
	}
	exec(g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	if !installed() || copyOf() != 80 {
		t.Fatalf("after the guard's DDL again: installed %v, copy %d (want 80)", installed(), copyOf())
	}
	if err := write(90, "UPDATE accounts SET balance = 9 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
}
