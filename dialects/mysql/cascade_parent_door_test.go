package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// guardedParentChild creates parent and child, both guarded (guards and tombstones),
// child 7 under parent 1 at token 30, then adds the foreign key child_parent with
// rules on a plain connection, as a later migration does.
func guardedParentChild(t *testing.T, rules string) (admin *sql.DB, dsn string) {
	t.Helper()
	dsn = testdb.MySQL(t)
	admin = testdb.Open(t, "mysql", dsn,
		"CREATE TABLE parent (id INT NOT NULL PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE child (id INT NOT NULL PRIMARY KEY, parent_id INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO parent VALUES (1, 30, 1), (2, 30, 1)",
		"INSERT INTO child VALUES (7, 1, 30, 1)")
	admin.SetMaxOpenConns(1)
	fencetest.Guard(t, context.Background(), admin, mysql.Dialect, schema.GuardSpec{Table: "parent"}, schema.GuardSpec{Table: "child"})
	testdb.Exec(t, admin, "ALTER TABLE child ADD CONSTRAINT child_parent FOREIGN KEY (parent_id) REFERENCES parent (id) "+rules)
	return admin, dsn
}

// A foreign key of a guarded child into a guarded parent whose action writes the
// child's rows (ON DELETE CASCADE / SET NULL, ON UPDATE CASCADE) is a door of the
// parent too: MariaDB runs no trigger for the cascade, so the parent's fenced DELETE
// or key UPDATE would delete or change child 7 with no tombstone and no token. The
// pool refuses the parent's write (ErrSchema naming the key) before anything is sent,
// schema.Check of the parent alone reports the key with its Fix (RESTRICT) and asks
// for a token floor raise (rows a cascade already removed carry no tombstone), and
// after the Fix the parent is written as before (red-team rt49b F1).
func TestCascadeIntoGuardedChildRefusesParentWrite(t *testing.T) {
	for _, c := range []struct{ name, rules, write string }{
		{"OnDeleteCascade", "ON DELETE CASCADE", "DELETE FROM parent WHERE id = 1"},
		{"OnDeleteSetNull", "ON DELETE SET NULL", "DELETE FROM parent WHERE id = 1"},
		{"OnUpdateCascade", "ON UPDATE CASCADE", "UPDATE parent SET id = 5 WHERE id = 1"},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx := context.Background()
			admin, dsn := guardedParentChild(t, c.rules)
			db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=parent,child")
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 50), c.write)
			var pid sql.NullInt64
			var tok int64
			if qerr := admin.QueryRow("SELECT parent_id, fence_token FROM child WHERE id = 7").Scan(&pid, &tok); qerr != nil {
				t.Fatalf("child 7: %v (deleted by the cascade?)", qerr)
			}
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "cascade child_parent on") ||
				!strings.Contains(err.Error(), "RaiseTokenFloor") || pid.Int64 != 1 || tok != 30 {
				t.Fatalf("%s under 50 with %s into guarded child: err %v, child 7 parent %v token %d; want ErrSchema naming the key, child 7 untouched", c.write, c.rules, err, pid, tok)
			}
			reps, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "parent"})
			if err != nil {
				t.Fatal(err)
			}
			if reps[0].OK() || len(reps[0].Fix) != 2 || !strings.Contains(strings.Join(reps[0].Problems, "; "), "RaiseTokenFloor") {
				t.Fatalf("schema.Check of parent: problems %q fix %q; want the cascade key with its RESTRICT fix and a floor raise asked for", reps[0].Problems, reps[0].Fix)
			}
			testdb.Exec(t, admin, reps[0].Fix...)
			if reps, err = schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "parent"}, schema.GuardSpec{Table: "child"}); err != nil {
				t.Fatal(err)
			}
			for _, r := range reps {
				if !r.OK() {
					t.Fatalf("after the fix: %q", r.Problems)
				}
			}
			db2 := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=parent,child")
			if _, err := db2.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE parent SET version = version + 1 WHERE id = 2"); err != nil {
				t.Fatalf("fenced UPDATE of parent 2 after the fix: %v", err)
			}
			if _, err := db2.ExecContext(fencedsql.WithToken(ctx, 50), c.write); err == nil || !strings.Contains(err.Error(), "1451") {
				t.Fatalf("%s after the fix: %v, want error 1451 (RESTRICT)", c.write, err)
			}
		})
	}
}

// A cascade into a table that is not guarded (sessions deleted with their guarded
// user) is no door of the parent: nothing fences that table's rows, and the ORM's
// ordinary ON DELETE CASCADE keeps working.
func TestCascadeIntoUnguardedChildAllowsParentWrite(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE users (id INT NOT NULL PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE sessions (id INT NOT NULL PRIMARY KEY, user_id INT, CONSTRAINT sessions_user FOREIGN KEY (user_id) REFERENCES users (id) ON DELETE CASCADE ON UPDATE CASCADE) ENGINE=InnoDB",
		"INSERT INTO users VALUES (1, 30, 1)",
		"INSERT INTO sessions VALUES (7, 1)")
	admin.SetMaxOpenConns(1)
	fencetest.Guard(t, ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "users"})
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=users")
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM users WHERE id = 1"); err != nil {
		t.Fatalf("fenced DELETE of a guarded user with a cascade into unguarded sessions: %v", err)
	}
	var n int
	if err := admin.QueryRow("SELECT COUNT(*) FROM sessions").Scan(&n); err != nil || n != 0 {
		t.Fatalf("sessions left: %d (%v)", n, err)
	}
}

// The cascade reaches a guarded grandchild through an unguarded table: parent ->
// middle (ON DELETE CASCADE, not guarded) -> child (ON DELETE CASCADE, guarded). The
// parent's fenced DELETE is refused, naming the grandchild's key.
func TestCascadeThroughUnguardedTableRefusesParentWrite(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE parent (id INT NOT NULL PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"CREATE TABLE middle (id INT NOT NULL PRIMARY KEY, parent_id INT, CONSTRAINT middle_parent FOREIGN KEY (parent_id) REFERENCES parent (id) ON DELETE CASCADE) ENGINE=InnoDB",
		"CREATE TABLE child (id INT NOT NULL PRIMARY KEY, middle_id INT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO parent VALUES (1, 30, 1)", "INSERT INTO middle VALUES (3, 1)", "INSERT INTO child VALUES (7, 3, 30, 1)")
	admin.SetMaxOpenConns(1)
	fencetest.Guard(t, ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "parent"}, schema.GuardSpec{Table: "child"})
	testdb.Exec(t, admin, "ALTER TABLE child ADD CONSTRAINT child_middle FOREIGN KEY (middle_id) REFERENCES middle (id) ON DELETE CASCADE")
	db := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=parent,child")
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM parent WHERE id = 1")
	var n int
	if qerr := admin.QueryRow("SELECT COUNT(*) FROM child WHERE id = 7").Scan(&n); qerr != nil {
		t.Fatal(qerr)
	}
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "cascade child_middle on") || n != 1 {
		t.Fatalf("DELETE of parent 1 cascading through middle into guarded child: err %v, child 7 rows %d; want ErrSchema naming child_middle, child 7 kept", err, n)
	}
}
