package postgres_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestGuardedPartitionOfParentKeyedOnFencingColumnRefused (red-team rt61a F2): a
// partition guarded on its own, with its own primary key, whose parent (or an ancestor
// further up) is partitioned by a fencing column. The partition's bound is then a
// constraint on the fencing column: a correct fenced UPDATE under a token past the
// bound failed with the server's raw 23514 ("violates partition constraint"), and
// neither Check nor the pool said why. Now the lint reads the partition keys of the
// table's ancestors too: Check reports the partition key, and the pool refuses the
// table (ErrSchema) before anything is written.
func TestGuardedPartitionOfParentKeyedOnFencingColumnRefused(t *testing.T) {
	const cols = "id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0"
	trees := []struct {
		name, guarded string
		ddl           []string
	}{
		{"the parent partitioned by the token", "accounts_lo", []string{
			"CREATE TABLE accounts (" + cols + ") PARTITION BY RANGE (fence_token)",
			"CREATE TABLE accounts_lo PARTITION OF accounts (PRIMARY KEY (id)) FOR VALUES FROM (MINVALUE) TO (10)",
			"CREATE TABLE accounts_hi PARTITION OF accounts (PRIMARY KEY (id)) FOR VALUES FROM (10) TO (MAXVALUE)",
		}},
		{"the grandparent partitioned by the version", "accounts_lo_1", []string{
			"CREATE TABLE accounts (" + cols + ") PARTITION BY RANGE (version)",
			"CREATE TABLE accounts_lo PARTITION OF accounts FOR VALUES FROM (MINVALUE) TO (10) PARTITION BY LIST (id)",
			"CREATE TABLE accounts_lo_1 PARTITION OF accounts_lo (PRIMARY KEY (id)) FOR VALUES IN (1)",
			"CREATE TABLE accounts_hi PARTITION OF accounts (PRIMARY KEY (id)) FOR VALUES FROM (10) TO (MAXVALUE)",
		}},
	}
	for _, tr := range trees {
		t.Run(tr.name, func(t *testing.T) {
			ctx := context.Background()
			dsn := testdb.Postgres(t)
			raw := testdb.Open(t, "pgx", dsn, tr.ddl...)
			spec := schema.GuardSpec{Table: tr.guarded}
			reps, err := schema.Check(ctx, raw, postgres.Dialect, spec)
			if err != nil {
				t.Fatal(err)
			}
			reported := false
			var problems []string
			for _, r := range reps {
				problems = append(problems, r.Problems...)
				for _, p := range r.Problems {
					reported = reported || strings.Contains(p, "the partition key of")
				}
				for _, s := range r.Fix {
					if _, err := raw.ExecContext(ctx, s); err != nil {
						t.Fatalf("Fix %q: %v", s, err)
					}
				}
			}
			if !reported {
				t.Errorf("schema.Check of %s does not report its ancestor's partition key on a fencing column: %q", tr.guarded, problems)
			}
			db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard(tr.guarded))
			defer db.Close()
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO "+tr.guarded+" (id, balance) VALUES (1, 100)")
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Errorf("a fenced INSERT into %s: %v; want ErrSchema (a fenced write moves the row out of its partition's bound)", tr.guarded, err)
			}
			var n int
			if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil || n != 0 {
				t.Errorf("rows written: %d, %v; want none", n, err)
			}
		})
	}
}
