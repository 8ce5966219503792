package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"hash/fnv"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// replaceMarkVarOf is the REPLACE mark's variable of table (replacemark.go).
func replaceMarkVarOf(table string) string {
	h := fnv.New64a()
	h.Write([]byte(table))
	return fmt.Sprintf("fencedsql_replace_mark_%016x", h.Sum64())
}

// TestMarkVariableNamedByUserCode (red-team rt58e F2): a user's trigger on the guarded
// table that fires after the REPLACE mark's trigger and assigns the mark's variable a
// well-formed mark of a lower token made a REPLACE record the row it displaced at that
// token, so an older holder put the key back — and schema.Check said OK (the trigger
// named no fencing column). Any trigger or routine naming one of the library's
// variables is now a door.
//
// Generator: seeded forged token, and each spelling of the class in turn: SET with :=
// and =, inside IF, backquoted, quoted with a backslash escape, upper case, SELECT …
// INTO, the DELETE mark from a BEFORE DELETE trigger, and a procedure the trigger
// CALLs. Oracle: schema.Check reports the trigger (or the procedure), and a fresh
// pool's fenced write is refused with a *SchemaError naming it.
func TestMarkVariableNamedByUserCode(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	v := replaceMarkVarOf("ledger")
	mark := func(tok int64) string {
		return fmt.Sprintf("CONVERT(CONCAT('%d/', CONVERT(CONCAT(@@timestamp, ':', HEX(DATABASE())) USING ascii)) USING ascii)", tok)
	}
	type form struct {
		ddl    []string // the user's objects
		object string   // the name the report carries
	}
	forms := []func(tok int64) form{
		func(tok int64) form {
			return form{[]string{"CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW SET @" + v + " := " + mark(tok)}, "audit_ins"}
		},
		func(tok int64) form {
			return form{[]string{"CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW SET @" + v + " = " + mark(tok)}, "audit_ins"}
		},
		func(tok int64) form {
			return form{[]string{"CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW IF NEW.balance >= 0 THEN SET @" + v + " := " + mark(tok) + "; END IF"}, "audit_ins"}
		},
		func(tok int64) form {
			return form{[]string{"CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW SET @`" + v + "` := " + mark(tok)}, "audit_ins"}
		},
		func(tok int64) form {
			return form{[]string{`CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW SET @'\` + v + `' := ` + mark(tok)}, "audit_ins"}
		},
		func(tok int64) form {
			return form{[]string{"CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW SET @" + strings.ToUpper(v) + " := " + mark(tok)}, "audit_ins"}
		},
		func(tok int64) form {
			return form{[]string{"CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW SELECT " + mark(tok) + " INTO @" + v}, "audit_ins"}
		},
		func(tok int64) form {
			return form{[]string{fmt.Sprintf("CREATE TRIGGER audit_del BEFORE DELETE ON ledger FOR EACH ROW SET @fencedsql_delete_mark := CONVERT(CONCAT('%d/', CONCAT(@@timestamp)) USING ascii)", tok)}, "audit_del"}
		},
		func(tok int64) form {
			return form{[]string{"CREATE PROCEDURE lower_mark() SET @" + v + " := " + mark(tok),
				"CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW CALL lower_mark()"}, "lower_mark"}
		},
	}
	for i, f := range forms {
		tok := rng.Int63n(11)
		fm := f(tok)
		t.Run(fmt.Sprintf("form%d", i), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			admin, dsn := replaceSetup(t)
			testdb.Exec(t, admin, fm.ddl...)
			rep := triggerNamesReport(t, admin, "ledger")
			if rep.OK() || !strings.Contains(strings.Join(rep.Problems, "\n"), fm.object) {
				t.Fatalf("seed %d: %q: schema.Check OK %v, problems %q; want %s reported", seed, fm.ddl, rep.OK(), rep.Problems, fm.object)
			}
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=ledger"))
			_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 50), "UPDATE ledger SET balance = balance + 1, version = version + 1 WHERE id = 1")
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || !strings.Contains(err.Error(), fm.object) {
				t.Fatalf("seed %d: %q: a fresh pool's fenced UPDATE: %v, want a *SchemaError naming %s", seed, fm.ddl, err, fm.object)
			}
		})
	}
}

// TestOrdinaryTriggersNotMarkDoors: triggers and routines that use user variables of
// their own (an audit user, a counter) and touch a timestamp are not doors.
func TestOrdinaryTriggersNotMarkDoors(t *testing.T) {
	admin, _ := replaceSetup(t)
	testdb.Exec(t, admin,
		"CREATE TRIGGER audit_ins BEFORE INSERT ON ledger FOR EACH ROW SET @audit_user := CURRENT_USER(), @fenced := 1, @inserts := COALESCE(@inserts, 0) + 1",
		"CREATE TRIGGER touch_upd BEFORE UPDATE ON ledger FOR EACH ROW SET @last_touch := NOW(6), @`Dätenbank_x` := 1",
		"CREATE PROCEDURE count_rows() SELECT COUNT(*) INTO @ledger_rows FROM ledger")
	if rep := triggerNamesReport(t, admin, "ledger"); !rep.OK() {
		t.Fatalf("ordinary triggers reported: %q", rep.Problems)
	}
}
