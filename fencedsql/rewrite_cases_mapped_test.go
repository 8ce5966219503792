// Rewrite cases with mapped fencing columns: the caller's assignments are replaced.

package fencedsql

import (
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// rewriteMappedCases: mapped fencing columns.
var rewriteMappedCases = []rewriteCase{
	// ---- mapped fencing columns: the caller's assignments are replaced ----
	{
		name: "mapped/after a CASE, mixed case", d: pgTest,
		in:   `UPDATE accounts SET x = CASE WHEN a THEN 1 ELSE 2 END, Fence_Token = 3`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE accounts SET x = CASE WHEN a THEN 1 ELSE 2 END, ` + pgItems(1),
	},
	{
		name: "mapped/custom columns", d: pgTest, opts: []Option{Guard("t", TokenColumn("ft"), VersionColumn("ver"))},
		in:   `UPDATE t SET ft = 1, version = 2`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE t SET version = 2, "ver" = "ver" + 1, "ft" = CASE WHEN "ft" <= $1 THEN $1::bigint ELSE NULL END`,
	},
	{
		name: "mapped/gorm save pg", d: pgTest,
		in:   `UPDATE "accounts" SET "owner"=$1,"balance"=$2,"fence_token"=$3,"version"=$4 WHERE "id" = $5`,
		kind: plan.KindUpdate, nUser: 5, args: refs(0, 1, 4, TOK),
		out: `UPDATE "accounts" SET "owner"=$1,"balance"=$2, ` + pgItems(4) + ` WHERE "id" = $3`,
	},
	{
		name: "mapped/gorm save pg versioned", d: pgTest, ver: true,
		in:   `UPDATE "accounts" SET "fence_token"=$1,"owner"=$2,"version"=$3 WHERE "id" = $4`,
		kind: plan.KindUpdate, nUser: 4, args: refs(1, 3, TOK, VER),
		out: `UPDATE "accounts" SET "owner"=$1, ` + pgItemsV(3, 4) + ` WHERE "id" = $2`,
	},
	{
		name: "mapped/set only the token", d: pgTest,
		in:   `UPDATE accounts t SET fence_token = 1 WHERE id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts t SET ` + pgItems(2) + ` WHERE id = $1`,
	},
	{
		name: "mapped/placeholder used elsewhere too", d: pgTest,
		in:   `UPDATE accounts SET version = $1, x = $1 WHERE id = $2`,
		kind: plan.KindUpdate, nUser: 2, args: refs(0, 1, TOK),
		out: `UPDATE accounts SET x = $1, ` + pgItems(3) + ` WHERE id = $2`,
	},
	{
		name: "mapped/update mysql", d: mysqlTest,
		in:   "UPDATE `accounts` SET `owner`=?,`fence_token`=?,`version`=?,`balance`=? WHERE `id` = ?",
		kind: plan.KindUpdate, nUser: 5, args: refs(0, 3, TOK, TOK, 4),
		out: "UPDATE `accounts` SET `owner`=?,`balance`=?, " + myItems + " WHERE `id` = ?",
	},
	{
		name: "mapped/gorm create pg", d: pgTest,
		in:   `INSERT INTO "accounts" ("owner","balance","fence_token","version","id") VALUES ($1,$2,$3,$4,$5),($6,$7,$8,$9,$10) RETURNING "id"`,
		kind: plan.KindInsert, nUser: 10, args: refs(0, 1, 4, 5, 6, 9, TOK),
		out: `INSERT INTO "accounts" ("owner","balance","id", "fence_token", "version") VALUES ($1,$2,$3, $7, 1),($4,$5,$6, $7, 1) RETURNING "id"`,
	},
	{
		name: "mapped/insert first column mysql", d: mysqlTest,
		in:   `INSERT INTO accounts (version, a) VALUES (?, ?)`,
		kind: plan.KindInsert, nUser: 2, args: refs(1, TOK),
		out: "INSERT INTO accounts (a, `fence_token`, `version`) VALUES (?, ?, 1)",
	},
	{
		name: "mapped/insert only fencing columns", d: sqliteTest,
		in:   `INSERT INTO accounts (fence_token, version) VALUES (?, ?)`,
		kind: plan.KindInsert, nUser: 2, args: refs(TOK),
		out: `INSERT INTO accounts ("fence_token", "version") VALUES (?, 1)`,
	},
	{
		name: "mapped/gorm upsert UpdateAll pg", d: pgTest,
		in:   `INSERT INTO "accounts" ("owner","fence_token","version","id") VALUES ($1,$2,$3,$4) ON CONFLICT ("id") DO UPDATE SET "owner"="excluded"."owner","fence_token"="excluded"."fence_token","version"="excluded"."version" RETURNING "id"`,
		kind: plan.KindInsert, nUser: 4, args: refs(0, 3, TOK),
		out: `INSERT INTO "accounts" ("owner","id", "fence_token", "version") VALUES ($1,$2, $3, 1) ON CONFLICT ("id") DO UPDATE SET "owner"="excluded"."owner", "version" = "accounts"."version" + 1, "fence_token" = CASE WHEN "accounts"."fence_token" <= $3 THEN $3::bigint ELSE NULL END RETURNING "id"`,
	},
	{
		name: "mapped/upsert sqlite excluded", d: sqliteTest,
		in:   `INSERT INTO accounts (a) VALUES (?) ON CONFLICT (a) DO UPDATE SET fence_token = excluded.fence_token`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK, TOK, TOK),
		out: `INSERT INTO accounts (a, "fence_token", "version") VALUES (?, ?, 1) ON CONFLICT (a) DO UPDATE SET "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= ? THEN ? ELSE NULL END`,
	},
	{
		name: "mapped/gorm upsert mysql", d: mysqlTest,
		in:   "INSERT INTO `accounts` (`owner`,`fence_token`,`version`,`id`) VALUES (?,?,?,?) ON DUPLICATE KEY UPDATE `owner`=VALUES(`owner`),`fence_token`=VALUES(`fence_token`),`version`=VALUES(`version`)",
		kind: plan.KindInsert, nUser: 4, args: refs(0, 3, TOK, TOK, TOK),
		out: "INSERT INTO `accounts` (`owner`,`id`, `fence_token`, `version`) VALUES (?,?, ?, 1) ON DUPLICATE KEY UPDATE `owner`=VALUES(`owner`), " + myItems,
	},
	{
		name: "mapped/insert set mysql", d: mysqlTest,
		in:   `INSERT INTO accounts SET version = ?, a = ?`,
		kind: plan.KindInsert, nUser: 2, args: refs(1, TOK),
		out: "INSERT INTO accounts SET a = ?, `fence_token` = ?, `version` = 1",
	},
}
