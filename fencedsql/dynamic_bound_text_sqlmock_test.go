package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

// TestDynamicBoundTextSqlmock (red-team rt55b F2): under WithDynamicSQL, a statement
// text given as the bound argument of dynamic SQL (EXECUTE IMMEDIATE ?, PREPARE s FROM
// ?, inside a compound statement or a SET STATEMENT, pieced with CONCAT) is judged as
// its literal form: refused unsent where the literal is (a write of a guard object or
// of a guarded table), whether the value is a string or bytes, positional or named,
// through Exec, Query or a prepared statement — judged at each execution with that
// execution's arguments. A harmless text, and the data an EXECUTE … USING binds, are
// sent as written.
func TestDynamicBoundTextSqlmock(t *testing.T) {
	db, mock := fencedtest.New(t, mysql.Dialect, fencedsql.Guard("accounts"), fencedsql.WithDynamicSQL(true))
	ctx := fencedsql.WithToken(context.Background(), 10)
	const (
		floor = "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1"
		tombs = "DELETE FROM fencedsql_tomb_accounts"
		write = "DELETE FROM accounts WHERE id = 4"
	)
	for _, lit := range []string{floor, tombs, write} {
		if _, err := db.ExecContext(ctx, "EXECUTE IMMEDIATE '"+lit+"'"); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Fatalf("control, the literal %q: %v; want ErrUnsupported", lit, err)
		}
	}
	refused := []struct {
		name, query string
		args        []any
	}{
		{"floor", "EXECUTE IMMEDIATE ?", []any{floor}},
		{"tombstones_bytes", "EXECUTE IMMEDIATE ?", []any{[]byte(tombs)}},
		{"guarded_table", "EXECUTE IMMEDIATE ?", []any{write}},
		{"named", "EXECUTE IMMEDIATE ?", []any{sql.Named("q", write)}},
		{"prepare_from", "PREPARE s FROM ?", []any{tombs}},
		{"concat", "EXECUTE IMMEDIATE CONCAT(?, ' WHERE id = 4')", []any{"DELETE FROM accounts"}},
		{"compound", "BEGIN NOT ATOMIC EXECUTE IMMEDIATE ?; END", []any{floor}},
		{"set_statement", "SET STATEMENT max_statement_time = 10 FOR EXECUTE IMMEDIATE ?", []any{write}},
		{"second_placeholder", "EXECUTE IMMEDIATE CONCAT(?, ?)", []any{"DELETE FROM ", "fencedsql_tomb_accounts"}},
		{"transaction_control", "EXECUTE IMMEDIATE ?", []any{"COMMIT"}},
	}
	for _, c := range refused {
		t.Run(c.name, func(t *testing.T) {
			if _, err := db.ExecContext(ctx, c.query, c.args...); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("Exec %s with %v: %v; want ErrUnsupported, unsent", c.query, c.args, err)
			}
			if _, err := db.QueryContext(ctx, c.query, c.args...); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("Query %s with %v: %v; want ErrUnsupported, unsent", c.query, c.args, err)
			}
		})
	}
	// A harmless text and EXECUTE … USING data are sent as written (each followed by
	// the check that it left no transaction open: dynamic SQL outside a transaction).
	leftNone := func() {
		mock.ExpectExec("SAVEPOINT fencedsql_dyn_#").WillReturnResult(sqlmock.NewResult(0, 0))
		mock.ExpectExec("RELEASE SAVEPOINT fencedsql_dyn_#").WillReturnError(errors.New("Error 1305 (42000): SAVEPOINT fencedsql_dyn_# does not exist"))
	}
	mock.ExpectExec("EXECUTE IMMEDIATE ?").WithArgs("SELECT 1").WillReturnResult(sqlmock.NewResult(0, 0))
	leftNone()
	if _, err := db.ExecContext(ctx, "EXECUTE IMMEDIATE ?", "SELECT 1"); err != nil {
		t.Fatalf("EXECUTE IMMEDIATE ? with SELECT 1: %v", err)
	}
	using := "EXECUTE IMMEDIATE 'INSERT INTO notes (txt) VALUES (?)' USING ?"
	mock.ExpectExec(using).WithArgs("see the accounts page").WillReturnResult(sqlmock.NewResult(0, 1))
	leftNone()
	if _, err := db.ExecContext(ctx, using, "see the accounts page"); err != nil {
		t.Fatalf("%s with data naming the table: %v", using, err)
	}
	// Prepared once, judged at each execution with its arguments.
	mock.ExpectPrepare("EXECUTE IMMEDIATE ?")
	st, err := db.PrepareContext(ctx, "EXECUTE IMMEDIATE ?")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	mock.ExpectExec("EXECUTE IMMEDIATE ?").WithArgs("SELECT 2").WillReturnResult(sqlmock.NewResult(0, 0))
	leftNone()
	if _, err := st.ExecContext(ctx, "SELECT 2"); err != nil {
		t.Fatalf("prepared, with SELECT 2: %v", err)
	}
	if _, err := st.ExecContext(ctx, floor); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("prepared, executed with %q: %v; want ErrUnsupported, unsent", floor, err)
	}
	if _, err := st.QueryContext(ctx, write); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("prepared, queried with %q: %v; want ErrUnsupported, unsent", write, err)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Fatal(err)
	}
}

// TestDynamicBoundTextPostgresSqlmock: PostgreSQL's DO takes its body as a string, which
// pgx's simple protocol substitutes for a placeholder ($1) as a literal: a bound body
// is judged as the literal one (refused unsent where that is); the values of EXECUTE
// name(…) are data, sent as written.
func TestDynamicBoundTextPostgresSqlmock(t *testing.T) {
	db, mock := fencedtest.New(t, postgres.Dialect, fencedsql.Guard("accounts"), fencedsql.WithDynamicSQL(true))
	ctx := fencedsql.WithToken(context.Background(), 10)
	body := "BEGIN DELETE FROM accounts WHERE id = 4; END"
	if _, err := db.ExecContext(ctx, "DO '"+body+"'"); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("control, the literal body: %v; want ErrUnsupported", err)
	}
	for _, q := range []string{"DO $1", "DO LANGUAGE plpgsql $1"} {
		if _, err := db.ExecContext(ctx, q, body); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s with %q bound: %v; want ErrUnsupported, unsent", q, body, err)
		}
	}
	mock.ExpectExec("EXECUTE s($1)").WithArgs("see the accounts page").WillReturnResult(sqlmock.NewResult(0, 1))
	if _, err := db.ExecContext(ctx, "EXECUTE s($1)", "see the accounts page"); err != nil {
		t.Fatalf("EXECUTE s($1) with data naming the table: %v", err)
	}
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Fatal(err)
	}
}
