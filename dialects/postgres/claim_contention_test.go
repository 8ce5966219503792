package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestClaimsUnderContentionExactAndOrdered (red-team rt46e, held): fencetest.ClaimContention
// on PostgreSQL, for claims by id and by condition, with the token column selected
// plainly and through a scalar subquery (which reads the row as claimed).
func TestClaimsUnderContentionExactAndOrdered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, guardTableAccounts,
		"INSERT INTO accounts (id, balance) SELECT g, 0 FROM generate_series(1, 6) g",
		"CREATE TABLE claim_contention_log (seq BIGSERIAL PRIMARY KEY, id BIGINT, tok BIGINT)")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	db.SetMaxOpenConns(24)

	for k, fp := range [][2]string{{"id, fence_token", ""}, {"id, (SELECT fence_token)", ""},
		{"id, fence_token", "balance < 40 ORDER BY balance, id LIMIT 2"}, {"id, (SELECT fence_token)", "balance < 40"}, {"id, fence_token", "balance < 40"}} {
		base := uint64(1000000 * (k + 1))
		fencetest.ClaimContention(t, ctx, db, raw, fencetest.Contention{
			Columns: fp[0], Pred: fp[1], N: 16, TokenBase: base,
			Placeholder: func(i int) string { return fmt.Sprintf("$%d", i) },
			Expected: func(_ *testing.T, _ uint64, err error) bool {
				var pe *pgconn.PgError
				return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
			},
		})
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, base+999), "UPDATE accounts SET balance = 0"); err != nil {
			t.Fatal(err)
		}
	}
}
