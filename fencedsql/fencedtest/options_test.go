package fencedtest_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/fencedtest"
)

// pgxLike accepts what pgx's stdlib driver accepts beyond database/sql's defaults:
// here []int64 (sent as a PostgreSQL array), kept as is; everything else as the
// default converter does.
type pgxLike struct{}

func (pgxLike) ConvertValue(v any) (driver.Value, error) {
	if a, ok := v.([]int64); ok {
		return a, nil
	}
	return driver.DefaultParameterConverter.ConvertValue(v)
}

// closeAccounts is business code with a []int64 argument, as pgx takes it.
func closeAccounts(ctx context.Context, db *sql.DB, ids []int64) (int64, error) {
	res, err := db.ExecContext(ctx, `UPDATE accounts SET closed = true WHERE id = ANY($1)`, ids)
	if err != nil {
		return 0, err
	}
	return res.RowsAffected()
}

// go-sqlmock options reach the mock: with a value converter a []int64 argument works,
// in the code under test's call and in the expectation (with and without a
// transaction, and for a rejection); without it database/sql refuses the argument
// before anything is sent, which is why the option exists.
func TestSQLMockOptionsValueConverter(t *testing.T) {
	ids := []int64{3, 5, 8}
	const stmt = `UPDATE accounts SET closed = true WHERE id = ANY($1)`

	db, m := fencedtest.NewWith(t, postgres.Dialect,
		fencedtest.WithOptions(fencedsql.Guard("accounts")),
		fencedtest.WithSQLMockOptions(sqlmock.ValueConverterOption(pgxLike{})))
	m.ExpectFencedExec(stmt, 7, ids).WillReturnResult(sqlmock.NewResult(0, 3))
	n, err := closeAccounts(tok(7), db, ids)
	if err != nil || n != 3 {
		t.Fatalf("closeAccounts = %d, %v; want 3, nil", n, err)
	}

	// What was expected is the wrapper's statement with the slice in its place.
	stmts, err := m.Statements(tok(7), false, false, stmt, ids)
	if err != nil || len(stmts) != 1 {
		t.Fatalf("Statements = %v, %v", stmts, err)
	}
	if got := stmts[0].Args; len(got) != 2 || !slices.Equal(got[0].([]int64), ids) || got[1] != int64(7) {
		t.Errorf("args sent = %v, want [%v 7]", got, ids)
	}

	// A stale token: the fencing error maps to ErrFenced with the slice argument too.
	m.ExpectFencedRejection(stmt, 6, ids)
	if _, err := closeAccounts(tok(6), db, ids); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale closeAccounts: %v, want ErrFenced", err)
	}
	met(t, m)
	// Another slice than expected is a mismatch, not a match by accident.
	m.ExpectFencedExec(stmt, 7, []int64{3, 5}).WillReturnResult(sqlmock.NewResult(0, 2))
	if _, err := closeAccounts(tok(7), db, ids); err == nil {
		t.Errorf("a different slice matched the expectation")
	}

	// Without the converter database/sql refuses the []int64 before the driver sees it.
	plain, pm := fencedtest.New(t, postgres.Dialect, fencedsql.Guard("accounts"))
	if _, err := closeAccounts(tok(7), plain, ids); err == nil || !strings.Contains(err.Error(), "[]int64") {
		t.Errorf("without a converter: %v, want database/sql's conversion error", err)
	}
	met(t, pm)
}

// Several WithOptions and WithSQLMockOptions add up; New(t, d, opts...) is
// NewWith(t, d, WithOptions(opts...)); MonitorPingsOption reaches sqlmock (a Ping is
// then an expectation).
func TestNewWithOptionsAddUp(t *testing.T) {
	db, m := fencedtest.NewWith(t, postgres.Dialect,
		fencedtest.WithOptions(fencedsql.Guard("accounts")),
		fencedtest.WithOptions(fencedsql.Guard("orders")),
		fencedtest.WithSQLMockOptions(sqlmock.MonitorPingsOption(true)),
		fencedtest.WithSQLMockOptions(sqlmock.ValueConverterOption(pgxLike{})))
	m.ExpectPing().WillReturnError(errors.New("down"))
	if err := db.Ping(); err == nil || !strings.Contains(err.Error(), "down") {
		t.Errorf("Ping = %v: MonitorPingsOption did not reach sqlmock", err)
	}
	for _, table := range []string{"accounts", "orders"} {
		q := `UPDATE ` + table + ` SET x = $1 WHERE id = ANY($2)`
		m.ExpectFencedExec(q, 9, 1, []int64{1}).WillReturnResult(sqlmock.NewResult(0, 1))
		if _, err := db.ExecContext(tok(9), q, 1, []int64{1}); err != nil {
			t.Errorf("%s: %v", table, err)
		}
	}
	if _, err := db.ExecContext(context.Background(), `UPDATE orders SET x = 1`); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Errorf("orders is not guarded: %v", err)
	}
	met(t, m)
}

// Something that is not a go-sqlmock option fails the test, naming its type.
func TestWithSQLMockOptionsWrongType(t *testing.T) {
	got := fatalOf(func(tb *fakeTB) {
		fencedtest.NewWith(tb, postgres.Dialect, fencedtest.WithSQLMockOptions(pgxLike{}))
	})
	if !strings.Contains(got, "fencedtest_test.pgxLike") || !strings.Contains(got, "not a go-sqlmock option") {
		t.Errorf("Fatalf(%q)", got)
	}
}
