package mysql_test

import (
	"context"
	"database/sql"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// caseTwinDatabase creates the case twin (upper case) of dsn's database, dropped at cleanup,
// and returns the lower and upper names. It fails unless lower_case_table_names = 0.
func caseTwinDatabase(t *testing.T, dsn string, raw *sql.DB) (lower, upper string) {
	t.Helper()
	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	lower = cfg.DBName
	upper = strings.ToUpper(lower)
	var lcn int
	if err := raw.QueryRow("SELECT @@lower_case_table_names").Scan(&lcn); err != nil {
		t.Fatal(err)
	}
	if lcn != 0 {
		t.Fatalf("lower_case_table_names = %d: needs a case-sensitive server", lcn)
	}
	t.Cleanup(func() {
		c, err := sql.Open("mysql", dsn)
		if err != nil {
			return
		}
		defer c.Close()
		_, _ = c.Exec("DROP DATABASE IF EXISTS `" + upper + "`")
	})
	testdb.Exec(t, raw, "CREATE DATABASE `"+upper+"`")
	return lower, upper
}

// TestMarkDoorOfCaseTwinDatabaseIsNotThisTables (red-team rt59a F3, over-refusal):
// under lower_case_table_names = 0 the case twin `T_X` of t_x is another database
// (another tenant). Its trigger or procedure naming @fencedsql_delete_mark, whose body
// names neither t_x nor anything of it, cannot fire inside a statement on t_x.ledger;
// markVariableDoors compared TRIGGER_SCHEMA / ROUTINE_SCHEMA with `=` only
// (utf8mb3_general_ci) and searched bodies with LOWER(), so t_x.ledger's schema.Check
// reported them and a fresh pool refused its fenced writes (ErrSchema). Now compared
// byte for byte (exactDatabase, exactMention).
func TestMarkDoorOfCaseTwinDatabaseIsNotThisTables(t *testing.T) {
	for _, kind := range []string{"trigger", "procedure"} {
		t.Run(kind, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			admin, dsn := replaceSetup(t)
			_, upper := caseTwinDatabase(t, dsn, admin)
			testdb.Exec(t, admin, "CREATE TABLE `"+upper+"`.notes (id INT PRIMARY KEY, body TEXT) ENGINE=InnoDB")
			switch kind {
			case "trigger":
				testdb.Exec(t, admin, "CREATE TRIGGER `"+upper+"`.notes_bd BEFORE DELETE ON `"+upper+"`.notes FOR EACH ROW SET @fencedsql_delete_mark := NULL")
			case "procedure":
				testdb.Exec(t, admin, "CREATE PROCEDURE `"+upper+"`.clear_mark() SET @fencedsql_delete_mark := NULL")
			}
			rep := triggerNamesReport(t, admin, "ledger")
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ledger"))
			_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE ledger SET balance = balance + 1, version = version + 1 WHERE id = 1")
			if !rep.OK() || err != nil {
				t.Fatalf("[over-refusal] a %s in the case-twin database `%s` (another database under lower_case_table_names=0, not reachable from ledger) named @fencedsql_delete_mark: ledger's schema.Check OK=%v problems=%q; fresh pool's fenced UPDATE err=%v; want OK and the write accepted",
					kind, upper, rep.OK(), rep.Problems, err)
			}
		})
	}
}

// TestCascadeIntoGuardedCaseTwinChildReported (red-team rt59a F2, fail-open):
// referencingCascades skipped a key as the parent's own self-referencing one with
// `NOT (rc.CONSTRAINT_SCHEMA = db AND rc.TABLE_NAME = ?)` under utf8mb3_general_ci, so
// a key of the guarded `T_X`.acc (the case-twin database's table of the same name)
// referencing t_x.acc ON DELETE CASCADE was skipped: t_x.acc's schema.Check said OK,
// and its fenced DELETE cascaded into the guarded child without a tombstone, after
// which a stale token re-created the child's row. The key must be reported, as it is
// for a child database with another name (the control).
func TestCascadeIntoGuardedCaseTwinChildReported(t *testing.T) {
	for _, twin := range []bool{true, false} {
		t.Run(map[bool]string{true: "caseTwinChild", false: "controlOtherDatabase"}[twin], func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
			defer cancel()
			dsn := testdb.MySQL(t)
			admin := testdb.Open(t, "mysql", dsn,
				"CREATE TABLE acc (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO acc (id, fence_token, version) VALUES (1, 10, 1), (2, 10, 1)")
			admin.SetMaxOpenConns(1)
			lower, child := caseTwinDatabase(t, dsn, admin)
			if !twin {
				child = "c" + lower[1:]
				t.Cleanup(func() {
					c, err := sql.Open("mysql", dsn)
					if err == nil {
						_, _ = c.Exec("DROP DATABASE IF EXISTS `" + child + "`")
						c.Close()
					}
				})
				testdb.Exec(t, admin, "CREATE DATABASE `"+child+"`")
			}
			testdb.Exec(t, admin,
				"CREATE TABLE `"+child+"`.acc (id BIGINT PRIMARY KEY, parent_id BIGINT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO `"+child+"`.acc (id, parent_id, fence_token, version) VALUES (7, 1, 10, 1)")
			for _, tbl := range []string{"acc", child + ".acc"} {
				reps, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: tbl})
				if err != nil {
					t.Fatal(err)
				}
				for _, r := range reps {
					testdb.Exec(t, admin, r.Fix...)
				}
			}
			// The child (guarded) gets its cascading key into the parent afterwards.
			testdb.Exec(t, admin, "ALTER TABLE `"+child+"`.acc ADD CONSTRAINT fk_parent FOREIGN KEY (parent_id) REFERENCES `"+lower+"`.acc (id) ON DELETE CASCADE")
			reps, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
			if err != nil {
				t.Fatal(err)
			}
			rep := reps[0]
			reported := !rep.OK() && strings.Contains(strings.Join(rep.Problems, "\n"), "fk_parent")
			if reported {
				return
			}
			// Show the consequence: the parent's fenced DELETE through its pool cascades
			// into the guarded child without a tombstone.
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc"))
			_, derr := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "DELETE FROM acc WHERE id = 1")
			var n, tomb int
			_ = admin.QueryRow("SELECT COUNT(*) FROM `" + child + "`.acc WHERE id = 7").Scan(&n)
			_ = admin.QueryRow("SELECT COUNT(*) FROM `" + child + "`.fencedsql_tomb_acc WHERE id = 7").Scan(&tomb)
			_, ierr := admin.ExecContext(ctx, "INSERT INTO `"+child+"`.acc (id, parent_id, balance, fence_token, version) VALUES (7, NULL, 666, 11, 1)")
			t.Fatalf("[door unreported] guarded `%s`.acc has fk_parent REFERENCES `%s`.acc ON DELETE CASCADE, but `%s`.acc's schema.Check OK=%v problems=%q (want the cascade door reported, as it is for a child database with another name); "+
				"the parent's fenced DELETE under token 50: err=%v, child row 7 left=%d, its tombstone rows=%d; a stale re-insert of child key 7 under token 11 afterwards: err=%v (nil = the deleted guarded row came back)",
				child, lower, lower, rep.OK(), rep.Problems, derr, n, tomb, ierr)
		})
	}
}

// TestGuardTableDoorOfCaseTwinDatabaseIsNotThisTables (red-team rt59a, held; the
// query now also compares exactly): guardTables reads the triggers on the tombstone
// and floor tables with `EVENT_OBJECT_SCHEMA = db AND EVENT_OBJECT_TABLE IN (tomb,
// floor) OR (…body names…)`; the OR defeats information_schema's lookup, so the first
// branch is evaluated for every database under utf8mb3_general_ci. A user trigger on
// the case twin `T_X`.fencedsql_tomb_ledger (a door of another tenant's guarded
// `T_X`.ledger) must not be reported as t_x.ledger's door, nor refuse its writes.
func TestGuardTableDoorOfCaseTwinDatabaseIsNotThisTables(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	admin, dsn := replaceSetup(t)
	_, upper := caseTwinDatabase(t, dsn, admin)
	testdb.Exec(t, admin, strings.Replace(replaceLedger, "CREATE TABLE ledger", "CREATE TABLE `"+upper+"`.ledger", 1))
	reps, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: upper + ".ledger"})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, admin, r.Fix...)
	}
	testdb.Exec(t, admin, "CREATE TRIGGER `"+upper+"`.tomb_audit BEFORE INSERT ON `"+upper+"`.fencedsql_tomb_ledger FOR EACH ROW SET NEW.fence_token = NEW.fence_token")
	rep := triggerNamesReport(t, admin, "ledger")
	fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ledger"))
	_, werr := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE ledger SET balance = balance + 1, version = version + 1 WHERE id = 1")
	if !rep.OK() || werr != nil {
		t.Fatalf("[over-refusal] a trigger on the case twin `%s`.fencedsql_tomb_ledger (another database under lower_case_table_names=0): ledger's schema.Check OK=%v problems=%q; fresh pool's fenced UPDATE err=%v; want OK and the write accepted",
			upper, rep.OK(), rep.Problems, werr)
	}
}
