package postgres_test

import (
	"context"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// floorBodyCase is a statement that spells a write of the token floor in a body
// (a routine's, a DO block's) the planner must read as the server does, on a pool with
// fenced_allow=allow; call runs what it created ("" for none); controls are spellings
// the checks read plainly.
type floorBodyCase struct {
	name, allow, create, call string
	controls                  []string
}

// requireFloorBodiesRefused runs each case over a guarded table whose floor is 50: the
// controls, then the case, must be refused with ErrUnsupported; if the case is not, it
// reports whether the floor was lowered and a write under token 40 then accepted.
func requireFloorBodiesRefused(t *testing.T, cases []floorBodyCase) {
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			ctx := context.Background()
			raw := testdb.Open(t, "pgx", dsn, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
			testdb.Exec(t, raw, postgres.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
			testdb.Exec(t, raw, "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 0, 5, 1)")
			if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 50); err != nil {
				t.Fatal(err)
			}
			db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts&fenced_allow="+c.allow))
			for _, q := range c.controls {
				if _, err := db.ExecContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("control %q: %v, want ErrUnsupported", q, err)
				}
			}
			if _, err := db.ExecContext(ctx, c.create); err != nil {
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("err = %v, want ErrUnsupported (the decoded literal names the floor)", err)
				}
				return
			}
			if c.call != "" {
				if _, err := db.ExecContext(ctx, c.call); err != nil {
					t.Fatalf("call refused after the function was created: %v; want the CREATE refused", err)
				}
			}
			var floor int64
			_ = raw.QueryRowContext(ctx, "SELECT floor FROM fencedsql_floor WHERE id = 1").Scan(&floor)
			_, werr := db.ExecContext(fencedsql.WithToken(ctx, 40), "UPDATE accounts SET balance = 1 WHERE id = 1")
			t.Errorf("with fenced_allow=%s, %q went through the fenced pool: floor now %d (was 50); a write under token 40: err = %v", c.allow, c.create, floor, werr)
		})
	}
}
