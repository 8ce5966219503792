package fencedsql_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// A claim by row locator that the database fails with its conflict check (a cast of a
// text carrying the mark: PostgreSQL's 22P02) is ErrClaimConflict, the driver's error
// reachable; a 22P02 without the mark stays the driver's error.
func TestSqlmockClaimConflictPostgres(t *testing.T) {
	const claim = `SELECT id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE`
	for _, c := range []struct {
		name, msg string
		conflict  bool
	}{
		{"marked", `invalid input syntax for type boolean: "fencedsql_claim_conflict: the claim stamped 0 of the 1 rows its locking read locked"`, true},
		{"unmarked", `invalid input syntax for type boolean: "maybe"`, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, mock := newMockDB(t, postgres.Dialect)
			mock.ExpectBegin()
			mock.ExpectQuery(claimLocatorSQL).WithArgs(int64(7)).
				WillReturnError(&pgconn.PgError{Code: "22P02", Message: c.msg})
			mock.ExpectRollback()
			ctx := context.Background()
			tx, err := db.BeginTx(withTok(7), nil)
			if err != nil {
				t.Fatal(err)
			}
			_, err = tx.QueryContext(ctx, claim)
			var pe *pgconn.PgError
			if !errors.As(err, &pe) || pe.Code != "22P02" {
				t.Errorf("the driver's error is not reachable: %v", err)
			}
			if got := errors.Is(err, fencedsql.ErrClaimConflict); got != c.conflict {
				t.Errorf("errors.Is(%v, ErrClaimConflict) = %v, want %v", err, got, c.conflict)
			}
			var ce *fencedsql.ClaimConflictError
			if c.conflict && (!errors.As(err, &ce) || ce.Table != "accounts" || !strings.Contains(err.Error(), "retry")) {
				t.Errorf("ClaimConflictError = %+v (%v)", ce, err)
			}
			if errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrVersionConflict) {
				t.Errorf("err matches another sentinel: %v", err)
			}
			_ = tx.Rollback()
			mockMet(t, mock)
		})
	}
}

// claimLocatorSQL is the one-statement claim by row locator of the test's read.
const claimLocatorSQL = `WITH fencedsql_locked AS (SELECT ARRAY(SELECT ctid FROM accounts ORDER BY id, ctid LIMIT 1 FOR UPDATE) AS l, ` +
	`ARRAY(SELECT ctid FROM accounts ORDER BY id, ctid LIMIT 1) AS u), ` +
	`fencedsql_claimed AS (UPDATE accounts SET "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $1 THEN $1::bigint ELSE NULL END ` +
	`WHERE ctid = ANY((SELECT l || u FROM fencedsql_locked)::tid[]) ` +
	`AND (ctid = ANY((SELECT l || u FROM fencedsql_locked)::tid[])) IS TRUE RETURNING accounts.*) ` +
	`SELECT id FROM fencedsql_claimed AS accounts WHERE (SELECT CASE WHEN n = cardinality(l) THEN true ELSE ` +
	`CAST('fencedsql_claim_conflict: the claim stamped ' || n || ' of the ' || cardinality(l) || ' rows its locking read locked' AS boolean) END ` +
	`FROM fencedsql_locked, (SELECT count(*) AS n FROM fencedsql_claimed) AS fencedsql_n) ORDER BY id`
