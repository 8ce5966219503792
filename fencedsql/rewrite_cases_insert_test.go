// Rewrite cases of INSERT and upserts, several ON CONFLICT clauses included.

package fencedsql

import (
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// rewriteInsertCases: INSERT.
var rewriteInsertCases = []rewriteCase{
	// ---- INSERT ----
	{
		name: "insert/pg multi-row", d: pgTest,
		in:   `INSERT INTO accounts (id, balance) VALUES ($1, $2), ($3, $4)`,
		kind: plan.KindInsert, nUser: 4, args: refs(0, 1, 2, 3, TOK),
		out: `INSERT INTO accounts (id, balance, "fence_token", "version") VALUES ($1, $2, $5, 1), ($3, $4, $5, 1)`,
	},
	{
		name: "insert/mysql multi-row positional insertion", d: mysqlTest,
		in:   `INSERT INTO accounts (id, balance) VALUES (?, ?), (?, ?)`,
		kind: plan.KindInsert, nUser: 4, args: refs(0, 1, TOK, 2, 3, TOK),
		out: "INSERT INTO accounts (id, balance, `fence_token`, `version`) VALUES (?, ?, ?, 1), (?, ?, ?, 1)",
	},
	{
		name: "insert/sqlite three rows and RETURNING", d: sqliteTest,
		in:   `INSERT INTO accounts (a, b) VALUES (?, ?), (?, ?), (?, ?) RETURNING id`,
		kind: plan.KindInsert, nUser: 6, args: refs(0, 1, TOK, 2, 3, TOK, 4, 5, TOK),
		out: `INSERT INTO accounts (a, b, "fence_token", "version") VALUES (?, ?, ?, 1), (?, ?, ?, 1), (?, ?, ?, 1) RETURNING id`,
	},
	{
		name: "insert/pg RETURNING", d: pgTest,
		in:   `INSERT INTO accounts (id, balance) VALUES ($1, $2) RETURNING id`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK),
		out: `INSERT INTO accounts (id, balance, "fence_token", "version") VALUES ($1, $2, $3, 1) RETURNING id`,
	},
	{
		name: "insert/pg $n out of order", d: pgTest,
		in:   `INSERT INTO accounts (a, b) VALUES ($2, $1)`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK),
		out: `INSERT INTO accounts (a, b, "fence_token", "version") VALUES ($2, $1, $3, 1)`,
	},
	{
		name: "insert/nested parentheses in a row", d: mysqlTest,
		in:   `INSERT INTO accounts (a, b) VALUES ((? + 1), coalesce(?, 0))`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK),
		out: "INSERT INTO accounts (a, b, `fence_token`, `version`) VALUES ((? + 1), coalesce(?, 0), ?, 1)",
	},
	{
		name: "insert/mysql without INTO and VALUE", d: mysqlTest,
		in:   `INSERT accounts (a) VALUE (?)`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: "INSERT accounts (a, `fence_token`, `version`) VALUE (?, ?, 1)",
	},
	{
		name: "insert/ON CONFLICT DO NOTHING has no SET items", d: pgTest,
		in:   `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO NOTHING`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK),
		out: `INSERT INTO accounts (id, balance, "fence_token", "version") VALUES ($1, $2, $3, 1) ON CONFLICT (id) DO NOTHING`,
	},
	{
		name: "insert/ON CONFLICT ON CONSTRAINT DO NOTHING", d: pgTest,
		in:   `INSERT INTO accounts (a) VALUES ($1) ON CONFLICT ON CONSTRAINT accounts_pkey DO NOTHING`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: `INSERT INTO accounts (a, "fence_token", "version") VALUES ($1, $2, 1) ON CONFLICT ON CONSTRAINT accounts_pkey DO NOTHING`,
	},
	{
		name: "insert/sqlite ON CONFLICT DO NOTHING", d: sqliteTest,
		in:   `INSERT INTO accounts (a) VALUES (?) ON CONFLICT DO NOTHING`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: `INSERT INTO accounts (a, "fence_token", "version") VALUES (?, ?, 1) ON CONFLICT DO NOTHING`,
	},
	{
		name: "insert/pg ON CONFLICT DO UPDATE … WHERE", d: pgTest,
		in:   `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance WHERE accounts.balance < $3`,
		kind: plan.KindInsert, nUser: 3, args: refs(0, 1, 2, TOK),
		out: `INSERT INTO accounts (id, balance, "fence_token", "version") VALUES ($1, $2, $4, 1) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $4 THEN $4::bigint ELSE NULL END WHERE accounts.balance < $3`,
	},
	{
		name: "insert/pg ON CONFLICT with alias and RETURNING", d: pgTest,
		in:   `INSERT INTO accounts AS a (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = a.balance + 1 RETURNING id`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK),
		out: `INSERT INTO accounts AS a (id, balance, "fence_token", "version") VALUES ($1, $2, $3, 1) ON CONFLICT (id) DO UPDATE SET balance = a.balance + 1, "version" = a."version" + 1, "fence_token" = CASE WHEN a."fence_token" <= $3 THEN $3::bigint ELSE NULL END RETURNING id`,
	},
	{
		name: "insert/pg ON CONFLICT index predicate, WHERE and RETURNING", d: pgTest,
		in:   `INSERT INTO accounts (a) VALUES ($1) ON CONFLICT (a) WHERE a > 0 DO UPDATE SET b = excluded.b WHERE accounts.b <> excluded.b RETURNING *`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: `INSERT INTO accounts (a, "fence_token", "version") VALUES ($1, $2, 1) ON CONFLICT (a) WHERE a > 0 DO UPDATE SET b = excluded.b, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE accounts.b <> excluded.b RETURNING *`,
	},
	{
		name: "insert/pg schema-qualified upsert qualifies with the table name", d: pgTest,
		in:   `INSERT INTO shop.accounts (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET a = 2`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: `INSERT INTO shop.accounts (a, "fence_token", "version") VALUES ($1, $2, 1) ON CONFLICT (a) DO UPDATE SET a = 2, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $2 THEN $2::bigint ELSE NULL END`,
	},
	{
		name: "insert/sqlite ON CONFLICT DO UPDATE … WHERE ?", d: sqliteTest,
		in:   `INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance WHERE balance < ?`,
		kind: plan.KindInsert, nUser: 3, args: refs(0, 1, TOK, TOK, TOK, 2),
		out: `INSERT INTO accounts (id, balance, "fence_token", "version") VALUES (?, ?, ?, 1) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= ? THEN ? ELSE NULL END WHERE balance < ?`,
	},
	{
		name: "insert/mysql ON DUPLICATE KEY UPDATE", d: mysqlTest,
		in:   `INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = VALUES(balance) + ?`,
		kind: plan.KindInsert, nUser: 3, args: refs(0, 1, TOK, 2, TOK, TOK),
		out: "INSERT INTO accounts (id, balance, `fence_token`, `version`) VALUES (?, ?, ?, 1) ON DUPLICATE KEY UPDATE balance = VALUES(balance) + ?, " + myItems,
	},
	{
		name: "insert/mysql multi-row ON DUPLICATE KEY UPDATE", d: mysqlTest,
		in:   `INSERT INTO accounts (a) VALUES (?), (?) ON DUPLICATE KEY UPDATE a = VALUES(a), b = ?`,
		kind: plan.KindInsert, nUser: 3, args: refs(0, TOK, 1, TOK, 2, TOK, TOK),
		out: "INSERT INTO accounts (a, `fence_token`, `version`) VALUES (?, ?, 1), (?, ?, 1) ON DUPLICATE KEY UPDATE a = VALUES(a), b = ?, " + myItems,
	},
	{
		name: "insert/mysql INSERT … SET", d: mysqlTest,
		in:   `INSERT INTO accounts SET id = ?, balance = ?`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK),
		out: "INSERT INTO accounts SET id = ?, balance = ?, `fence_token` = ?, `version` = 1",
	},
	{
		name: "insert/mysql INSERT … SET … ON DUPLICATE KEY UPDATE", d: mysqlTest,
		in:   `INSERT INTO accounts SET id = ?, balance = ? ON DUPLICATE KEY UPDATE balance = ?`,
		kind: plan.KindInsert, nUser: 3, args: refs(0, 1, TOK, 2, TOK, TOK),
		out: "INSERT INTO accounts SET id = ?, balance = ?, `fence_token` = ?, `version` = 1 ON DUPLICATE KEY UPDATE balance = ?, " + myItems,
	},
	{
		name: "insert/mysql row alias", d: mysqlTest,
		in:   `INSERT INTO accounts (id, balance) VALUES (?, ?) AS new ON DUPLICATE KEY UPDATE balance = new.balance`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK, TOK, TOK),
		out: "INSERT INTO accounts (id, balance, `fence_token`, `version`) VALUES (?, ?, ?, 1) AS new ON DUPLICATE KEY UPDATE balance = new.balance, " + myItems,
	},
	{
		name: "insert/mysql row alias with column aliases", d: mysqlTest,
		in:   `INSERT INTO accounts (id, balance) VALUES (?, ?) AS new (i, b) ON DUPLICATE KEY UPDATE balance = b`,
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK, TOK, TOK),
		out: "INSERT INTO accounts (id, balance, `fence_token`, `version`) VALUES (?, ?, ?, 1) AS new (i, b) ON DUPLICATE KEY UPDATE balance = b, " + myItems,
	},
	{
		// GORM's/ent's DoNothing on MySQL: a conflict branch of self-assignments writes
		// nothing, so it is left as written (ON CONFLICT DO NOTHING's plan); Plan.Stamped
		// holds the fenced form for tables whose guard is installed.
		name: "insert/mysql ON DUPLICATE KEY UPDATE id = id is DO NOTHING", d: mysqlTest,
		in:   "INSERT INTO `accounts` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE `id`=`id`",
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK),
		out: "INSERT INTO `accounts` (`id`,`balance`, `fence_token`, `version`) VALUES (?,?, ?, 1) ON DUPLICATE KEY UPDATE `id`=`id`",
	},
	{
		name: "insert/mysql ON DUPLICATE KEY UPDATE id = VALUES(id) is a write", d: mysqlTest,
		in:   "INSERT INTO `accounts` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE `id`=VALUES(`id`)",
		kind: plan.KindInsert, nUser: 2, args: refs(0, 1, TOK, TOK, TOK),
		out: "INSERT INTO `accounts` (`id`,`balance`, `fence_token`, `version`) VALUES (?,?, ?, 1) ON DUPLICATE KEY UPDATE `id`=VALUES(`id`), " + myItems,
	},
	{
		name: "insert/trailing semicolon", d: pgTest,
		in:   `INSERT INTO accounts (a) VALUES (1);`,
		kind: plan.KindInsert, nUser: 0, args: refs(TOK),
		out: `INSERT INTO accounts (a, "fence_token", "version") VALUES (1, $1, 1);`,
	},
	{
		name: "insert/custom columns", d: mysqlTest, opts: []Option{Guard("t", TokenColumn("ft"), VersionColumn("ver"))},
		in:   `INSERT INTO t (a) VALUES (?)`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: "INSERT INTO t (a, `ft`, `ver`) VALUES (?, ?, 1)",
	},
	{
		name: "insert/custom columns upsert", d: pgTest, opts: []Option{Guard("t", TokenColumn("ft"), VersionColumn("ver"))},
		in:   `INSERT INTO t (a) VALUES ($1) ON CONFLICT (a) DO UPDATE SET b = 1`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK),
		out: `INSERT INTO t (a, "ft", "ver") VALUES ($1, $2, 1) ON CONFLICT (a) DO UPDATE SET b = 1, "ver" = t."ver" + 1, "ft" = CASE WHEN t."ft" <= $2 THEN $2::bigint ELSE NULL END`,
	},
}

// rewriteMultiConflictCases: several ON CONFLICT clauses (SQLite).
var rewriteMultiConflictCases = []rewriteCase{
	// ---- several ON CONFLICT clauses (SQLite): each DO UPDATE is fenced ----
	{
		name: "upsert/sqlite two conflict clauses", d: sqliteTest,
		in:   `INSERT INTO accounts (a, b) VALUES (?, ?) ON CONFLICT (a) DO UPDATE SET x = 1 ON CONFLICT (b) DO UPDATE SET y = 2 WHERE y < ? RETURNING a`,
		kind: plan.KindInsert, nUser: 3, args: refs(0, 1, TOK, TOK, TOK, TOK, TOK, 2),
		out: `INSERT INTO accounts (a, b, "fence_token", "version") VALUES (?, ?, ?, 1) ON CONFLICT (a) DO UPDATE SET x = 1, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= ? THEN ? ELSE NULL END ON CONFLICT (b) DO UPDATE SET y = 2, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= ? THEN ? ELSE NULL END WHERE y < ? RETURNING a`,
	},
	{
		name: "upsert/sqlite do nothing then do update", d: sqliteTest,
		in:   `INSERT INTO accounts (a) VALUES (?) ON CONFLICT (a) DO NOTHING ON CONFLICT DO UPDATE SET x = 1`,
		kind: plan.KindInsert, nUser: 1, args: refs(0, TOK, TOK, TOK),
		out: `INSERT INTO accounts (a, "fence_token", "version") VALUES (?, ?, 1) ON CONFLICT (a) DO NOTHING ON CONFLICT DO UPDATE SET x = 1, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= ? THEN ? ELSE NULL END`,
	},
}
