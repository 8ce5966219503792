package mysql_test

import (
	"context"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// TestRoutineNamesakeOfOtherKindStopsNoWrite (red-team rt58a F4): MySQL/MariaDB keep
// functions and procedures in two namespaces. Beside each of the guards' routines,
// one of the other kind of its name in the table's database: a FUNCTION named like the
// absence recorder (a procedure, which the wrapper only CALLs), a PROCEDURE named like
// the fence function (which a statement only calls as a function). Neither can take
// a call of the guard's; a role with CREATE ROUTINE on the database must not stop the
// table's writes with one (the recorder's namesake function had been judged an
// impostor recorder, refused by the lazy check). Oracle: the fence holds and the
// holder's writes pass; Check says OK, or -apply converges.
func TestRoutineNamesakeOfOtherKindStopsNoWrite(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, admin := guardedAccounts(t, ctx)
	rows, err := admin.QueryContext(ctx, "SELECT ROUTINE_NAME, ROUTINE_TYPE FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = DATABASE() AND ROUTINE_NAME LIKE 'fencedsql%'")
	if err != nil {
		t.Fatal(err)
	}
	type routine struct{ name, kind string }
	var rs []routine
	for rows.Next() {
		var r routine
		if err := rows.Scan(&r.name, &r.kind); err != nil {
			t.Fatal(err)
		}
		rs = append(rs, r)
	}
	rows.Close()
	if len(rs) == 0 {
		t.Fatal("no guard routine listed")
	}
	for _, r := range rs {
		q := "CREATE FUNCTION " + bqName(r.name) + "() RETURNS INT DETERMINISTIC RETURN 1"
		if r.kind == "FUNCTION" {
			q = "CREATE PROCEDURE " + bqName(r.name) + "() BEGIN END"
		}
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if bad := fenceOracle(t, ctx, dsn, admin); len(bad) > 0 {
		t.Errorf("with namesakes of the other routine kind %v: %q", rs, bad)
	}
	if _, err := fencetest.ApplyRounds(ctx, admin, mysql.Dialect, false, schema.GuardSpec{Table: "accounts"}); err != nil {
		t.Errorf("apply: %v", err)
	}
	if ok, p := checkAccounts(t, ctx, admin); !ok {
		t.Errorf("not converged: %q", p)
	}
}
