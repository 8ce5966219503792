// Rewrite cases of UPDATE: plain, in strict mode, with FROM and under WITH.

package fencedsql

import (
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// rewriteUpdateCases: UPDATE.
var rewriteUpdateCases = []rewriteCase{
	// ---- UPDATE ----
	{
		name: "update/pg", d: pgTest,
		in:   `UPDATE accounts SET balance = balance - $1 WHERE id = $2`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, 1, TOK),
		out: `UPDATE accounts SET balance = balance - $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`,
	},
	{
		name: "update/mysql", d: mysqlTest,
		in:   `UPDATE accounts SET balance = balance - ? WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, TOK, TOK, 1),
		out: "UPDATE accounts SET balance = balance - ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?",
	},
	{
		name: "update/sqlite", d: sqliteTest,
		in:   `UPDATE accounts SET balance = balance - ? WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, TOK, TOK, 1),
		out: `UPDATE accounts SET balance = balance - ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END WHERE id = ?`,
	},
	{
		name: "update/lower case keywords and mixed case table", d: pgTest,
		in:   `update Accounts set x = 1 where ID = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `update Accounts set x = 1, ` + pgItems(2) + ` where ID = $1`,
	},
	{
		name: "update/no placeholders", d: pgTest,
		in:   `UPDATE accounts SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE accounts SET x = 1, ` + pgItems(1),
	},
	{
		name: "update/pg repeated and skipped $n", d: pgTest,
		in:   `UPDATE accounts SET a = $1, b = $1 WHERE c = $3`,
		kind: plan.KindUpdate, nUser: 3, args: refs(0, 1, 2, TOK),
		out: `UPDATE accounts SET a = $1, b = $1, ` + pgItems(4) + ` WHERE c = $3`,
	},
	{
		name: "update/alias with AS", d: pgTest,
		in:   `UPDATE accounts AS a SET balance = a.balance + $1 WHERE a.id = $2`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, 1, TOK),
		out: `UPDATE accounts AS a SET balance = a.balance + $1, ` + pgItems(3) + ` WHERE a.id = $2`,
	},
	{
		name: "update/alias without AS", d: pgTest,
		in:   `UPDATE accounts a SET balance = 1 WHERE a.id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts a SET balance = 1, ` + pgItems(2) + ` WHERE a.id = $1`,
	},
	{
		name: "update/mysql schema, backticks and alias", d: mysqlTest,
		in:   "UPDATE shop.`accounts` AS a SET a.x = ? WHERE a.id = ?",
		kind: plan.KindUpdate, nUser: 2, args: refs(0, TOK, TOK, 1),
		out: "UPDATE shop.`accounts` AS a SET a.x = ?, " + myItems + " WHERE a.id = ?",
	},
	{
		name: "update/schema-qualified matches unqualified guard", d: pgTest,
		in:   `UPDATE shop.accounts SET balance = 1 WHERE id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE shop.accounts SET balance = 1, ` + pgItems(2) + ` WHERE id = $1`,
	},
	{
		name: "update/qualified guard, qualified statement", d: pgTest, opts: []Option{Guard("shop.accounts")},
		in:   `UPDATE shop.accounts SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE shop.accounts SET x = 1, ` + pgItems(1),
	},
	{
		name: "update/qualified guard, unqualified statement (search_path may resolve to it)", d: pgTest, opts: []Option{Guard("shop.accounts")},
		in:   `UPDATE accounts SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE accounts SET x = 1, ` + pgItems(1),
	},
	{
		name: "update/pg double-quoted name", d: pgTest,
		in:   `UPDATE "accounts" SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE "accounts" SET x = 1, ` + pgItems(1),
	},
	{
		name: "update/mysql backtick name", d: mysqlTest,
		in:   "UPDATE `accounts` SET x = 1",
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK, TOK),
		out: "UPDATE `accounts` SET x = 1, " + myItems,
	},
	{
		name: "update/sqlite backtick name", d: sqliteTest,
		in:   "UPDATE `accounts` SET x = ?",
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK, TOK),
		out: "UPDATE `accounts` SET x = ?, " + liteItems,
	},
	{
		name: "update/sqlite bracket name", d: sqliteTest,
		in:   `UPDATE [accounts] SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK, TOK),
		out: `UPDATE [accounts] SET x = 1, ` + liteItems,
	},
	{
		name: "update/pg ONLY", d: pgTest,
		in:   `UPDATE ONLY accounts SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE ONLY accounts SET x = 1, ` + pgItems(1),
	},
	{
		name: "update/pg table *", d: pgTest,
		in:   `UPDATE accounts * SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE accounts * SET x = 1, ` + pgItems(1),
	},
	{
		name: "update/sqlite INDEXED BY", d: sqliteTest,
		in:   `UPDATE accounts INDEXED BY ix SET x = ? WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, TOK, TOK, 1),
		out: `UPDATE accounts INDEXED BY ix SET x = ?, ` + liteItems + ` WHERE id = ?`,
	},
	{
		name: "update/sqlite OR ABORT is the default and allowed", d: sqliteTest,
		in:   `UPDATE OR ABORT accounts SET a = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK, TOK),
		out: `UPDATE OR ABORT accounts SET a = 1, ` + liteItems,
	},
	{
		name: "update/RETURNING", d: pgTest,
		in:   `UPDATE accounts SET x = $1 WHERE id = $2 RETURNING id, balance`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, 1, TOK),
		out: `UPDATE accounts SET x = $1, ` + pgItems(3) + ` WHERE id = $2 RETURNING id, balance`,
	},
	{
		name: "update/sqlite RETURNING without WHERE", d: sqliteTest,
		in:   `UPDATE accounts SET x = ? RETURNING id`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK, TOK),
		out: `UPDATE accounts SET x = ?, ` + liteItems + ` RETURNING id`,
	},
	{
		name: "update/mysql ORDER BY LIMIT", d: mysqlTest,
		in:   `UPDATE accounts SET x = ? WHERE id = ? ORDER BY id LIMIT 10`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, TOK, TOK, 1),
		out: "UPDATE accounts SET x = ?, " + myItems + " WHERE id = ? ORDER BY id LIMIT 10",
	},
	{
		name: "update/mysql ORDER BY LIMIT ? without WHERE", d: mysqlTest,
		in:   `UPDATE accounts SET x = ? ORDER BY id LIMIT ?`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, TOK, TOK, 1),
		out: "UPDATE accounts SET x = ?, " + myItems + " ORDER BY id LIMIT ?",
	},
	{
		name: "update/WHERE a OR b needs no parentheses", d: pgTest,
		in:   `UPDATE accounts SET x = 1 WHERE a = $1 OR b = $2`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, 1, TOK),
		out: `UPDATE accounts SET x = 1, ` + pgItems(3) + ` WHERE a = $1 OR b = $2`,
	},
	{
		name: "update/several SET items and a subquery", d: mysqlTest,
		in:   `UPDATE accounts SET a = ?, b = (SELECT max(v) FROM other WHERE k = ? LIMIT 1) WHERE id IN (SELECT id FROM other WHERE z = ?)`,
		kind: plan.KindUpdate, nUser: 3, args: refs(0, 1, TOK, TOK, 2),
		out: "UPDATE accounts SET a = ?, b = (SELECT max(v) FROM other WHERE k = ? LIMIT 1), " + myItems + " WHERE id IN (SELECT id FROM other WHERE z = ?)",
	},
	{
		name: "update/CASE in SET", d: sqliteTest,
		in:   `UPDATE accounts SET x = CASE WHEN y > ? THEN 1 ELSE 2 END WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, TOK, TOK, 1),
		out: `UPDATE accounts SET x = CASE WHEN y > ? THEN 1 ELSE 2 END, ` + liteItems + ` WHERE id = ?`,
	},
	{
		name: "update/pg IS DISTINCT FROM inside SET is not UPDATE … FROM", d: pgTest,
		in:   `UPDATE accounts SET x = CASE WHEN y IS DISTINCT FROM z THEN 1 END WHERE id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts SET x = CASE WHEN y IS DISTINCT FROM z THEN 1 END, ` + pgItems(2) + ` WHERE id = $1`,
	},
	{
		name: "update/trailing semicolon", d: pgTest,
		in:   `UPDATE accounts SET x = 1 WHERE id = 1;`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE accounts SET x = 1, ` + pgItems(1) + ` WHERE id = 1;`,
	},
	{
		name: "update/custom columns", d: pgTest, opts: []Option{Guard("t", TokenColumn("ft"), VersionColumn("ver"))},
		in:   `UPDATE t SET x = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE t SET x = $1, "ver" = "ver" + 1, "ft" = CASE WHEN "ft" <= $2 THEN $2::bigint ELSE NULL END`,
	},
	{
		name: "update/custom columns: default names are ordinary columns there", d: mysqlTest, opts: []Option{Guard("t", TokenColumn("ft"), VersionColumn("ver"))},
		in:   `UPDATE t SET fence_token = ?, version = 2`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK, TOK),
		out: "UPDATE t SET fence_token = ?, version = 2, `ver` = `ver` + 1, `ft` = CASE WHEN `ft` <= ? THEN ? ELSE NULL END",
	},
	{
		name: "update/non-ASCII guard name", d: mysqlTest, opts: []Option{Guard("Ärger")},
		in:   `UPDATE Ärger SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK, TOK),
		out: "UPDATE Ärger SET x = 1, " + myItems,
	},
	{
		// PostgreSQL folds the ASCII letters of the unquoted listing: KONTÖ is kontÖ,
		// which the quoted "kontÖ" names ("KONTÖ" is its case twin, refused).
		name: "update/non-ASCII guard name, pg quoted", d: pgTest, opts: []Option{Guard("KONTÖ")},
		in:   `UPDATE "kontÖ" SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE "kontÖ" SET x = 1, ` + pgItems(1),
	},
}

// rewriteStrictCases: strict mode.
var rewriteStrictCases = []rewriteCase{
	// ---- strict mode ----
	{
		name: "strict/pg", d: pgTest, opts: []Option{Guard("accounts"), WithStrict(true)},
		in:   `UPDATE accounts SET x = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" < $2 THEN $2::bigint ELSE NULL END`,
	},
	{
		name: "strict/mysql", d: mysqlTest, opts: []Option{Guard("accounts"), WithStrict(true)},
		in:   `UPDATE accounts SET x = ?`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK, TOK),
		out: "UPDATE accounts SET x = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` < ? THEN ? ELSE NULL END",
	},
	{
		name: "strict/pg versioned", d: pgTest, opts: []Option{Guard("accounts"), WithStrict(true)}, ver: true,
		in:   `UPDATE accounts SET x = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK, VER),
		out: `UPDATE accounts SET x = $1, "version" = CASE WHEN "version" = $3 THEN "version" + 1 WHEN "fence_token" < $2 THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" < $2 THEN $2::bigint ELSE NULL END`,
	},
	{
		name: "strict/sqlite upsert", d: sqliteTest, opts: []Option{Guard("accounts"), WithStrict(true)},
		in:   `INSERT INTO accounts (id) VALUES (?) ON CONFLICT (id) DO UPDATE SET x = 1`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK, TOK, TOK),
		out: `INSERT INTO accounts (id, "fence_token", "version") VALUES (?, ?, 1) ON CONFLICT (id) DO UPDATE SET x = 1, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" < ? THEN ? ELSE NULL END`,
	},
}

// rewriteFromWithCases: UPDATE … FROM and WITH … UPDATE.
var rewriteFromWithCases = []rewriteCase{
	// ---- UPDATE … FROM and WITH … UPDATE ----
	{
		name: "update from/pg", d: pgTest,
		in:   `UPDATE accounts SET x = 1 FROM b WHERE accounts.id = b.id`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE accounts SET x = 1, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $1 THEN $1::bigint ELSE NULL END FROM b WHERE accounts.id = b.id`,
	},
	{
		name: "update from/bun bulk", d: pgTest,
		in:   `WITH "_data" ("id", "balance") AS (VALUES ($1::bigint, $2::bigint), ($3::bigint, $4::bigint)) UPDATE "accounts" AS "a" SET "balance" = _data."balance" FROM _data WHERE "a"."id" = _data."id"`,
		kind: plan.KindUpdate, nUser: 4, args: refs(0, 1, 2, 3, TOK),
		out: `WITH "_data" ("id", "balance") AS (VALUES ($1::bigint, $2::bigint), ($3::bigint, $4::bigint)) UPDATE "accounts" AS "a" SET "balance" = _data."balance", "version" = "a"."version" + 1, "fence_token" = CASE WHEN "a"."fence_token" <= $5 THEN $5::bigint ELSE NULL END FROM _data WHERE "a"."id" = _data."id"`,
	},
	{
		name: "update from/sqlite", d: sqliteTest,
		in:   `UPDATE accounts SET x = b.x FROM b WHERE accounts.id = b.id AND b.y = ?`,
		kind: plan.KindUpdate, nUser: 1, args: refs(TOK, TOK, 0),
		out: `UPDATE accounts SET x = b.x, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= ? THEN ? ELSE NULL END FROM b WHERE accounts.id = b.id AND b.y = ?`,
	},
	{
		name: "with/update", d: pgTest,
		in:   `WITH x AS (SELECT id FROM other) UPDATE accounts SET y = 1 WHERE id IN (SELECT id FROM x)`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `WITH x AS (SELECT id FROM other) UPDATE accounts SET y = 1, ` + pgItems(1) + ` WHERE id IN (SELECT id FROM x)`,
	},
	{
		name: "with/insert", d: mysqlTest,
		in:   `WITH RECURSIVE x (n) AS (SELECT 1) INSERT INTO accounts (a) VALUES (?)`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: "WITH RECURSIVE x (n) AS (SELECT 1) INSERT INTO accounts (a, `fence_token`, `version`) VALUES (?, ?, 1)",
	},
}
