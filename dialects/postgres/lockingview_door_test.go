package postgres_test

import (
	"context"
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
		db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO accounts (id, balance) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET balance = 2")
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

// A view over one of the guarded table's partitions or inheritance children (at any
// depth) is a view over the table's rows: a locking one locks them on a plain SELECT,
// an updatable one writes them unfenced. schema.Check reports it for the guarded
// table, a fresh pool's guarded write is refused (ErrSchema naming the view) while it
// exists, and dropping it clears both.
func TestLockingViewDoorOverDescendants(t *testing.T) {
	partitioned := `CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)) PARTITION BY RANGE (id);
		CREATE TABLE accounts_p1 PARTITION OF accounts FOR VALUES FROM (0) TO (1000) PARTITION BY RANGE (id);
		CREATE TABLE accounts_p1a PARTITION OF accounts_p1 FOR VALUES FROM (0) TO (500);
		CREATE TABLE accounts_p1b PARTITION OF accounts_p1 FOR VALUES FROM (500) TO (1000)`
	inherited := `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);
		CREATE TABLE accounts_c () INHERITS (accounts);
		CREATE TABLE accounts_cc () INHERITS (accounts_c)`
	for _, c := range []struct {
		name, setup, view string
		kind              dialect.SideDoorKind
	}{
		{"partition", partitioned, `CREATE VIEW lv_part AS SELECT id, balance FROM accounts_p1 FOR UPDATE`, dialect.SideDoorLockingView},
		{"subpartition", partitioned, `CREATE VIEW lv_sub AS SELECT * FROM (SELECT id FROM accounts_p1b FOR SHARE) s`, dialect.SideDoorLockingView},
		{"inheritance child", inherited, `CREATE VIEW lv_child AS SELECT id, balance FROM accounts_c FOR UPDATE`, dialect.SideDoorLockingView},
		{"inheritance grandchild", inherited, `CREATE VIEW lv_grand AS SELECT id FROM accounts_cc FOR NO KEY UPDATE`, dialect.SideDoorLockingView},
		{"updatable over partition", partitioned, `CREATE VIEW uv_part AS SELECT * FROM accounts_p1a`, dialect.SideDoorView},
		{"updatable over child", inherited, `CREATE VIEW uv_child AS SELECT * FROM accounts_c`, dialect.SideDoorView},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn := testdb.Postgres(t)
			raw := rawWith(t, dsn, c.setup)
			ctx, cancel := context.WithTimeout(context.Background(), time.Minute)
			defer cancel()
			name := strings.Fields(c.view)[2]
			doors := func() []string {
				t.Helper()
				reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
				if err != nil {
					t.Fatal(err)
				}
				var objs []string
				for _, sd := range reps[0].SideDoors {
					if sd.Kind == c.kind {
						objs = append(objs, sd.Object)
					}
				}
				return objs
			}
			write := func() error {
				db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables=accounts"))
				_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "INSERT INTO accounts (id, balance) VALUES (1, 1) ON CONFLICT (id) DO UPDATE SET balance = 2")
				return err
			}
			if got := doors(); len(got) != 0 {
				t.Fatalf("%s doors before the view: %q", c.kind, got)
			}
			if err := write(); err != nil {
				t.Fatalf("write before the view: %v", err)
			}
			if _, err := raw.ExecContext(ctx, c.view); err != nil {
				t.Fatal(c.view, err)
			}
			if got := doors(); len(got) != 1 || got[0] != "public."+name {
				t.Errorf("%s doors: %q, want public.%s", c.kind, got, name)
			}
			err := write()
			if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), name) {
				t.Errorf("guarded write while %s exists: %v; want ErrSchema naming the view", name, err)
			}
			var n int
			if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM accounts").Scan(&n); err != nil || n != 1 {
				t.Errorf("rows of accounts after the refused write: %d, %v; want the one row written before the view", n, err)
			}
			if _, err := raw.ExecContext(ctx, "DROP VIEW "+name); err != nil {
				t.Fatal(err)
			}
			if got := doors(); len(got) != 0 {
				t.Errorf("%s doors after DROP VIEW: %q", c.kind, got)
			}
			if err := write(); err != nil {
				t.Errorf("%s dropped: write: %v", name, err)
			}
		})
	}
}
