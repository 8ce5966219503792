package mysql_test

import (
	"context"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestTriggerReinstallLeavesNoWindow (MariaDB, red-team rt34a F1): re-installing the
// guards on a live table — schema.TombstoneFix's statements, schema.Check's Fix for an
// outdated guard, fencedsql-schema -apply after a table swap or an upgrade — runs in
// autocommit (MariaDB's DDL is not transactional). Installed as DROP TRIGGER IF EXISTS
// then CREATE TRIGGER, a trigger left the table without it between the two, and a
// writer on another connection that landed there was not judged:
//
//   - tombins: a stale holder (token 30) re-inserted a key a newer holder (40) deleted
//     before the re-install: the tombstone was there, the check was not;
//   - tombdel: the newer holder's fenced DELETE (token 40, through the pool) landed in
//     the gap and recorded no tombstone, so the stale re-insert after the re-install
//     passed too;
//   - guard: a stale plain UPDATE that lowered the token (40 → 30) passed.
//
// The interleaving is forced by running the Fix's statements one by one, as -apply
// does, and writing from a second plain connection right after the DROP of the
// trigger's own name. Each trigger is now installed through a shadow copy
// (replaceTrigger), which guards the table across that DROP: each write is refused.
func TestTriggerReinstallLeavesNoWindow(t *testing.T) {
	cases := []struct {
		name, drop string   // the DROP after which the second connection writes
		gap        []string // written by the second connection in the gap
		gapFenced  bool     // the gap write is the newer holder's, through the fenced pool (token 40)
		after      string   // written after the re-install (may be "")
		check      string   // SELECT COUNT(*) that must be 0
	}{
		{name: "tombins", drop: "fencedsql_tombins_accounts",
			gap:   []string{"INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 666, 30, 1)"},
			check: "SELECT COUNT(*) FROM accounts WHERE id = 2"},
		{name: "tombdel", drop: "fencedsql_tombdel_accounts",
			gap: []string{"DELETE FROM accounts WHERE id = 1"}, gapFenced: true, // the newer holder's (row 1 is at 40)
			after: "INSERT INTO accounts (id, balance, fence_token, version) VALUES (1, 666, 30, 1)",
			check: "SELECT COUNT(*) FROM accounts WHERE id = 1 AND fence_token = 30"},
		{name: "guard", drop: "fencedsql_guard_accounts",
			gap:   []string{"UPDATE accounts SET balance = 666, fence_token = 30, version = version + 1 WHERE id = 1"},
			check: "SELECT COUNT(*) FROM accounts WHERE id = 1 AND fence_token = 30"},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			dsn, admin := tombstoneClockSetup(t, ctx)
			fenced := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts"))
			// The newer holder (40) wrote rows 1 and 2, then deleted row 2.
			for _, q := range []string{"UPDATE accounts SET balance = 1 WHERE id IN (1, 2)", "DELETE FROM accounts WHERE id = 2"} {
				if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 40), q); err != nil {
					t.Fatalf("%s under 40: %v", q, err)
				}
			}
			// Controls: with the guards in place each gap write is refused.
			for _, q := range append(append([]string{}, c.gap[len(c.gap)-1:]...), "INSERT INTO accounts (id, balance, fence_token, version) VALUES (2, 666, 30, 1)") {
				if strings.HasPrefix(q, "DELETE") {
					continue
				}
				if _, err := admin.ExecContext(ctx, q); err == nil {
					t.Fatalf("control: %s accepted with the guards installed", q)
				}
			}
			var ddl []string
			if c.name == "guard" {
				ddl = mysql.Dialect.(dialect.Guarder).GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
			} else {
				var err error
				ddl, err = schema.TombstoneFix(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
				if err != nil {
					t.Fatal(err)
				}
			}
			installer, err := admin.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer installer.Close()
			writer, err := admin.Conn(ctx) // a second, plain connection
			if err != nil {
				t.Fatal(err)
			}
			defer writer.Close()
			hit := false
			for _, q := range ddl {
				if _, err := installer.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
				if strings.HasPrefix(q, "DROP TRIGGER IF EXISTS") && strings.Contains(q, "`"+c.drop+"`") {
					hit = true
					for _, w := range c.gap {
						var err error
						if c.gapFenced {
							_, err = fenced.ExecContext(fencedsql.WithToken(ctx, 40), w)
						} else {
							_, err = writer.ExecContext(ctx, w)
						}
						if err != nil {
							t.Logf("in the gap after %s: %s refused: %v", q, w, err)
						}
					}
				}
			}
			if !hit {
				t.Fatalf("no DROP TRIGGER of %s in the re-install: %q", c.drop, ddl)
			}
			var shadows int
			if err := admin.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE 'fencedsql\\_next\\_%'").Scan(&shadows); err != nil {
				t.Fatal(err)
			}
			if shadows != 0 {
				t.Errorf("%d shadow trigger(s) left after the re-install", shadows)
			}
			if c.after != "" {
				if _, err := writer.ExecContext(ctx, c.after); err != nil {
					t.Logf("after the re-install: %s refused: %v", c.after, err)
				}
			}
			var n int
			if err := admin.QueryRowContext(ctx, c.check).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("re-installing the guard on a live table left a moment without %s: a stale write (token 30) over the newer holder's (40) got through (%s = %d, want 0)", c.drop, c.check, n)
			}
		})
	}
}
