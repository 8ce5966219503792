// Bound statement text and driver values (red-team rt55e): a bound argument of a
// statement that runs dynamic SQL is read only when it is a builtin value whose text the
// wrapper knows (F1); pgx option arguments are refused in such statements (F2); a NOT
// NULL violation of an unguarded table is the caller's own error (F3).

package redteam

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// boundIntKind is an int kind whose Value is text.
type boundIntKind int64

var boundBody string

func (boundIntKind) Value() (driver.Value, error) { return boundBody, nil }

// boundBytes is a named []byte without methods: refused too, as every named type.
type boundBytes []byte

// boundStrKind is a string kind whose Value differs from its own string.
type boundStrKind string

func (boundStrKind) Value() (driver.Value, error) { return boundBody, nil }

// boundTextValuer is a string kind whose pgtype.TextValuer differs from its string.
type boundTextValuer string

func (boundTextValuer) TextValue() (pgtype.Text, error) {
	return pgtype.Text{String: boundBody, Valid: true}, nil
}

// TestDynamicBoundTextDriverValuesPostgres: with pgx stdlib (its CheckNamedValue passes every
// value through unconverted) and the simple protocol, DO $1 with a bound value whose
// driver value (driver.Valuer / pgtype.TextValuer) is statement text that erases the
// tombstones and lowers the floor must be refused like the literal (ErrUnsupported),
// not judged by the Go value's own kind (digits, or its benign string).
func TestDynamicBoundTextDriverValuesPostgres(t *testing.T) {
	boundBody = "BEGIN DELETE FROM fencedsql_tomb_accounts; UPDATE fencedsql_floor SET floor = 0 WHERE id = 1; END"
	for _, c := range []struct {
		name string
		arg  any
	}{
		{"string_control", boundBody},
		{"valuer_int_kind", boundIntKind(7)},
		{"valuer_string_kind", boundStrKind("BEGIN END")},
		{"textvaluer_string_kind", boundTextValuer("BEGIN END")},
		{"named_bytes", boundBytes(boundBody)},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := freshDB(t, postgresBackend(), entry{dsn: "default_query_exec_mode=simple_protocol"})
			ctx0, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			d.ctx = ctx0
			guardWithTombstones(d, "bigint")
			if err := schema.RaiseTokenFloor(ctx0, d.raw, d.b.dialect, 20); err != nil {
				t.Fatal(err)
			}
			w := dynamicPool(t, d)
			if _, err := w.ExecContext(tokenCtx(ctx0, freshToken), "DELETE FROM accounts WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			_, err := w.ExecContext(tokenCtx(ctx0, staleToken), "DO $1", c.arg)
			var floor int64
			var tombs int
			_ = d.raw.QueryRowContext(ctx0, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor)
			_ = d.raw.QueryRowContext(ctx0, "SELECT COUNT(*) FROM fencedsql_tomb_accounts").Scan(&tombs)
			if floor != 20 || tombs != 1 {
				t.Errorf("DO $1 with %T bound ran unjudged text: floor %d (was 20), tombstones %d (was 1), err=%v", c.arg, floor, tombs, err)
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("DO $1 with %T: err = %v, want ErrUnsupported", c.arg, err)
			}
		})
	}
}

// TestDynamicBoundTextPgxOptionArgsPostgres: through database/sql + pgx stdlib (no DSN
// setting), pgx takes a QueryExecMode / QueryRewriter argument as an option and removes
// it, so the wrapper's ordinal 1 is not pgx's $1: DO $1 with (SimpleProtocol, body) is
// judged on the option's digits, and DO @body with pgx.NamedArgs has no placeholder
// the planner sees; pgx then inlines the body. Both must be refused (ErrUnsupported).
func TestDynamicBoundTextPgxOptionArgsPostgres(t *testing.T) {
	body := "BEGIN DELETE FROM fencedsql_tomb_accounts; UPDATE fencedsql_floor SET floor = 0 WHERE id = 1; END"
	for _, c := range []struct {
		name string
		q    string
		args []any
	}{
		{"simple_protocol_option_then_body", "DO $1", []any{pgx.QueryExecModeSimpleProtocol, body}},
		{"named_args_simple", "DO @body", []any{pgx.QueryExecModeSimpleProtocol, pgx.NamedArgs{"body": body}}},
		{"strict_named_args_simple", "DO @body", []any{pgx.QueryExecModeSimpleProtocol, pgx.StrictNamedArgs{"body": body}}},
		{"named_args_alone", "DO @body", []any{pgx.NamedArgs{"body": body}}},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := freshDB(t, postgresBackend(), entry{})
			ctx0, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			d.ctx = ctx0
			guardWithTombstones(d, "bigint")
			if err := schema.RaiseTokenFloor(ctx0, d.raw, d.b.dialect, 20); err != nil {
				t.Fatal(err)
			}
			w := dynamicPool(t, d)
			if _, err := w.ExecContext(tokenCtx(ctx0, freshToken), "DELETE FROM accounts WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			_, err := w.ExecContext(tokenCtx(ctx0, staleToken), c.q, c.args...)
			var floor int64
			var tombs int
			_ = d.raw.QueryRowContext(ctx0, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor)
			_ = d.raw.QueryRowContext(ctx0, "SELECT COUNT(*) FROM fencedsql_tomb_accounts").Scan(&tombs)
			if floor != 20 || tombs != 1 {
				t.Errorf("%s %v ran unjudged text: floor %d (was 20), tombstones %d (was 1), err=%v", c.q, c.args[0], floor, tombs, err)
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%s: err = %v, want ErrUnsupported", c.q, err)
			}
		})
	}
}

// plainGuardPool is a plain fenced pool guarding accounts (no dynamic SQL).
func plainGuardPool(t *testing.T, d *dbs) *sql.DB {
	t.Helper()
	c, err := d.b.connector(d.dsn)
	if err != nil {
		t.Fatal(err)
	}
	w := fencedsql.OpenDB(c, fencedsql.WithDialect(d.b.dialect), fencedsql.Guard("accounts"))
	t.Cleanup(func() { w.Close() })
	return w
}

// TestNotNullOfUnguardedTableMariaDB: an ordinary NOT NULL violation of an
// unguarded table whose column happens to share a fencing column's name (version, or
// fence_token) is the caller's own error: not ErrFenced, not a *GuardError (which tells
// the caller its write "does not follow the protocol" of a guarded table).
func TestNotNullOfUnguardedTableMariaDB(t *testing.T) {
	notNullOfUnguarded(t, mysqlBackend(), []string{
		"CREATE TABLE plain_docs (id BIGINT PRIMARY KEY, version BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0)",
	}, []string{
		"INSERT INTO plain_docs (id, version) VALUES (1, NULL)",
		"INSERT INTO plain_docs (id, version, fence_token) VALUES (2, 1, NULL)",
	})
}

func notNullOfUnguarded(t *testing.T, b backend, setup, stmts []string) {
	d := freshDB(t, b, entry{})
	ctx0, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	d.ctx = ctx0
	for _, s := range setup {
		d.must(s)
	}
	w := plainGuardPool(t, d)
	for _, q := range stmts {
		_, err := w.ExecContext(tokenCtx(ctx0, freshToken), q)
		if err == nil {
			t.Errorf("%s: no error (the NULL was accepted?)", q)
			continue
		}
		var ge *fencedsql.GuardError
		if errors.Is(err, fencedsql.ErrFenced) || errors.As(err, &ge) {
			t.Errorf("%s on an unguarded table: err = %v (%T), want the driver's own NOT NULL error", q, err, err)
		}
	}
}

// TestDynamicBoundTextExpressionsMariaDB: EXECUTE IMMEDIATE of an expression over a bound
// text: judged as the literal form is (the literal form refused ⇒ the bound form too).
func TestDynamicBoundTextExpressionsMariaDB(t *testing.T) {
	const bad = "DELETE FROM fencedsql_tomb_accounts"
	for _, c := range []struct{ name, q, lit, arg string }{
		{"replace", "EXECUTE IMMEDIATE REPLACE(?, '#', '')", "EXECUTE IMMEDIATE REPLACE('DELETE FROM fencedsql_tomb_acc#ounts', '#', '')", "DELETE FROM fencedsql_tomb_acc#ounts"},
		{"compound_declare", "BEGIN NOT ATOMIC DECLARE q TEXT DEFAULT ?; EXECUTE IMMEDIATE q; END", "BEGIN NOT ATOMIC DECLARE q TEXT DEFAULT '" + bad + "'; EXECUTE IMMEDIATE q; END", bad},
		{"compound_set_var", "BEGIN NOT ATOMIC SET @bt = ?; EXECUTE IMMEDIATE @bt; END", "BEGIN NOT ATOMIC SET @bt = '" + bad + "'; EXECUTE IMMEDIATE @bt; END", bad},
		{"set_statement_for", "SET STATEMENT max_statement_time = 0 FOR EXECUTE IMMEDIATE ?", "SET STATEMENT max_statement_time = 0 FOR EXECUTE IMMEDIATE '" + bad + "'", bad},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := freshDB(t, mysqlBackend(), entry{dsn: "interpolateParams=true"})
			ctx0, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			d.ctx = ctx0
			guardWithTombstones(d, "bigint(20)")
			w := dynamicPool(t, d)
			if _, err := w.ExecContext(tokenCtx(ctx0, freshToken), "DELETE FROM accounts WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			ctx := tokenCtx(ctx0, staleToken)
			_, lerr := w.ExecContext(ctx, c.lit)
			litRefused := errors.Is(lerr, fencedsql.ErrUnsupported)
			var tombs int
			_ = d.raw.QueryRowContext(ctx0, "SELECT COUNT(*) FROM fencedsql_tomb_accounts").Scan(&tombs)
			if !litRefused {
				t.Fatalf("control, the literal form: %v (tombstones %d); want ErrUnsupported", lerr, tombs)
			}
			_, err := w.ExecContext(ctx, c.q, c.arg)
			_ = d.raw.QueryRowContext(ctx0, "SELECT COUNT(*) FROM fencedsql_tomb_accounts").Scan(&tombs)
			if tombs != 1 {
				t.Errorf("%s with %q bound erased the tombstones (err=%v)", c.q, c.arg, err)
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%s: err = %v, want ErrUnsupported (its literal form is refused)", c.q, err)
			}
		})
	}
}
