package plan

import (
	"errors"
	"strings"
	"testing"
)

// DDL that renames or moves a guarded table away from its name, or another relation
// onto a guarded name, is refused whatever WithDDL says, naming the table (red-team
// rt43c F2: a guarded table renamed away through a fenced_allow=ddl pool had its token
// column replaced under the new, unguarded name and was renamed back, every token
// reset to 0). Renames of other relations, and of a guarded table's constraints and
// indexes, pass under WithDDL.
func TestGuardedTableRenameRefused(t *testing.T) {
	refused := map[testDialect][]string{
		pgTest: {
			"ALTER TABLE accounts RENAME TO accounts_tmp",
			"ALTER TABLE IF EXISTS ONLY public.accounts RENAME TO accounts_tmp",
			`ALTER TABLE "accounts" RENAME TO "Accounts"`,
			"ALTER TABLE accounts_tmp RENAME TO accounts",
			"ALTER TABLE accounts SET SCHEMA scratch",
			"ALTER TABLE scratch.accounts SET SCHEMA public",
			"ALTER FOREIGN TABLE accounts RENAME TO a2",
			"ALTER VIEW v RENAME TO accounts",
			"ALTER MATERIALIZED VIEW accounts SET SCHEMA s",
			"ALTER SEQUENCE s RENAME TO accounts",
			"ALTER INDEX accounts RENAME TO i",
		},
		mysqlTest: {
			"ALTER TABLE ledger RENAME TO ledger_tmp",
			"ALTER TABLE ledger RENAME AS ledger_tmp",
			"ALTER TABLE ledger RENAME ledger_tmp",
			"ALTER TABLE ledger RENAME otherdb.ledger",
			"ALTER TABLE ledger NOWAIT RENAME TO ledger_tmp",
			"ALTER TABLE ledger ADD COLUMN note TEXT, RENAME ledger_tmp",
			"ALTER TABLE ledger_tmp RENAME TO ledger",
			"ALTER TABLE ledger_tmp RENAME `Ledger`",
			"RENAME TABLE ledger TO ledger_tmp",
			"RENAME TABLE ledger_tmp TO ledger",
			"RENAME TABLE ledger TO otherdb.ledger",
			"RENAME TABLE x TO y, ledger TO ledger_tmp",
			"RENAME TABLE ledger TO ledger_tmp, ledger_new TO ledger",
			"RENAME TABLES ledger TO ledger_tmp",
			"RENAME TABLE IF EXISTS ledger TO ledger_tmp",
		},
		sqliteTest: {
			"ALTER TABLE accounts RENAME TO accounts_tmp",
			`ALTER TABLE main."ACCOUNTS" RENAME TO x`,
			"ALTER TABLE accounts_tmp RENAME TO accounts",
		},
	}
	for d, stmts := range refused {
		rw := newTestRewriter(t, d, Guard("accounts"), Guard("ledger"), WithDDL(true))
		for _, sql := range stmts {
			_, err := rw.Rewrite(sql, false)
			var r *Refusal
			if !errors.As(err, &r) {
				t.Errorf("%s: %s: err %v; want refused", d.name, sql, err)
				continue
			}
			if !strings.Contains(r.Reason, "moves a guarded table away from its name") {
				t.Errorf("%s: %s refused with %v; want the table-move refusal", d.name, sql, err)
			}
		}
	}
	passes := map[testDialect][]string{
		pgTest: {
			"ALTER TABLE accounts RENAME CONSTRAINT c TO d",
			"ALTER TABLE other RENAME TO other2",
			"ALTER TABLE other SET SCHEMA s",
			"ALTER INDEX accounts_pkey RENAME TO accounts_pk",
			"ALTER TABLE accounts SET (fillfactor = 70)",
		},
		mysqlTest: {
			"ALTER TABLE ledger RENAME INDEX a TO b",
			"ALTER TABLE ledger RENAME KEY a TO b",
			"ALTER TABLE other RENAME TO other2",
			"RENAME TABLE other TO other2, x TO y",
		},
		sqliteTest: {
			"ALTER TABLE other RENAME TO other2",
		},
	}
	for d, stmts := range passes {
		rw := newTestRewriter(t, d, Guard("accounts"), Guard("ledger"), WithDDL(true))
		for _, sql := range stmts {
			if p, err := rw.Rewrite(sql, false); err != nil || p.Kind != KindPass {
				t.Errorf("%s, WithDDL(true): %s = %v, %v; want a pass", d.name, sql, p, err)
			}
		}
	}
}
