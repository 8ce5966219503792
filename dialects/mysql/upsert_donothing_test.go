package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"

	"github.com/fencedsql/fencedsql/dialects/mysql"
)

// TestSelfAssignmentUpsertIsDoNothing: GORM's clause.OnConflict{DoNothing: true} and
// ent's DoNothing() send "insert if absent" as ON DUPLICATE KEY UPDATE `id`=`id`. The
// raw statement leaves an existing row untouched (0 rows affected); so does the fenced
// one where the table's guard is not installed, whatever the token (no ErrFenced for an
// older token: nothing is written), while a new row is inserted with the token and
// version 1 — as ON CONFLICT DO NOTHING on PostgreSQL and SQLite (red-team rts F5).
// With the guard installed, MariaDB runs its BEFORE UPDATE trigger for the duplicate
// row even when nothing changes, and the guard refuses an update that does not
// advance the version: there the wrapper stamps the row (the conflict branch is
// fenced as any other), and a pool that chose the no-op before the guard was
// installed gets ErrGuard once and asks again.
func TestSelfAssignmentUpsertIsDoNothing(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO acc (id, balance, fence_token, version) VALUES (1, 100, 50, 3)",
	)
	open := func() *sql.DB {
		db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc"))
		return db
	}
	row := func(id int) (bal, tok, ver int64) {
		t.Helper()
		if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token, version FROM acc WHERE id = ?", id).Scan(&bal, &tok, &ver); err != nil {
			t.Fatalf("row %d: %v", id, err)
		}
		return
	}
	const gormDoNothing = "INSERT INTO `acc` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE `id`=`id`"
	exec := func(db *sql.DB, tok uint64, q string, args ...any) (int64, error) {
		res, err := db.ExecContext(fencedsql.WithToken(ctx, tok), q, args...)
		if err != nil {
			return 0, err
		}
		return res.RowsAffected()
	}

	res, err := raw.ExecContext(ctx, gormDoNothing, 1, 9)
	if err != nil {
		t.Fatal(err)
	}
	if n, _ := res.RowsAffected(); n != 0 {
		t.Fatalf("raw: %d rows affected, want 0", n)
	}

	db := open()
	for _, tok := range []uint64{10, 100} {
		for _, q := range []string{gormDoNothing, "INSERT INTO acc (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = acc.ID, balance = `balance`"} {
			if n, err := exec(db, tok, q, 1, 9); err != nil || n != 0 {
				t.Errorf("token %d, existing row: %s: %d rows, %v; want 0 rows, no error", tok, q, n, err)
			}
		}
		// Prepared: the same form.
		st, err := db.PrepareContext(ctx, gormDoNothing)
		if err != nil {
			t.Fatal(err)
		}
		res, err := st.ExecContext(fencedsql.WithToken(ctx, tok), 1, 9)
		if err != nil {
			t.Errorf("token %d, prepared: %v", tok, err)
		} else if n, _ := res.RowsAffected(); n != 0 {
			t.Errorf("token %d, prepared: %d rows, want 0", tok, n)
		}
		st.Close()
	}
	if bal, tok, ver := row(1); bal != 100 || tok != 50 || ver != 3 {
		t.Errorf("existing row after the no-ops: balance %d, token %d, version %d; want 100, 50, 3", bal, tok, ver)
	}
	if n, err := exec(db, 100, gormDoNothing, 2, 9); err != nil || n != 1 {
		t.Errorf("new row: %d rows, %v; want 1", n, err)
	}
	if bal, tok, ver := row(2); bal != 9 || tok != 100 || ver != 1 {
		t.Errorf("new row: balance %d, token %d, version %d; want 9, 100, 1", bal, tok, ver)
	}
	// Not a self-assignment: the conflict branch writes and is fenced.
	if _, err := exec(db, 10, "INSERT INTO acc (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = VALUES(id)", 1, 9); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale id = VALUES(id): %v, want ErrFenced", err)
	}

	// The guard installed: the stamping form.
	g := mysql.Dialect.(dialect.Guarder)
	for _, q := range g.GuardDDL(dialect.TableName{Name: "acc"}, "fence_token", "version") {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if _, err := raw.ExecContext(ctx, gormDoNothing, 1, 9); err == nil {
		t.Fatal("raw no-op upsert of an existing row passed the guard: the stamping form is not needed")
	}
	// The pool that chose the no-op: refused by the guard once, then stamped.
	if _, err := exec(db, 100, gormDoNothing, 1, 9); !errors.Is(err, fencedsql.ErrGuard) {
		t.Errorf("first no-op after the guard was installed: %v, want ErrGuard", err)
	}
	if n, err := exec(db, 100, gormDoNothing, 1, 9); err != nil || n != 2 {
		t.Errorf("guarded, token 100: %d rows, %v; want 2 (stamped)", n, err)
	}
	db2 := open()
	if _, err := exec(db2, 10, gormDoNothing, 1, 9); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("guarded, stale token: %v, want ErrFenced", err)
	}
	if n, err := exec(db2, 200, gormDoNothing, 1, 9); err != nil || n != 2 {
		t.Errorf("guarded, new pool, token 200: %d rows, %v; want 2", n, err)
	}
	if bal, tok, ver := row(1); bal != 100 || tok != 200 || ver != 5 {
		t.Errorf("guarded row: balance %d, token %d, version %d; want 100, 200, 5", bal, tok, ver)
	}
}
