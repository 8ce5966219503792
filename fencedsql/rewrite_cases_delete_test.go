// Rewrite cases of DELETE: the fencing UPDATE before it and the DELETE kept to the token.

package fencedsql

import (
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// rewriteDeleteCases: DELETE.
var rewriteDeleteCases = []rewriteCase{
	// ---- DELETE ----
	{
		name: "delete/pg WHERE a OR b is parenthesised", d: pgTest,
		in:   `DELETE FROM accounts WHERE a = $1 OR b = $2`,
		kind: plan.KindDelete, nUser: 2, args: refs(0, 1, TOK),
		out:    `DELETE FROM accounts WHERE (a = $1 OR b = $2) AND "fence_token" = $3`,
		preSQL: `UPDATE accounts SET ` + pgItems(3) + ` WHERE a = $1 OR b = $2`, preArgs: refs(0, 1, TOK),
	},
	{
		name: "delete/mysql WHERE a OR b", d: mysqlTest,
		in:   `DELETE FROM accounts WHERE a = ? OR b = ?`,
		kind: plan.KindDelete, nUser: 2, args: refs(0, 1, TOK),
		out:    "DELETE FROM accounts WHERE (a = ? OR b = ?) AND `fence_token` = ?",
		preSQL: "UPDATE accounts SET " + myItems + " WHERE a = ? OR b = ?", preArgs: refs(TOK, TOK, 0, 1),
	},
	{
		name: "delete/sqlite WHERE a OR b", d: sqliteTest,
		in:   `DELETE FROM accounts WHERE a = ? OR b = ?`,
		kind: plan.KindDelete, nUser: 2, args: refs(0, 1, TOK),
		out:    `DELETE FROM accounts WHERE (a = ? OR b = ?) AND "fence_token" = ?`,
		preSQL: `UPDATE accounts SET ` + liteItems + ` WHERE a = ? OR b = ?`, preArgs: refs(TOK, TOK, 0, 1),
	},
	{
		name: "delete/no WHERE", d: pgTest,
		in:   `DELETE FROM accounts`,
		kind: plan.KindDelete, nUser: 0, args: refs(TOK),
		out:    `DELETE FROM accounts WHERE "fence_token" = $1`,
		preSQL: `UPDATE accounts SET ` + pgItems(1), preArgs: refs(TOK),
	},
	{
		name: "delete/mysql no WHERE, LIMIT", d: mysqlTest,
		in:   `DELETE FROM accounts LIMIT 3`,
		kind: plan.KindDelete, nUser: 0, args: refs(TOK),
		out:    "DELETE FROM accounts WHERE `fence_token` = ? LIMIT 3",
		preSQL: "UPDATE accounts SET " + myItems + " LIMIT 3", preArgs: refs(TOK, TOK),
	},
	{
		name: "delete/mysql ORDER BY LIMIT ?", d: mysqlTest,
		in:   `DELETE FROM accounts WHERE id > ? ORDER BY id LIMIT ?`,
		kind: plan.KindDelete, nUser: 2, args: refs(0, TOK, 1),
		out:    "DELETE FROM accounts WHERE (id > ?) AND `fence_token` = ? ORDER BY id LIMIT ?",
		preSQL: "UPDATE accounts SET " + myItems + " WHERE id > ? ORDER BY id LIMIT ?", preArgs: refs(TOK, TOK, 0, 1),
	},
	{
		name: "delete/pg RETURNING", d: pgTest,
		in:   `DELETE FROM accounts WHERE id = $1 RETURNING id`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    `DELETE FROM accounts WHERE (id = $1) AND "fence_token" = $2 RETURNING id`,
		preSQL: `UPDATE accounts SET ` + pgItems(2) + ` WHERE id = $1`, preArgs: refs(0, TOK),
	},
	{
		name: "delete/sqlite RETURNING with a placeholder", d: sqliteTest,
		in:   `DELETE FROM accounts WHERE id = ? RETURNING id + ?`,
		kind: plan.KindDelete, nUser: 2, args: refs(0, TOK, 1),
		out:    `DELETE FROM accounts WHERE (id = ?) AND "fence_token" = ? RETURNING id + ?`,
		preSQL: `UPDATE accounts SET ` + liteItems + ` WHERE id = ?`, preArgs: refs(TOK, TOK, 0),
	},
	{
		name: "delete/pg alias", d: pgTest,
		in:   `DELETE FROM accounts AS a WHERE a.id = $1`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    `DELETE FROM accounts AS a WHERE (a.id = $1) AND "fence_token" = $2`,
		preSQL: `UPDATE accounts AS a SET ` + pgItems(2) + ` WHERE a.id = $1`, preArgs: refs(0, TOK),
	},
	{
		name: "delete/schema-qualified and quoted", d: pgTest,
		in:   `DELETE FROM shop."accounts" WHERE id = $1`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    `DELETE FROM shop."accounts" WHERE (id = $1) AND "fence_token" = $2`,
		preSQL: `UPDATE shop."accounts" SET ` + pgItems(2) + ` WHERE id = $1`, preArgs: refs(0, TOK),
	},
	{
		name: "delete/pg ONLY", d: pgTest,
		in:   `DELETE FROM ONLY accounts WHERE id = $1`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    `DELETE FROM ONLY accounts WHERE (id = $1) AND "fence_token" = $2`,
		preSQL: `UPDATE ONLY accounts SET ` + pgItems(2) + ` WHERE id = $1`, preArgs: refs(0, TOK),
	},
	{
		name: "delete/sqlite INDEXED BY", d: sqliteTest,
		in:   `DELETE FROM accounts INDEXED BY ix WHERE id = ?`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    `DELETE FROM accounts INDEXED BY ix WHERE (id = ?) AND "fence_token" = ?`,
		preSQL: `UPDATE accounts INDEXED BY ix SET ` + liteItems + ` WHERE id = ?`, preArgs: refs(TOK, TOK, 0),
	},
	{
		name: "delete/trailing comment stays outside the parentheses", d: pgTest,
		in:   `DELETE FROM accounts WHERE id = $1 -- c`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    `DELETE FROM accounts WHERE (id = $1) AND "fence_token" = $2 -- c`,
		preSQL: `UPDATE accounts SET ` + pgItems(2) + ` WHERE id = $1`, preArgs: refs(0, TOK),
	},
	{
		name: "delete/comment before WHERE and trailing semicolon", d: pgTest,
		in:   "DELETE FROM accounts -- c\nWHERE id = 1;",
		kind: plan.KindDelete, nUser: 0, args: refs(TOK),
		out:    "DELETE FROM accounts -- c\nWHERE (id = 1) AND \"fence_token\" = $1;",
		preSQL: `UPDATE accounts SET ` + pgItems(1) + ` WHERE id = 1`, preArgs: refs(TOK),
	},
	{
		name: "delete/string with accounts, ;, ? in WHERE", d: mysqlTest,
		in:   `DELETE FROM accounts WHERE note = 'accounts; ?' AND id = ?`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    "DELETE FROM accounts WHERE (note = 'accounts; ?' AND id = ?) AND `fence_token` = ?",
		preSQL: "UPDATE accounts SET " + myItems + " WHERE note = 'accounts; ?' AND id = ?", preArgs: refs(TOK, TOK, 0),
	},
	{
		name: "delete/custom columns", d: pgTest, opts: []Option{Guard("t", TokenColumn("ft"), VersionColumn("ver"))},
		in:   `DELETE FROM t WHERE a = $1`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    `DELETE FROM t WHERE (a = $1) AND "ft" = $2`,
		preSQL: `UPDATE t SET "ver" = "ver" + 1, "ft" = CASE WHEN "ft" <= $2 THEN $2::bigint ELSE NULL END WHERE a = $1`, preArgs: refs(0, TOK),
	},
}
