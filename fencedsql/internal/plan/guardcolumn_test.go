package plan

import (
	"errors"
	"strings"
	"testing"
)

// An ALTER TABLE of a guarded table that renames or drops a column, or (MySQL/MariaDB)
// converts the character columns, is refused
// whatever WithDDL says, naming the table (red-team rt42a F1, F2): renaming or dropping
// the token column and adding a new one DEFAULT 0 reset every row's token, a key column
// renamed away left the tombstones reading a new, empty column of its name, CONVERT TO
// changed the key's collation under the tombstones. Other column DDL (ADD COLUMN of a
// fencing column's name included: the lazy check's Fix for a table that lacks it), and
// the same DDL on a table the pool does not guard, pass under WithDDL.
func TestAlterGuardColumnRefused(t *testing.T) {
	common := []string{
		"ALTER TABLE accounts RENAME COLUMN fence_token TO fence_token_old",
		"ALTER TABLE accounts RENAME COLUMN id TO acc_id",
		"ALTER TABLE accounts RENAME COLUMN zero TO fence_token",
		"ALTER TABLE accounts DROP COLUMN fence_token",
		"ALTER TABLE accounts DROP COLUMN version",
		"ALTER TABLE accounts DROP COLUMN memo",
	}
	refused := map[testDialect][]string{
		pgTest: append([]string{
			`ALTER TABLE public."accounts" RENAME "fence_token" TO "ft_old"`,
			"ALTER TABLE accounts RENAME fence_token TO x",
			"ALTER TABLE IF EXISTS ONLY accounts RENAME id TO acc_id",
			"ALTER TABLE accounts DROP COLUMN fence_token CASCADE",
			"ALTER TABLE accounts DROP fence_token",
			"ALTER TABLE accounts DROP IF EXISTS id",
			"ALTER TABLE accounts DROP partition", // a column named partition
			"ALTER TABLE accounts ADD COLUMN zero bigint NOT NULL DEFAULT 0, RENAME COLUMN fence_token TO x",
		}, common...),
		mysqlTest: append([]string{
			"ALTER TABLE `ledger` RENAME COLUMN `fence_token` TO ft_old, ADD fence_token BIGINT NOT NULL DEFAULT 0",
			"ALTER TABLE accounts DROP fence_token, ADD COLUMN fence_token BIGINT NOT NULL DEFAULT 0",
			"ALTER TABLE accounts DROP `Fence_Token`",
			"ALTER TABLE accounts ALGORITHM=INPLACE, DROP COLUMN IF EXISTS id",
			"ALTER TABLE accounts CONVERT TO CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
			"ALTER TABLE accounts CONVERT TO CHARSET latin1",
			"ALTER TABLE accounts /*!50100 RENAME COLUMN id TO acc_id */",
		}, common...),
		sqliteTest: append([]string{
			"ALTER TABLE accounts RENAME fence_token TO x",
			`ALTER TABLE main."ACCOUNTS" DROP "Fence_Token"`,
		}, common...),
	}
	for d, stmts := range refused {
		rw := newTestRewriter(t, d, Guard("accounts"), Guard("ledger"), WithDDL(true))
		for _, sql := range stmts {
			p, err := rw.Rewrite(sql, false)
			var r *Refusal
			if !errors.As(err, &r) {
				t.Errorf("%s: %s = %v, %v; want refused", d.name, sql, p, err)
				continue
			}
			if !strings.Contains(r.Reason, "column the guards read") {
				t.Errorf("%s: %s refused with %v; want the guard-column refusal", d.name, sql, err)
			}
		}
	}
	passes := map[testDialect][]string{
		pgTest: {
			"ALTER TABLE accounts ADD COLUMN note text",
			"ALTER TABLE accounts ADD COLUMN fence_token_old bigint",
			"ALTER TABLE accounts ADD COLUMN IF NOT EXISTS fence_token bigint NOT NULL DEFAULT 0",
			"ALTER TABLE accounts ADD CONSTRAINT c CHECK (balance >= 0)",
			"ALTER TABLE accounts DROP CONSTRAINT c",
			"ALTER TABLE accounts ALTER COLUMN balance SET DEFAULT 0",
			"ALTER TABLE accounts RENAME CONSTRAINT c TO d",
			"ALTER TABLE other RENAME COLUMN fence_token TO x",
			"ALTER TABLE other DROP COLUMN id",
			"ALTER TABLE other ADD COLUMN fence_token bigint",
		},
		mysqlTest: {
			"ALTER TABLE accounts ADD COLUMN note TEXT",
			"ALTER TABLE accounts ADD INDEX (fence_token)",
			"ALTER TABLE accounts ADD (note TEXT, INDEX (fence_token))",
			"ALTER TABLE accounts DROP INDEX fence_token",
			"ALTER TABLE accounts DROP PRIMARY KEY, ADD PRIMARY KEY (id)",
			"ALTER TABLE accounts RENAME INDEX a TO b",
			"ALTER TABLE accounts DEFAULT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci",
			"ALTER TABLE accounts CHARACTER SET utf8mb4",
			"ALTER TABLE accounts ALTER COLUMN balance SET DEFAULT 0",
			"ALTER TABLE other CONVERT TO CHARACTER SET utf8mb4",
			"ALTER TABLE other DROP COLUMN fence_token",
		},
		sqliteTest: {
			"ALTER TABLE accounts ADD COLUMN note TEXT",
			`ALTER TABLE accounts ADD COLUMN "fence_token" BIGINT NOT NULL DEFAULT 0`,
			"ALTER TABLE other RENAME COLUMN fence_token TO x",
		},
	}
	for d, stmts := range passes {
		rw := newTestRewriter(t, d, Guard("accounts"), WithDDL(true))
		for _, sql := range stmts {
			if p, err := rw.Rewrite(sql, false); err != nil || p.Kind != KindPass {
				t.Errorf("%s, WithDDL(true): %s = %v, %v; want a pass", d.name, sql, p, err)
			}
		}
	}
}
