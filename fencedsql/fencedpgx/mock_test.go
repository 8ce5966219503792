package fencedpgx_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx/fencedpgxtest"
	"github.com/fencedsql/fencedsql/fencedsql/fencedpgx/internal/sqlcpgx"
	fschema "github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/metrictest"
)

// Unit tests over the pgx test double: the exact SQL and arguments fencedpgx sends.

const (
	fencedDebit = `UPDATE accounts SET balance = balance - $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`
	deletePre   = `UPDATE accounts SET "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`
	deleteMain  = `DELETE FROM accounts WHERE (id = $1) AND "fence_token" = $2`
	claimOne    = `WITH fencedsql_claimed AS (UPDATE accounts SET "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE (id = $1) AND (SELECT count(*) FROM (SELECT FROM accounts WHERE id = $1 FOR UPDATE) AS fencedsql_locked) >= 0 RETURNING accounts.*) SELECT balance FROM fencedsql_claimed AS accounts`
)

func mockPool(t *testing.T, opts ...fencedsql.Option) (*fencedpgx.Pool, *fencedpgxtest.DB) {
	t.Helper()
	m := fencedpgxtest.NewDB()
	all := append([]fencedsql.Option{fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false)}, opts...)
	db, err := fencedpgx.Wrap(m, all...)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() {
		if err := m.ExpectationsWereMet(); err != nil {
			t.Error(err)
		}
	})
	return db, m
}

var bg = context.Background()

func TestMockExactSQL(t *testing.T) {
	db, m := mockPool(t)
	ctx := fencedsql.WithToken(bg, 7)

	m.ExpectExec(fencedDebit).WithArgs(30, 42, int64(7)).WillReturnResult(pgconn.NewCommandTag("UPDATE 1"))
	tag, err := db.Exec(ctx, debit, 30, 42)
	if err != nil || tag.RowsAffected() != 1 {
		t.Fatalf("%v %v", tag, err)
	}

	// Stale: the database's NOT NULL violation on the token column is ErrFenced.
	m.ExpectExec(fencedDebit).WithArgs(30, 42, int64(7)).WillReturnError(fencedpgxtest.FencingError("accounts", "fence_token"))
	_, err = db.Exec(ctx, debit, 30, 42)
	wantErr(t, err, fencedsql.ErrFenced)

	// DELETE outside a transaction: the wrapper's own, around its two statements.
	m.ExpectBegin()
	m.ExpectExec(deletePre).WithArgs(42, int64(7))
	m.ExpectExec(deleteMain).WithArgs(42, int64(7)).WillReturnResult(pgconn.NewCommandTag("DELETE 1"))
	m.ExpectCommit()
	if tag, err := db.Exec(ctx, "DELETE FROM accounts WHERE id = $1", 42); err != nil || tag.String() != "DELETE 1" {
		t.Fatalf("delete: %v %v", tag, err)
	}
	// A fenced DELETE rolls its own transaction back.
	m.ExpectBegin()
	m.ExpectExec(deletePre).WithArgs(42, int64(7)).WillReturnError(fencedpgxtest.FencingError("accounts", "fence_token"))
	m.ExpectRollback()
	_, err = db.Exec(ctx, "DELETE FROM accounts WHERE id = $1", 42)
	wantErr(t, err, fencedsql.ErrFenced)

	// In the caller's transaction, bound to its token (the statement's context has none).
	m.ExpectBegin()
	m.ExpectExec(deletePre).WithArgs(42, int64(9))
	m.ExpectExec(deleteMain).WithArgs(42, int64(9))
	m.ExpectQuery(`SELECT balance FROM accounts WHERE id = $1`).WithArgs(42).WillReturnRows([]string{"balance"}, []any{int64(5)})
	m.ExpectCommit()
	tx, err := db.Begin(fencedsql.WithToken(bg, 9))
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.Exec(bg, "DELETE FROM accounts WHERE id = $1", 42); err != nil {
		t.Fatal(err)
	}
	var bal int64
	if err := tx.QueryRow(bg, "SELECT balance FROM accounts WHERE id = $1", 42).Scan(&bal); err != nil || bal != 5 {
		t.Fatalf("read: %d %v", bal, err)
	}
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}
	if err := tx.Rollback(bg); !errors.Is(err, pgx.ErrTxClosed) {
		t.Fatalf("Rollback after Commit: %v", err)
	}

	// A claimed read, in a transaction: one statement that stamps the rows and returns
	// the caller's columns (PostgreSQL's one-statement claim, plan.ClaimOne).
	// (Outside a transaction a locking read with a token is refused, nothing sent.)
	if err := db.QueryRow(ctx, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 42).Scan(&bal); !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("claim outside a transaction: %v, want ErrUnsupported", err)
	}
	m.ExpectBegin()
	m.ExpectQuery(claimOne).WithArgs(42, int64(7)).WillReturnRows([]string{"balance"}, []any{int64(5)})
	m.ExpectCommit()
	claimTx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if err := claimTx.QueryRow(bg, "SELECT balance FROM accounts WHERE id = $1 FOR UPDATE", 42).Scan(&bal); err != nil {
		t.Fatal(err)
	}
	if err := claimTx.Commit(bg); err != nil {
		t.Fatal(err)
	}
}

// Refused statements are never sent: the double has no expectation for them.
func TestMockRefusedNeverSent(t *testing.T) {
	db, _ := mockPool(t)
	_, err := db.Exec(bg, debit, 30, 42)
	wantErr(t, err, fencedsql.ErrNoToken)
	_, err = db.Exec(fencedsql.WithToken(bg, 7), "TRUNCATE accounts")
	wantErr(t, err, fencedsql.ErrUnsupported)
	rows, err := db.Query(fencedsql.WithToken(bg, 7), "UPDATE accounts SET balance = 1; SELECT 1")
	wantErr(t, err, fencedsql.ErrUnsupported)
	if rows == nil || rows.Next() || !errors.Is(rows.Err(), fencedsql.ErrUnsupported) {
		t.Fatal("the rows of a refused query must report the refusal")
	}
	_, err = db.CopyFrom(bg, pgx.Identifier{"accounts"}, []string{"id"}, pgx.CopyFromRows(nil))
	wantErr(t, err, fencedsql.ErrUnsupported)
	b := &pgx.Batch{}
	b.Queue("SELECT 1")
	b.Queue(debit, 1, 2)
	wantErr(t, db.SendBatch(bg, b).Close(), fencedsql.ErrNoToken)
}

func TestMockArgumentsAndOptions(t *testing.T) {
	db, m := mockPool(t)
	ctx := fencedsql.WithToken(bg, 7)
	// pgx.NamedArgs is applied before fencing.
	m.ExpectExec(fencedDebit).WithArgs(30, 42, int64(7))
	if _, err := db.Exec(ctx, "UPDATE accounts SET balance = balance - @amount WHERE id = @id", pgx.NamedArgs{"amount": 30, "id": 42}); err != nil {
		t.Fatal(err)
	}
	// A QueryExecMode argument is passed on in front of the fenced arguments.
	m.ExpectExec(fencedDebit).WithArgs(pgx.QueryExecModeSimpleProtocol, 30, 42, int64(7))
	if _, err := db.Exec(ctx, debit, pgx.QueryExecModeSimpleProtocol, 30, 42); err != nil {
		t.Fatal(err)
	}
	// ExpectVersion adds the expected version.
	m.ExpectExec(`UPDATE accounts SET balance = balance - $1, "version" = CASE WHEN "version" = $4 THEN "version" + 1 WHEN "fence_token" <= $3 THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`).
		WithArgs(30, 42, int64(7), int64(3)).WillReturnError(&pgconn.PgError{Code: "23502", ColumnName: "version"})
	_, err := db.Exec(fencedsql.ExpectVersion(ctx, 3), debit, 30, 42)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	// Wrong argument count: refused before sending.
	_, err = db.Exec(ctx, debit, 30)
	if err == nil || !strings.Contains(err.Error(), "placeholders") {
		t.Fatalf("argument count: %v", err)
	}
	// Unique violation on any path.
	m.ExpectExec("INSERT INTO tags VALUES ($1)").WithArgs("x").WillReturnError(&pgconn.PgError{Code: "23505", ConstraintName: "tags_pkey"})
	_, err = db.Exec(bg, "INSERT INTO tags VALUES ($1)", "x")
	var de *fencedsql.DuplicateError
	if !errors.As(err, &de) || de.Constraint != "tags_pkey" {
		t.Fatalf("duplicate: %v", err)
	}
}

func TestMockBatch(t *testing.T) {
	db, m := mockPool(t)
	ctx := fencedsql.WithToken(bg, 7)
	e := m.ExpectBatch()
	e.ExpectExec(fencedDebit).WithArgs(1, 1, int64(7))
	e.ExpectExec(deletePre).WithArgs(2, int64(7)).WillReturnError(fencedpgxtest.FencingError("accounts", "fence_token"))
	e.ExpectExec(deleteMain).WithArgs(2, int64(7))
	e.ExpectExec("INSERT INTO audit_log (note) VALUES ($1)").WithArgs("n")
	b := &pgx.Batch{}
	b.Queue(debit, 1, 1)
	b.Queue("DELETE FROM accounts WHERE id = $1", 2)
	b.Queue("INSERT INTO audit_log (note) VALUES ($1)", "n")
	br := db.SendBatch(ctx, b)
	if _, err := br.Exec(); err != nil {
		t.Fatal(err)
	}
	_, err := br.Exec()
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = br.Exec()
	wantErr(t, err, fencedsql.ErrFenced) // the batch failed as a whole
	wantErr(t, br.Close(), fencedsql.ErrFenced)
}

func TestMockPrepared(t *testing.T) {
	m := fencedpgxtest.NewDB()
	c, err := fencedpgx.WrapConn(m, fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false))
	if err != nil {
		t.Fatal(err)
	}
	// The rewrite is prepared under its own text (never under the caller's name); the
	// caller's name runs it with each transaction's token.
	m.ExpectPrepare(fencedDebit, fencedDebit)
	sd, err := c.Prepare(bg, "debit", debit)
	if err != nil || sd.Name != "debit" || sd.SQL != debit || len(sd.ParamOIDs) != 2 {
		t.Fatalf("%+v %v", sd, err)
	}
	for _, tk := range []int64{7, 8} {
		m.ExpectBegin()
		m.ExpectExec(fencedDebit).WithArgs(1, 2, tk)
		m.ExpectCommit()
		tx, err := c.Begin(fencedsql.WithToken(bg, uint64(tk)))
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec(bg, "debit", 1, 2); err != nil {
			t.Fatal(err)
		}
		if err := tx.Commit(bg); err != nil {
			t.Fatal(err)
		}
	}
	// A statement that writes no guarded table is prepared as written, under its text
	// too: the caller's name never reaches pgx, which would run the statement for any
	// query whose text is that name.
	const bal = "SELECT balance FROM accounts WHERE id = $1"
	m.ExpectPrepare(bal, bal)
	if _, err := c.Prepare(bg, "bal", bal); err != nil {
		t.Fatal(err)
	}
	m.ExpectQuery(bal).WithArgs(1).WillReturnRows([]string{"balance"}, []any{int64(3)})
	var got int64
	if err := c.QueryRow(bg, "bal", 1).Scan(&got); err != nil || got != 3 {
		t.Fatalf("%d %v", got, err)
	}
	if err := m.ExpectationsWereMet(); err != nil {
		t.Fatal(err)
	}
}

func TestMockMetrics(t *testing.T) {
	mr := metrictest.New(t)
	db, m := mockPool(t, fencedsql.WithMeterProvider(mr))
	ctx := fencedsql.WithToken(bg, 7)
	m.ExpectExec(fencedDebit).WithArgs(1, 2, int64(7)).WillReturnError(fencedpgxtest.FencingError("accounts", "fence_token"))
	_, _ = db.Exec(ctx, debit, 1, 2)
	_, _ = db.Exec(bg, debit, 1, 2)
	_, _ = db.Exec(ctx, "TRUNCATE accounts")
	_, _ = db.CopyFrom(ctx, pgx.Identifier{"accounts"}, nil, pgx.CopyFromRows(nil))
	for name, want := range map[string]int64{
		fencedsql.MetricFencedRejections: 1,
		fencedsql.MetricNoToken:          1,
		fencedsql.MetricUnsupported:      2,
	} {
		if got := mr.Sum(t, name); got != want {
			t.Errorf("%s = %d, want %d", name, got, want)
		}
	}
}

// The fencedtest-like helper: expectations in terms of the business code's SQL.
func TestHelper(t *testing.T) {
	db, mock := fencedpgxtest.New(t, fencedsql.Guard("accounts"))
	q := sqlcpgx.New(db)
	ctx := fencedsql.WithToken(bg, 7)

	mock.ExpectBegin()
	mock.ExpectFencedExec(sqlcAddBalance, 7, 30, 42).WillReturnResult(pgconn.NewCommandTag("UPDATE 1"))
	mock.ExpectCommit()
	tx, err := db.Begin(ctx)
	if err != nil {
		t.Fatal(err)
	}
	if n, err := q.WithTx(tx).AddBalance(bg, sqlcpgx.AddBalanceParams{Balance: 30, ID: 42}); err != nil || n != 1 {
		t.Fatalf("%d %v", n, err)
	}
	if err := tx.Commit(bg); err != nil {
		t.Fatal(err)
	}

	mock.ExpectFencedRejection(sqlcAddBalance, 7, 30, 42)
	_, err = q.AddBalance(ctx, sqlcpgx.AddBalanceParams{Balance: 30, ID: 42})
	wantErr(t, err, fencedsql.ErrFenced)

	// A DELETE outside a transaction: the helper expects the wrapper's BEGIN/COMMIT.
	mock.ExpectFencedExec("-- name: DeleteAccount :exec\nDELETE FROM accounts WHERE id = $1\n", 7, 42)
	if err := q.DeleteAccount(ctx, 42); err != nil {
		t.Fatal(err)
	}
	mock.ExpectFencedQuery("-- name: UpdateBalanceReturning :one\nUPDATE accounts SET balance = $1 WHERE id = $2 RETURNING id, owner, balance, fence_token, version\n", 7, 5, 42).
		WillReturnRows([]string{"id", "owner", "balance", "fence_token", "version"}, []any{int64(42), "bob", int64(5), int64(7), int64(3)})
	a, err := q.UpdateBalanceReturning(ctx, sqlcpgx.UpdateBalanceReturningParams{Balance: 5, ID: 42})
	if err != nil || a.Owner != (pgtype.Text{String: "bob", Valid: true}) || a.FenceToken != 7 {
		t.Fatalf("%+v %v", a, err)
	}
	mock.ExpectFencedQueryRejection("-- name: UpdateBalanceReturning :one\nUPDATE accounts SET balance = $1 WHERE id = $2 RETURNING id, owner, balance, fence_token, version\n", 7, 5, 42)
	_, err = q.UpdateBalanceReturning(ctx, sqlcpgx.UpdateBalanceReturningParams{Balance: 5, ID: 42})
	wantErr(t, err, fencedsql.ErrFenced)

	st, err := mock.Statements(ctx, false, false, debit, 30, 42)
	if err != nil || len(st) != 1 || st[0].SQL != fencedDebit {
		t.Fatalf("Statements: %v %v", st, err)
	}
}

const sqlcAddBalance = "-- name: AddBalance :execrows\nUPDATE accounts SET balance = balance + $1 WHERE id = $2\n"

// triggerRecordQuery is the query of the tables carrying the guard's triggers, one of
// the pool's first-use reads (schema.ReadRecords).
func triggerRecordQuery(t *testing.T) string {
	t.Helper()
	var found string
	_, _ = fschema.ReadRecords(bg, func(_ context.Context, q string, _ ...any) ([][]string, error) {
		if strings.Contains(q, "pg_trigger") {
			found = q
		}
		return nil, nil
	}, postgres.Dialect)
	if found == "" {
		t.Fatal("no trigger record query")
	}
	return found
}

// Over a mock, the pool's first-use reads are sent as through database/sql over
// go-sqlmock: with the schema check off a read the mock does not answer is logged (not
// an unexpected call), and a record the mock does answer is obeyed — here a table
// carrying the guard's triggers, which no Guard names, is guarded.
func TestMockFirstUseRecordObeyed(t *testing.T) {
	db, m := mockPool(t)
	m.ExpectQuery(triggerRecordQuery(t)).WillReturnRows([]string{"nspname", "relname"}, []any{"public", "orders"})
	_, err := db.Exec(bg, "UPDATE orders SET note = $1 WHERE id = $2", "x", 1)
	wantErr(t, err, fencedsql.ErrNoToken) // orders is guarded: nothing is sent without a token
}

// With the schema check on, a mock that answers none of the first-use reads fails the
// first statement with ErrSchema, as sqlmock does through database/sql; only the
// catalog reads are sent, and they are not unexpected calls.
func TestMockFirstUseSchemaCheckOn(t *testing.T) {
	db, _ := mockPool(t, fencedsql.WithSchemaCheck(true))
	_, err := db.Exec(fencedsql.WithToken(bg, 7), debit, 30, 42)
	wantErr(t, err, fencedsql.ErrSchema)
}
