package postgres_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRulesOnGuardTablesReported: rules ON the guard tables themselves (the tombstone
// table, the token floor) — a rule that drops or undoes the tombstone write or the
// floor raise (red-team rt50a, held). schema.Check reports the guard table, the pool
// refuses the guarded table, and the floor tools refuse an unsafe floor table.
func TestRulesOnGuardTablesReported(t *testing.T) {
	for i, rule := range []string{
		"CREATE RULE guard_table_rule AS ON INSERT TO fencedsql_tomb_accounts DO INSTEAD NOTHING",
		"CREATE RULE guard_table_rule AS ON UPDATE TO fencedsql_tomb_accounts DO INSTEAD NOTHING",
		"CREATE RULE guard_table_rule AS ON INSERT TO fencedsql_tomb_accounts DO ALSO DELETE FROM fencedsql_tomb_accounts",
		"CREATE RULE guard_table_rule AS ON UPDATE TO fencedsql_floor DO INSTEAD NOTHING",
		"CREATE RULE guard_table_rule AS ON UPDATE TO fencedsql_floor DO ALSO UPDATE fencedsql_floor SET floor = 0",
	} {
		floor := strings.Contains(rule, "fencedsql_floor")
		t.Run(string(rune('a'+i)), func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			testdb.Exec(t, raw, rule)
			reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			if reps[0].OK() || !strings.Contains(strings.Join(reps[0].Problems, " "), "guard_table_rule") {
				t.Errorf("%s: schema.Check OK=%v problems %q; want the rule reported", rule, reps[0].OK(), reps[0].Problems)
			}
			if floor {
				if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 1000); err == nil {
					t.Errorf("%s: RaiseTokenFloor succeeded through the rule", rule)
				}
				db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
				if _, err := db.ExecContext(fencedsql.WithToken(ctx, 500), "UPDATE accounts SET balance = 6 WHERE id = 1"); !errors.Is(err, fencedsql.ErrSchema) {
					t.Errorf("%s: fenced UPDATE: %v, want ErrSchema", rule, err)
				}
				return
			}
			tombAttack(t, ctx, dsn, false, 0)
		})
	}
}
