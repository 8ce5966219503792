package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A write that names a partition or an inheritance child of a guarded table is fenced
// like a write of the table: the pool guards every descendant with the table's
// columns. A stale token's UPDATE that bumps the version itself (an ORM's optimistic
// lock) fails with ErrFenced; an INSERT that sets the token column itself gets the
// statement's token; a DELETE of a newer row fails.
func TestDescendantsGuarded(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const cols = "(id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	raw := rawWith(t, dsn,
		"CREATE TABLE parted "+cols+" PARTITION BY RANGE (id)",
		"CREATE TABLE parted_lo PARTITION OF parted FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (id)",
		"CREATE TABLE parted_lo_1 PARTITION OF parted_lo FOR VALUES FROM (0) TO (50)",
		"CREATE TABLE inh "+cols,
		"CREATE TABLE inh_child () INHERITS (inh)",
		"INSERT INTO parted (id, fence_token) VALUES (1, 50), (2, 50)",
		"INSERT INTO inh_child (id, fence_token) VALUES (1, 50), (2, 50)",
	)
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=parted,inh")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stale := fencedsql.WithToken(ctx, 10)
	for _, child := range []string{"parted_lo", "parted_lo_1", "inh_child"} {
		t.Run(child, func(t *testing.T) {
			table := "parted"
			if child == "inh_child" {
				table = "inh"
			}
			read := func(id int) (bal, tok int64) {
				t.Helper()
				if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token FROM "+table+" WHERE id = $1", id).Scan(&bal, &tok); err != nil {
					t.Fatal(err)
				}
				return bal, tok
			}
			_, err := db.ExecContext(stale, "UPDATE "+child+" SET balance = 666, version = version + 1 WHERE id = $1", 1)
			if !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale UPDATE through %s: %v, want ErrFenced", child, err)
			}
			if bal, tok := read(1); bal != 0 || tok != 50 {
				t.Fatalf("row 1 after the stale UPDATE: balance %d token %d", bal, tok)
			}
			if _, err := db.ExecContext(stale, "DELETE FROM "+child+" WHERE id = $1", 2); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale DELETE through %s: %v, want ErrFenced", child, err)
			}
			if _, err := db.ExecContext(stale, "INSERT INTO "+child+" (id, fence_token) VALUES ($1, 1000000)", 3); err != nil {
				t.Fatalf("INSERT through %s: %v", child, err)
			}
			if _, tok := read(3); tok != 10 {
				t.Fatalf("row 3 inserted through %s under token 10 records token %d", child, tok)
			}
			if _, err := raw.ExecContext(ctx, "DELETE FROM "+table+" WHERE id = 3"); err != nil {
				t.Fatal(err)
			}
		})
	}
}

// A write that names an unguarded parent of a guarded table reaches the guarded rows:
// a red-team pass wrote a guarded inheritance child and a guarded partition under a
// stale token through their parents. The pool guards every ancestor with the guarded
// table's columns: the stale write is fenced (the parent has the columns) or refused
// by the lazy check (it lacks them).
func TestAncestorsGuarded(t *testing.T) {
	dsn := testdb.Postgres(t)
	ctx := context.Background()
	const cols = "(id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"
	raw := rawWith(t, dsn,
		"CREATE TABLE base "+cols,
		"CREATE TABLE acc () INHERITS (base)",
		"CREATE TABLE root "+cols+" PARTITION BY RANGE (id)",
		"CREATE TABLE part PARTITION OF root FOR VALUES FROM (0) TO (100)",
		"CREATE TABLE bare (id BIGINT NOT NULL)",
		"CREATE TABLE bare_child (balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) INHERITS (bare)",
		"INSERT INTO acc (id, fence_token) VALUES (1, 50)",
		"INSERT INTO root (id, fence_token) VALUES (1, 50)",
		"INSERT INTO bare_child (id, fence_token) VALUES (1, 50)",
	)
	db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=acc,part,bare_child")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	stale := fencedsql.WithToken(ctx, 10)
	for _, c := range []struct{ parent, child string }{{"base", "acc"}, {"root", "part"}} {
		_, err := db.ExecContext(stale, "UPDATE "+c.parent+" SET balance = 666, version = version + 1 WHERE id = 1")
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("UPDATE %s (parent of the guarded %s) under a stale token: err = %v, want ErrFenced", c.parent, c.child, err)
		}
		var bal int64
		if err := raw.QueryRowContext(ctx, "SELECT balance FROM "+c.child+" WHERE id = 1").Scan(&bal); err != nil || bal != 0 {
			t.Errorf("%s row 1 balance = %d (%v), want 0 unchanged", c.child, bal, err)
		}
	}
	// A parent without the fencing columns: its writes are refused, nothing changes.
	_, err = db.ExecContext(stale, "DELETE FROM bare WHERE id = 1")
	if !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("DELETE FROM bare (parent of the guarded bare_child, without fencing columns): err = %v, want ErrSchema", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM bare_child").Scan(&n); err != nil || n != 1 {
		t.Errorf("bare_child rows = %d (%v), want 1", n, err)
	}
}
