package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A view over a guarded table whose own definition holds a locking clause (at the
// top, in a subquery, in a CTE, or under another view) locks the table's rows on a
// plain SELECT, which the planner cannot see to claim: schema.Check reports it as a
// "locking view" (no fix statement: recreating the view is the owner's call) and a
// fresh pool's lazy check refuses the table's guarded writes (ErrSchema) until it is
// dropped; a view without a locking clause, and a locking view over another table,
// are no door.
func TestLockingViewDoor(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE other (id BIGINT PRIMARY KEY)`,
		`CREATE VIEW plain_v AS SELECT a.id, a.balance FROM accounts a JOIN other o ON o.id = a.id`,
		`CREATE VIEW other_lock AS SELECT id FROM other FOR UPDATE`,
	)
	ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
	defer cancel()
	spec := schema.GuardSpec{Table: "accounts"}
	locking := func() []string {
		t.Helper()
		reps, err := schema.Check(ctx, raw, postgres.Dialect, spec)
		if err != nil {
			t.Fatal(err)
		}
		var objs []string
		for _, sd := range reps[0].SideDoors {
			if sd.Kind == dialect.SideDoorLockingView {
				objs = append(objs, sd.Object)
				if len(sd.Fix) != 0 || !strings.Contains(sd.Problem, "locking clause") {
					t.Errorf("door %s: fix %q, problem %q", sd.Object, sd.Fix, sd.Problem)
				}
			}
		}
		return objs
	}
	if got := locking(); len(got) != 0 {
		t.Fatalf("locking views before any: %q", got)
	}
	write := func() error {
		db, err := sql.Open("fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO accounts (id, balance) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET balance = 2")
		return err
	}
	if err := write(); err != nil {
		t.Fatalf("write with no locking view: %v", err)
	}
	for _, v := range []string{
		`CREATE VIEW lv_top AS SELECT id, balance FROM accounts FOR UPDATE`,
		`CREATE VIEW lv_sub AS SELECT * FROM (SELECT id FROM accounts FOR SHARE) s`,
		`CREATE VIEW lv_cte AS WITH c AS (SELECT id FROM accounts FOR NO KEY UPDATE) SELECT id FROM c`,
		`CREATE VIEW lv_nested AS SELECT p.id FROM plain_v p JOIN (SELECT id FROM plain_v FOR KEY SHARE) q ON q.id = p.id`,
	} {
		name := strings.Fields(v)[2]
		if _, err := raw.ExecContext(ctx, v); err != nil {
			t.Fatal(v, err)
		}
		if got := locking(); len(got) != 1 || got[0] != "public."+name {
			t.Errorf("%s: locking views %q, want public.%s", name, got, name)
		}
		err := write()
		var se *fencedsql.SchemaError
		if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || !strings.Contains(err.Error(), name) {
			t.Errorf("%s: write on a fresh pool: %v; want ErrSchema naming the view", name, err)
		}
		if _, err := raw.ExecContext(ctx, "DROP VIEW "+name); err != nil {
			t.Fatal(err)
		}
		if err := write(); err != nil {
			t.Errorf("%s dropped: write: %v", name, err)
		}
	}
}
