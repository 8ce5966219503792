// Rewrite cases of the ExpectVersion variant.

package fencedsql

import (
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// rewriteVersionCases: ExpectVersion.
var rewriteVersionCases = []rewriteCase{
	// ---- ExpectVersion ----
	{
		name: "version/update pg", d: pgTest, ver: true,
		in:   `UPDATE accounts SET x = $1 WHERE id = $2`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, 1, TOK, VER),
		out: `UPDATE accounts SET x = $1, "version" = CASE WHEN "version" = $4 THEN "version" + 1 WHEN "fence_token" <= $3 THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE id = $2`,
	},
	{
		name: "version/update mysql", d: mysqlTest, ver: true,
		in:   `UPDATE accounts SET x = ? WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, VER, TOK, TOK, TOK, 1),
		out: "UPDATE accounts SET x = ?, `version` = CASE WHEN `version` = ? THEN `version` + 1 WHEN `fence_token` <= ? THEN NULL ELSE `version` END, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?",
	},
	{
		name: "version/update sqlite", d: sqliteTest, ver: true,
		in:   `UPDATE accounts SET x = ? WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, VER, TOK, TOK, TOK, 1),
		out: `UPDATE accounts SET x = ?, ` + liteItemsV + ` WHERE id = ?`,
	},
	{
		name: "version/delete pg", d: pgTest, ver: true,
		in:   `DELETE FROM accounts WHERE id = $1`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    `DELETE FROM accounts WHERE (id = $1) AND "fence_token" = $2`,
		preSQL: `UPDATE accounts SET ` + pgItemsV(2, 3) + ` WHERE id = $1`, preArgs: refs(0, TOK, VER),
	},
	{
		name: "version/delete mysql", d: mysqlTest, ver: true,
		in:   `DELETE FROM accounts WHERE id = ?`,
		kind: plan.KindDelete, nUser: 1, args: refs(0, TOK),
		out:    "DELETE FROM accounts WHERE (id = ?) AND `fence_token` = ?",
		preSQL: "UPDATE accounts SET " + myItemsV + " WHERE id = ?", preArgs: refs(VER, TOK, TOK, TOK, 0),
	},
	{
		name: "version/delete sqlite with OR", d: sqliteTest, ver: true,
		in:   `DELETE FROM accounts WHERE a = ? OR b = ?`,
		kind: plan.KindDelete, nUser: 2, args: refs(0, 1, TOK),
		out:    `DELETE FROM accounts WHERE (a = ? OR b = ?) AND "fence_token" = ?`,
		preSQL: `UPDATE accounts SET ` + liteItemsV + ` WHERE a = ? OR b = ?`, preArgs: refs(VER, TOK, TOK, TOK, 0, 1),
	},
	{
		name: "version/pg upsert", d: pgTest, ver: true,
		in:   `INSERT INTO accounts (id) VALUES ($1) ON CONFLICT (id) DO UPDATE SET x = 1`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK, VER),
		out: `INSERT INTO accounts (id, "fence_token", "version") VALUES ($1, $2, 1) ON CONFLICT (id) DO UPDATE SET x = 1, "version" = CASE WHEN accounts."version" = $3 THEN accounts."version" + 1 WHEN accounts."fence_token" <= $2 THEN NULL ELSE accounts."version" END, "fence_token" = CASE WHEN accounts."fence_token" <= $2 THEN $2::bigint ELSE NULL END`,
	},
	{
		name: "version/mysql upsert", d: mysqlTest, ver: true,
		in:   `INSERT INTO accounts (a) VALUES (?) ON DUPLICATE KEY UPDATE a = ?`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, TOK, 1, VER, TOK, TOK, TOK),
		out: "INSERT INTO accounts (a, `fence_token`, `version`) VALUES (?, ?, 1) ON DUPLICATE KEY UPDATE a = ?, " + myItemsV,
	},
	{
		name: "version/plain insert has no version argument", d: pgTest, ver: true,
		in:   `INSERT INTO accounts (id) VALUES ($1)`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: `INSERT INTO accounts (id, "fence_token", "version") VALUES ($1, $2, 1)`,
	},
}
