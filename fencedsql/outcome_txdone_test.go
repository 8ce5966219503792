package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"io"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// A second Commit of a Tx gets database/sql's sql.ErrTxDone whatever the first one's
// outcome was; CommitOutcome calls it Unknown, never NotCommitted: after a first
// Commit that committed, or whose outcome was Unknown, "not committed" would tell a
// commit-retry loop or a deferred second Commit to redo work that is (or may be) in
// the database (red-team rt43e F3). After a refused first Commit Unknown is still
// the answer: database/sql's error does not say which case it is.
func TestCommitOutcomeOfSecondCommitIsUnknown(t *testing.T) {
	const upd = `UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`
	for _, c := range []struct {
		name     string
		firstErr error
		first    fencedsql.Outcome
	}{
		{"first commit succeeded", nil, fencedsql.Committed},
		{"first commit outcome unknown", io.ErrUnexpectedEOF, fencedsql.Unknown},
		{"first commit refused by the server", &pgconn.PgError{Code: "40001"}, fencedsql.NotCommitted},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, mock := newMockDB(t, postgres.Dialect)
			mock.ExpectBegin()
			mock.ExpectExec(upd).WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
			if c.firstErr == nil {
				mock.ExpectCommit()
			} else {
				mock.ExpectCommit().WillReturnError(c.firstErr)
			}
			ctx := fencedsql.WithLease(context.Background(), newFakeLease(7))
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, `UPDATE accounts SET x = $1`, 1); err != nil {
				t.Fatal(err)
			}
			err1 := tx.Commit()
			if got := fencedsql.CommitOutcome(err1); got != c.first {
				t.Fatalf("first Commit = %v: %v, want %v", err1, got, c.first)
			}
			err2 := tx.Commit()
			if !errors.Is(err2, sql.ErrTxDone) {
				t.Fatalf("second Commit = %v, want sql.ErrTxDone", err2)
			}
			if got := fencedsql.CommitOutcome(err2); got != fencedsql.Unknown {
				t.Errorf("second Commit's %q after a first that was %v: CommitOutcome = %v, want %v", err2, c.first, got, fencedsql.Unknown)
			}
			mockMet(t, mock)
		})
	}
}
