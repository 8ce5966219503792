// The driver's optional interfaces: forwarded when the connection has them, fallbacks when it has not.

package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"reflect"
	"slices"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// ---- optional interfaces ----

func openFake(t *testing.T, d *fakeDriver, opts ...fencedsql.Option) *sql.DB {
	t.Helper()
	base := []fencedsql.Option{fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false)}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(d, "fake"), append(base, opts...)...)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() { db.Close() })
	if d.rec != nil {
		if err := db.Ping(); err != nil {
			t.Fatal(err)
		}
		d.rec.reset()
	}
	return db
}

func TestOptionalInterfacesForwarded(t *testing.T) {
	rec := newFakeRec()
	db := openFake(t, &fakeDriver{rec: rec, full: true})
	ctx := context.Background()

	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if rec.count("Ping") == 0 {
		t.Error("Pinger not reached")
	}

	// ExecerContext and NamedValueChecker (a value only the wrapped driver accepts).
	if _, err := db.ExecContext(ctx, `UPDATE other SET x = $1`, customValue{5}); err != nil {
		t.Fatal(err)
	}
	if rec.count("ExecContext") != 1 || rec.count("CheckNamedValue") == 0 {
		t.Errorf("ExecContext %d, CheckNamedValue %d", rec.count("ExecContext"), rec.count("CheckNamedValue"))
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`UPDATE other SET x = $1`, []any{"custom:5"}}) {
		t.Errorf("sent %+v", got)
	}
	// A guarded write goes through ExecerContext too, with the custom value converted.
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 7), `UPDATE accounts SET x = $1`, customValue{6}); err != nil {
		t.Fatal(err)
	}
	want := fakeCall{`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`, []any{"custom:6", int64(7)}}
	if got := rec.lastExec(); !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v\nwant %+v", got, want)
	}

	// SessionResetter and Validator run when database/sql reuses the connection.
	if rec.count("ResetSession") == 0 {
		t.Error("SessionResetter not reached")
	}
	if rec.count("IsValid") == 0 {
		t.Error("Validator not reached")
	}

	// QueryerContext, with the Rows extensions intact.
	rows, err := db.QueryContext(ctx, `SELECT id FROM accounts`)
	if err != nil {
		t.Fatal(err)
	}
	cts, err := rows.ColumnTypes()
	if err != nil || cts[0].DatabaseTypeName() != "INT8" || cts[0].ScanType() != reflect.TypeFor[int64]() {
		t.Errorf("column types of a pass-through query: %v %v", cts, err)
	}
	rows.Close()
	if rec.count("QueryContext") != 1 {
		t.Error("QueryerContext not reached")
	}
	// A guarded RETURNING query keeps the Rows extensions too.
	rows, err = db.QueryContext(fencedsql.WithToken(ctx, 7), `UPDATE accounts SET x = 1 RETURNING id`)
	if err != nil {
		t.Fatal(err)
	}
	cts, err = rows.ColumnTypes()
	if err != nil || cts[0].DatabaseTypeName() != "INT8" || cts[0].ScanType() != reflect.TypeFor[int64]() {
		t.Errorf("column types of a guarded RETURNING query: %v %v", cts, err)
	}
	var id int64
	if !rows.Next() || rows.Scan(&id) != nil || id != 42 {
		t.Errorf("RETURNING row: %d", id)
	}
	rows.Close()

	// ConnPrepareContext, for pass-through and guarded statements.
	st, err := db.PrepareContext(ctx, `SELECT 1`)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	st, err = db.PrepareContext(ctx, `INSERT INTO accounts (id) VALUES ($1)`)
	if err != nil {
		t.Fatal(err)
	}
	st.Close()
	if rec.count("PrepareContext") != 2 || rec.count("Prepare") != 0 {
		t.Errorf("PrepareContext %d, Prepare %d", rec.count("PrepareContext"), rec.count("Prepare"))
	}
	if !slices.Contains(rec.prepared, `INSERT INTO accounts (id, "fence_token", "version") VALUES ($1, $2, 1)`) {
		t.Errorf("prepared %q", rec.prepared)
	}

	// ConnBeginTx, with the options forwarded.
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelSerializable, ReadOnly: true})
	if err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if rec.count("BeginTx") != 1 || rec.count("Begin") != 0 || rec.count("Commit") != 1 {
		t.Errorf("BeginTx %d, Begin %d, Commit %d", rec.count("BeginTx"), rec.count("Begin"), rec.count("Commit"))
	}
	if len(rec.txOpts) != 1 || rec.txOpts[0].Isolation != driver.IsolationLevel(sql.LevelSerializable) || !rec.txOpts[0].ReadOnly {
		t.Errorf("tx options %+v", rec.txOpts)
	}
}

// A connection implementing none of the optional interfaces still works: database/sql
// falls back to Prepare and Begin.
func TestMinimalConn(t *testing.T) {
	rec := newFakeRec()
	db := openFake(t, &fakeDriver{rec: rec})
	ctx := context.Background()

	if err := db.PingContext(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(ctx, `UPDATE other SET x = $1`, 1); err != nil {
		t.Fatal(err)
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`UPDATE other SET x = $1`, []any{int64(1)}}) {
		t.Errorf("pass-through exec: %+v", got)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 7), `UPDATE accounts SET x = $1`, 1); err != nil {
		t.Fatal(err)
	}
	want := fakeCall{`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`, []any{int64(1), int64(7)}}
	if got := rec.lastExec(); !reflect.DeepEqual(got, want) {
		t.Errorf("guarded exec: %+v\nwant %+v", got, want)
	}
	var id int64
	if err := db.QueryRowContext(ctx, `SELECT id FROM accounts WHERE id = $1`, 42).Scan(&id); err != nil || id != 42 {
		t.Fatalf("query: %d %v", id, err)
	}
	if err := db.QueryRowContext(fencedsql.WithToken(ctx, 7), `UPDATE accounts SET x = 1 RETURNING id`).Scan(&id); err != nil || id != 42 {
		t.Fatalf("guarded query: %d %v", id, err)
	}
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 8), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(`DELETE FROM accounts WHERE id = $1`, 3); err != nil {
		t.Fatal(err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if rec.count("Begin") != 1 || rec.count("Commit") != 1 {
		t.Errorf("Begin %d, Commit %d", rec.count("Begin"), rec.count("Commit"))
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`DELETE FROM accounts WHERE (id = $1) AND "fence_token" = $2`, []any{int64(3), int64(8)}}) {
		t.Errorf("delete: %+v", got)
	}
	// Transaction options cannot be honoured without ConnBeginTx.
	if _, err := db.BeginTx(ctx, &sql.TxOptions{ReadOnly: true}); err == nil {
		t.Error("read-only transaction on a driver without ConnBeginTx: no error")
	}
	if rec.count("Prepare") == 0 {
		t.Error("Prepare was never used")
	}
}

// go-sql-driver/mysql answers Exec with arguments by driver.ErrSkip: the wrapper must
// then prepare the rewritten statement itself.
func TestErrSkipFallsBackToPrepare(t *testing.T) {
	rec := newFakeRec()
	db := openFake(t, &fakeDriver{rec: rec, full: true, skipArgs: true}, fencedsql.WithDialect(sqlite.Dialect))
	ctx := fencedsql.WithToken(context.Background(), 7)
	if _, err := db.ExecContext(ctx, `UPDATE accounts SET x = ? WHERE id = ?`, 1, 2); err != nil {
		t.Fatal(err)
	}
	want := fakeCall{`UPDATE accounts SET x = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`, []any{int64(1), int64(7), int64(7), int64(2)}}
	if got := rec.lastExec(); !reflect.DeepEqual(got, want) {
		t.Errorf("sent %+v\nwant %+v", got, want)
	}
	if rec.count("ExecContextSkip") == 0 || rec.count("StmtExec") != 1 {
		t.Errorf("ExecContextSkip %d, StmtExec %d", rec.count("ExecContextSkip"), rec.count("StmtExec"))
	}
	// A pass-through statement with arguments: database/sql prepares it.
	if _, err := db.ExecContext(ctx, `UPDATE other SET x = ?`, 1); err != nil {
		t.Fatal(err)
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`UPDATE other SET x = ?`, []any{int64(1)}}) {
		t.Errorf("pass-through: %+v", got)
	}
	// A DELETE outside a transaction: both statements, inside one transaction.
	if _, err := db.ExecContext(ctx, `DELETE FROM accounts WHERE id = ?`, 3); err != nil {
		t.Fatal(err)
	}
	if got := rec.lastExec(); !reflect.DeepEqual(got, fakeCall{`DELETE FROM accounts WHERE (id = ?) AND "fence_token" = ?`, []any{int64(3), int64(7)}}) {
		t.Errorf("delete: %+v", got)
	}
	if rec.count("BeginTx") != 1 || rec.count("Commit") != 1 {
		t.Errorf("BeginTx %d, Commit %d", rec.count("BeginTx"), rec.count("Commit"))
	}
	// A guarded RETURNING query.
	var id int64
	if err := db.QueryRowContext(ctx, `UPDATE accounts SET x = ? RETURNING id`, 1).Scan(&id); err != nil || id != 42 {
		t.Errorf("returning: %d %v", id, err)
	}
}
