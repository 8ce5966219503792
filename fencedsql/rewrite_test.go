package fencedsql

import (
	"errors"
	"fmt"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Argument references used in the expectations below.
const (
	TOK = plan.ArgToken   // the transaction's fencing token
	VER = plan.ArgVersion // the ExpectVersion value
)

func refs(r ...plan.ArgRef) []plan.ArgRef { return r }

// newTestRewriter builds the rewriter for d and the given options; without options the
// only guarded table is "accounts" with the default columns.
// testPlanner is the planner as the wrapper reports it: refusals as *UnsupportedError.
type testPlanner struct{ *plan.Planner }

// Rewrite is Planner.Rewrite with the wrapper's error mapping.
func (tp testPlanner) Rewrite(sql string, versioned bool) (*plan.Plan, error) {
	p, err := tp.Planner.Rewrite(sql, versioned)
	if p != nil && p.ClaimErr != nil {
		c := *p
		c.ClaimErr = asUnsupported(p.ClaimErr)
		p = &c
	}
	return p, asUnsupported(err)
}

func newTestRewriter(t testing.TB, d dialect.Dialect, opts ...Option) testPlanner {
	t.Helper()
	cfg := defaultConfig()
	WithDialect(d)(&cfg)
	if len(opts) == 0 {
		opts = []Option{Guard("accounts")}
	}
	for _, o := range opts {
		o(&cfg)
	}
	rw, err := cfg.newRewriter()
	if err != nil {
		t.Fatalf("newRewriter: %v", err)
	}
	return testPlanner{rw}
}

// The fencing SET items, spelled out once per dialect.
func pgItems(tok int) string {
	return fmt.Sprintf(`"version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $%d THEN $%d::bigint ELSE NULL END`, tok, tok)
}

func pgItemsV(tok, ver int) string {
	return fmt.Sprintf(`"version" = CASE WHEN "version" = $%[2]d THEN "version" + 1 WHEN "fence_token" <= $%[1]d THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= $%[1]d THEN $%[1]d::bigint ELSE NULL END`, tok, ver)
}

const (
	myItems    = "`version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"
	myItemsV   = "`version` = CASE WHEN `version` = ? THEN `version` + 1 WHEN `fence_token` <= ? THEN NULL ELSE `version` END, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"
	liteItems  = `"version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`
	liteItemsV = `"version" = CASE WHEN "version" = ? THEN "version" + 1 WHEN "fence_token" <= ? THEN NULL ELSE "version" END, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`
)

type rewriteCase struct {
	name    string
	d       testDialect
	opts    []Option // nil: Guard("accounts")
	ver     bool     // the ExpectVersion variant
	in      string
	kind    plan.Kind
	out     string
	args    []plan.ArgRef
	nUser   int
	preSQL  string // DELETE: the fencing UPDATE
	preArgs []plan.ArgRef
}

var rewriteCases = []rewriteCase{
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
		name: "update/non-ASCII guard name, pg quoted", d: pgTest, opts: []Option{Guard("KONTÖ")},
		in:   `UPDATE "KONTÖ" SET x = 1`,
		kind: plan.KindUpdate, nUser: 0, args: refs(TOK),
		out: `UPDATE "KONTÖ" SET x = 1, ` + pgItems(1),
	},

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

	// ---- comments and literals ----
	{
		name: "literals/pg string and comment with accounts ? $1 ; --", d: pgTest,
		in:   `UPDATE accounts SET note = 'accounts; -- $1 ?' /* $2 ; accounts */ WHERE id = $1 -- trailing ; ?`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts SET note = 'accounts; -- $1 ?', ` + pgItems(2) + ` /* $2 ; accounts */ WHERE id = $1 -- trailing ; ?`,
	},
	{
		name: "literals/line comment before WHERE", d: pgTest,
		in:   "UPDATE accounts SET x = 1 -- set x\nWHERE id = $1",
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: "UPDATE accounts SET x = 1, " + pgItems(2) + " -- set x\nWHERE id = $1",
	},
	{
		name: "literals/pg nested block comment", d: pgTest,
		in:   `UPDATE accounts SET x = 1 /* a /* ; $9 */ b */ WHERE id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts SET x = 1, ` + pgItems(2) + ` /* a /* ; $9 */ b */ WHERE id = $1`,
	},
	{
		name: "literals/mysql doubled quote, backslash escape and # comment", d: mysqlTest,
		in:   `UPDATE accounts SET note = 'it''s ? \' ;' WHERE id = ? # c ?`,
		kind: plan.KindUpdate, nUser: 1, args: refs(TOK, TOK, 0),
		out: "UPDATE accounts SET note = 'it''s ? \\' ;', " + myItems + " WHERE id = ? # c ?",
	},
	{
		name: "literals/mysql double-quoted string", d: mysqlTest,
		in:   `UPDATE accounts SET note = "it's ? accounts" WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 1, args: refs(TOK, TOK, 0),
		out: `UPDATE accounts SET note = "it's ? accounts", ` + myItems + ` WHERE id = ?`,
	},
	{
		name: "literals/mysql escaped backslash at end of string", d: mysqlTest,
		in:   `UPDATE accounts SET note = 'a\\' WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 1, args: refs(TOK, TOK, 0),
		out: `UPDATE accounts SET note = 'a\\', ` + myItems + ` WHERE id = ?`,
	},
	{
		name: "literals/mysql -- without space is not a comment", d: mysqlTest,
		in:   `UPDATE accounts SET x = 1--1 WHERE id = ?`,
		kind: plan.KindUpdate, nUser: 1, args: refs(TOK, TOK, 0),
		out: "UPDATE accounts SET x = 1--1, " + myItems + " WHERE id = ?",
	},
	{
		name: "literals/pg backslash is ordinary in a standard string", d: pgTest,
		in:   `UPDATE accounts SET note = 'a\' WHERE id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts SET note = 'a\', ` + pgItems(2) + ` WHERE id = $1`,
	},
	{
		name: "literals/pg dollar-quoted string", d: pgTest,
		in:   `UPDATE accounts SET note = $$ $1 ; ' $$ WHERE id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts SET note = $$ $1 ; ' $$, ` + pgItems(2) + ` WHERE id = $1`,
	},
	{
		name: "literals/pg tagged dollar quote", d: pgTest,
		in:   `UPDATE accounts SET note = $tag$ accounts ' ; $2 $tag$ WHERE id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts SET note = $tag$ accounts ' ; $2 $tag$, ` + pgItems(2) + ` WHERE id = $1`,
	},
	{
		name: "literals/pg E string with escaped quote", d: pgTest,
		in:   `UPDATE accounts SET note = E'it\'s $1 ;' WHERE id = $1`,
		kind: plan.KindUpdate, nUser: 1, args: refs(0, TOK),
		out: `UPDATE accounts SET note = E'it\'s $1 ;', ` + pgItems(2) + ` WHERE id = $1`,
	},
	{
		name: "literals/sqlite ? in string and comment", d: sqliteTest,
		in:   "UPDATE accounts SET note = '?;' /* ? */ WHERE id = ? -- ?",
		kind: plan.KindUpdate, nUser: 1, args: refs(TOK, TOK, 0),
		out: `UPDATE accounts SET note = '?;', ` + liteItems + " /* ? */ WHERE id = ? -- ?",
	},

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
		in:   `UPDATE accounts t SET t.fence_token = 1 WHERE id = $1`,
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

func TestRewrite(t *testing.T) {
	for _, c := range rewriteCases {
		t.Run(c.d.name+"/"+c.name, func(t *testing.T) {
			rw := newTestRewriter(t, c.d, c.opts...)
			p, err := rw.Rewrite(c.in, c.ver)
			if err != nil {
				t.Fatalf("rewrite(%q): %v", c.in, err)
			}
			if p.Kind != c.kind {
				t.Fatalf("kind = %v, want %v", p.Kind, c.kind)
			}
			if p.SQL != c.out {
				t.Errorf("sql:\n got  %s\n want %s", p.SQL, c.out)
			}
			if !slices.Equal(p.Args, c.args) {
				t.Errorf("args = %v, want %v", p.Args, c.args)
			}
			if p.NUser != c.nUser {
				t.Errorf("nUser = %d, want %d", p.NUser, c.nUser)
			}
			if p.Guard == nil {
				t.Errorf("guard is nil")
			}
			checkPlaceholders(t, rw, p)
			if c.kind != plan.KindDelete {
				if p.Pre != nil {
					t.Errorf("unexpected pre plan %q", p.Pre.SQL)
				}
				return
			}
			if p.Pre == nil {
				t.Fatalf("DELETE without a pre plan")
			}
			if p.Pre.Kind != plan.KindUpdate {
				t.Errorf("pre kind = %v, want UPDATE", p.Pre.Kind)
			}
			if p.Pre.SQL != c.preSQL {
				t.Errorf("pre sql:\n got  %s\n want %s", p.Pre.SQL, c.preSQL)
			}
			if !slices.Equal(p.Pre.Args, c.preArgs) {
				t.Errorf("pre args = %v, want %v", p.Pre.Args, c.preArgs)
			}
			if p.Pre.NUser != c.nUser {
				t.Errorf("pre nUser = %d, want %d", p.Pre.NUser, c.nUser)
			}
			checkPlaceholders(t, rw, p.Pre)
		})
	}
}

// checkPlaceholders verifies a plan's argument list against the placeholders of its SQL:
// one ref per ? (in order) for positional dialects, $1..$len(args) for numbered ones;
// every user argument is used.
func checkPlaceholders(t *testing.T, rw testPlanner, p *plan.Plan) {
	t.Helper()
	toks, err := sqllex.Lex(p.SQL, rw.Syntax())
	if err != nil {
		t.Fatalf("rewritten SQL does not lex: %v", err)
	}
	var params []sqllex.Token
	for _, tk := range toks {
		if tk.Kind == sqllex.KindParam {
			params = append(params, tk)
		}
	}
	used := map[plan.ArgRef]bool{}
	for _, r := range p.Args {
		used[r] = true
		if r >= 0 && int(r) >= p.NUser {
			t.Errorf("arg ref %d out of range (nUser %d)", r, p.NUser)
		}
	}
	if rw.NumberedParams() {
		maxN := 0
		for _, tk := range params {
			maxN = max(maxN, tk.Num)
		}
		if maxN != len(p.Args) {
			t.Errorf("highest $n is %d, but %d args", maxN, len(p.Args))
		}
		// The user's arguments come first, in order (all of them unless items that
		// assigned a fencing column were dropped with theirs).
		for i := range p.Args {
			if p.Args[i] < 0 {
				break
			}
			if (len(p.Dropped) == 0 && p.Args[i] != plan.ArgRef(i)) || (i > 0 && p.Args[i] <= p.Args[i-1]) {
				t.Errorf("numbered args must start with the user's in order: %v", p.Args)
				break
			}
		}
	} else if len(params) != len(p.Args) {
		t.Errorf("%d ? placeholders but %d args", len(params), len(p.Args))
	}
	if !used[plan.ArgToken] {
		t.Errorf("the token is not an argument: %v", p.Args)
	}
}

// Statements that write no guarded table, or only read one, pass through unchanged.
func TestRewritePassThrough(t *testing.T) {
	cases := []struct {
		d    testDialect
		opts []Option
		in   string
	}{
		{pgTest, nil, `SELECT * FROM accounts WHERE id = $1`},
		{sqliteTest, nil, `SELECT balance FROM accounts WHERE id = ?`},
		{pgTest, nil, `SELECT * FROM other WHERE id IN (SELECT id FROM accounts)`},
		{pgTest, nil, `SELECT 'UPDATE accounts SET x = 1' AS q`},
		{mysqlTest, nil, `SELECT note FROM other WHERE note = 'DELETE FROM accounts'`},
		{pgTest, nil, `UPDATE other SET x = 1 WHERE id = $1`},
		{mysqlTest, nil, `UPDATE other SET x = ? WHERE id = ?`},
		{sqliteTest, nil, `DELETE FROM other WHERE id = ?`},
		{pgTest, nil, `INSERT INTO other (a) VALUES ($1)`},
		{pgTest, nil, `UPDATE other SET x = (SELECT max(b) FROM accounts)`},
		{pgTest, nil, `UPDATE other SET x = 1 FROM accounts WHERE other.id = accounts.id`},
		{pgTest, nil, `INSERT INTO other (a) SELECT a FROM accounts`},
		{pgTest, nil, `DELETE FROM other WHERE id IN (SELECT id FROM accounts)`},
		{pgTest, nil, `UPDATE accounts_archive SET x = 1`},
		{mysqlTest, nil, `INSERT INTO my_accounts (a) VALUES (?)`},
		{pgTest, nil, `UPDATE other SET note = 'accounts' WHERE id = $1`},
		{pgTest, nil, `UPDATE other SET x = 1 -- accounts`},
		{pgTest, nil, `SELECT 1; SELECT 2`},
		{pgTest, []Option{Guard("accounts"), WithDDL(true)}, `CREATE TABLE accounts (id int, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0)`},
		{pgTest, nil, `CREATE TABLE accounts_archive (id int)`},
		{pgTest, nil, `SAVEPOINT sp1`},
		{pgTest, nil, `ROLLBACK TO SAVEPOINT sp1`},
		{mysqlTest, nil, `RELEASE SAVEPOINT sp1`},
		{pgTest, nil, `SET statement_timeout = 5000`},
		{pgTest, nil, `VACUUM accounts`},
		{pgTest, nil, ``},
		// Unguarded malformed statements are the database's to report.
		{pgTest, nil, `SELEC * FRM nowhere`},
		{pgTest, nil, `SELECT 'oops`},
		{mysqlTest, nil, `UPDATE other SET x = 'unterminated`},
		{sqliteTest, nil, `UPDATE other SET a = ?1`},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d, c.opts...)
		p, err := rw.Rewrite(c.in, false)
		if err != nil {
			t.Errorf("%s: rewrite(%q): %v", c.d.name, c.in, err)
			continue
		}
		if p.Kind != plan.KindPass {
			t.Errorf("%s: rewrite(%q) = %v %q, want pass-through", c.d.name, c.in, p.Kind, p.SQL)
		}
		if p2, err := rw.Rewrite(c.in, true); err != nil || p2.Kind != plan.KindPass {
			t.Errorf("%s: versioned rewrite(%q) = %v, %v; want pass-through", c.d.name, c.in, p2, err)
		}
	}
}

// Statements the rewriter must refuse: fencing them is impossible or unsafe, and they
// must never be sent unfenced.
func TestRewriteRefused(t *testing.T) {
	cases := []struct {
		d    testDialect
		opts []Option
		in   string
	}{
		// multi-table writes
		{mysqlTest, nil, `UPDATE a JOIN accounts b ON a.id = b.id SET b.x = 1`},
		{mysqlTest, nil, `UPDATE accounts JOIN b ON accounts.id = b.id SET accounts.x = 1`},
		{mysqlTest, nil, `UPDATE accounts AS a INNER JOIN b ON a.id = b.id SET a.x = 1`},
		{mysqlTest, nil, `UPDATE accounts, b SET accounts.x = 1`},
		{mysqlTest, nil, `UPDATE b, accounts SET accounts.x = 1`},
		{mysqlTest, nil, `DELETE a FROM accounts a JOIN b ON a.id = b.id`},
		{mysqlTest, nil, `DELETE accounts FROM accounts JOIN b ON accounts.id = b.id`},
		{mysqlTest, nil, `DELETE FROM accounts USING accounts JOIN b`},
		{mysqlTest, nil, `DELETE FROM accounts, b USING accounts JOIN b`},
		{pgTest, nil, `DELETE FROM accounts USING b WHERE accounts.id = b.id`},
		// CTEs that write
		{pgTest, nil, `WITH u AS (UPDATE accounts SET x = 1 RETURNING id) SELECT * FROM u`},
		{pgTest, nil, `WITH d AS (DELETE FROM accounts WHERE id = $1 RETURNING *) SELECT count(*) FROM d`},
		{pgTest, nil, `WITH x AS (SELECT 1) DELETE FROM accounts`},
		{pgTest, nil, `WITH x AS (INSERT INTO accounts (a) VALUES (1) RETURNING a) SELECT * FROM x`},
		{sqliteTest, nil, `WITH x AS (SELECT 1) INSERT INTO accounts (a) SELECT * FROM x`},
		{mysqlTest, nil, `WITH x AS (SELECT 1 AS id) UPDATE accounts JOIN x USING (id) SET accounts.y = 1`},
		// INSERT forms
		{pgTest, nil, `INSERT INTO accounts (a) SELECT a FROM b`},
		{mysqlTest, nil, `INSERT INTO accounts (a) SELECT a FROM b`},
		{pgTest, nil, `INSERT INTO accounts VALUES (1, 2)`},
		{sqliteTest, nil, `INSERT INTO accounts VALUES (?, ?)`},
		{pgTest, nil, `INSERT INTO accounts DEFAULT VALUES`},
		{sqliteTest, nil, `INSERT INTO accounts DEFAULT VALUES`},
		{pgTest, nil, `INSERT INTO accounts (a) VALUES (1) UNION SELECT 2`},
		{mysqlTest, nil, `INSERT INTO accounts (a) VALUES ROW(1), ROW(2)`},
		// multi-statement strings
		{pgTest, nil, `UPDATE accounts SET x = 1; SELECT 1`},
		{pgTest, nil, `SELECT 1; UPDATE accounts SET x = 1`},
		{mysqlTest, nil, `SELECT 1; DELETE FROM accounts`},
		{sqliteTest, nil, `UPDATE other SET x = 1; INSERT INTO accounts (a) VALUES (1)`},
		// conflict clauses and IGNORE
		{sqliteTest, nil, `UPDATE OR REPLACE accounts SET a = 1`},
		{sqliteTest, nil, `UPDATE OR IGNORE accounts SET a = 1`},
		{sqliteTest, nil, `UPDATE OR FAIL accounts SET a = 1`},
		{sqliteTest, nil, `INSERT OR REPLACE INTO accounts (a) VALUES (1)`},
		{sqliteTest, nil, `INSERT OR IGNORE INTO accounts (a) VALUES (1)`},
		{sqliteTest, nil, `REPLACE INTO accounts (a) VALUES (1)`},
		{mysqlTest, nil, `REPLACE INTO accounts (a) VALUES (1)`},
		{mysqlTest, nil, `INSERT IGNORE INTO accounts (a) VALUES (1)`},
		{mysqlTest, nil, `INSERT LOW_PRIORITY IGNORE INTO accounts (a) VALUES (1)`},
		{mysqlTest, nil, `UPDATE IGNORE accounts SET a = 1`},
		{mysqlTest, nil, `DELETE IGNORE FROM accounts WHERE a = 1`},
		// other writing statements
		{pgTest, nil, `TRUNCATE accounts`},
		{mysqlTest, nil, `TRUNCATE TABLE accounts`},
		{pgTest, nil, `MERGE INTO accounts a USING src s ON a.id = s.id WHEN MATCHED THEN UPDATE SET x = 1`},
		{pgTest, nil, `COPY accounts FROM STDIN`},
		{mysqlTest, nil, `LOAD DATA INFILE '/tmp/x' INTO TABLE accounts`},
		{pgTest, nil, `EXPLAIN ANALYZE UPDATE accounts SET x = 1`},
		{pgTest, nil, `EXPLAIN (ANALYZE) DELETE FROM accounts`},
		{mysqlTest, nil, `ANALYZE UPDATE accounts SET x = 1`},
		{pgTest, nil, `DELETE FROM accounts WHERE CURRENT OF c`},
		// DELETEs whose second selection could find other rows (the fencing UPDATE
		// ran in between)
		{pgTest, nil, `DELETE FROM accounts WHERE ctid = '(0,1)'`},
		{pgTest, nil, `DELETE FROM accounts a WHERE a.xmin::text::bigint > 5`},
		{pgTest, nil, `DELETE FROM accounts WHERE id IN (SELECT id FROM accounts ORDER BY balance LIMIT 1)`},
		{pgTest, nil, `DELETE FROM accounts WHERE id = (SELECT min(id) FROM shop.accounts FETCH FIRST 1 ROW ONLY)`},
		{pgTest, nil, `DELETE FROM accounts WHERE random() < 0.5`},
		{mysqlTest, nil, `DELETE FROM accounts WHERE id > 1 ORDER BY rand() LIMIT 1`},
		{mysqlTest, nil, `DELETE FROM accounts ORDER BY version LIMIT 1`},
		{mysqlTest, nil, `DELETE FROM accounts WHERE a = 1 LIMIT 1 OFFSET 1`},
		{sqliteTest, nil, `DELETE FROM accounts WHERE id IN (SELECT id FROM accounts WHERE x LIMIT 2)`},
		{sqliteTest, nil, `DELETE FROM accounts WHERE id = abs(random()) % 3`},
		// assigning a reserved column in a row assignment (other assignments of them
		// are replaced: TestRewrite's "mapped/…" cases)
		{pgTest, nil, `INSERT INTO accounts (a) VALUES (1) ON CONFLICT (a) DO UPDATE SET (b, version) = (1, 2)`},
		{pgTest, nil, `UPDATE accounts SET (a, version) = (1, 2)`},
		{pgTest, nil, `UPDATE accounts SET (fence_token, a) = (SELECT 1, 2)`},
		// executable comments
		{mysqlTest, nil, `UPDATE accounts SET x = 1 /*!, version = 5 */`},
		{mysqlTest, nil, `UPDATE accounts SET x = 1 /*!50000 , version = 5 */ WHERE id = ?`},
		{mysqlTest, nil, `INSERT INTO accounts (a) VALUES (/*! 1 */ 2)`},
		{mysqlTest, nil, `DELETE FROM accounts WHERE id = 1 /*M! OR 1 = 1 */`},
		// placeholders that cannot be renumbered
		{sqliteTest, nil, `UPDATE accounts SET a = ?1`},
		{sqliteTest, nil, `UPDATE accounts SET a = ? WHERE id = ?2`},
		{sqliteTest, nil, `UPDATE accounts SET a = :name`},
		{sqliteTest, nil, `INSERT INTO accounts (a) VALUES (@n)`},
		{sqliteTest, nil, `DELETE FROM accounts WHERE id = $id`},
		// does not tokenize
		{pgTest, nil, `UPDATE accounts SET a = 'oops`},
		{pgTest, nil, `UPDATE accounts SET a = 1 /* unterminated`},
		{mysqlTest, nil, `UPDATE accounts SET a = "oops`},
		{pgTest, nil, `SELECT 'accounts`},
		// unknown statement heads naming a guarded table
		{pgTest, nil, `UPDAT accounts SET a = 1`},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d, c.opts...)
		for _, versioned := range []bool{false, true} {
			p, err := rw.Rewrite(c.in, versioned)
			if err == nil {
				got := "pass-through"
				if p.Kind != plan.KindPass {
					got = p.Kind.String() + " " + p.SQL
				}
				t.Errorf("%s: rewrite(%q, versioned=%v) = %s; want ErrUnsupported", c.d.name, c.in, versioned, got)
				continue
			}
			if !errors.Is(err, ErrUnsupported) {
				t.Errorf("%s: rewrite(%q): %v is not ErrUnsupported", c.d.name, c.in, err)
			}
			var ue *UnsupportedError
			if !errors.As(err, &ue) || ue.Reason == "" {
				t.Errorf("%s: rewrite(%q): %v: want *UnsupportedError with a reason", c.d.name, c.in, err)
			}
			if strings.Contains(err.Error(), "'oops") {
				t.Errorf("%s: error quotes the SQL text: %v", c.d.name, err)
			}
		}
	}
}

// UnsupportedError.Table is "the guarded table, when known": it must never name a table
// that is not guarded.
func TestRewriteRefusalNamesTheGuardedTable(t *testing.T) {
	cases := []struct {
		d  testDialect
		in string
	}{
		{mysqlTest, `UPDATE a JOIN accounts b ON a.id = b.id SET b.x = 1`},
		{mysqlTest, `UPDATE b, accounts SET accounts.x = 1`},
		{mysqlTest, `UPDATE accounts, b SET accounts.x = 1`},
		{pgTest, `DELETE FROM accounts USING b`},
		{sqliteTest, `UPDATE OR REPLACE accounts SET a = 1`},
		{mysqlTest, `INSERT IGNORE INTO accounts (a) VALUES (1)`},
		{pgTest, `UPDATE accounts SET (x, version) = (1, 2)`},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d)
		_, err := rw.Rewrite(c.in, false)
		var ue *UnsupportedError
		if !errors.As(err, &ue) {
			t.Errorf("%s: rewrite(%q) = %v, want *UnsupportedError", c.d.name, c.in, err)
			continue
		}
		if ue.Table != "" && ue.Table != "accounts" {
			t.Errorf("%s: rewrite(%q): UnsupportedError.Table = %q, want \"accounts\" (or empty)", c.d.name, c.in, ue.Table)
		}
	}
}

// The versioned and plain variants of one statement differ only in the version item.
func TestRewriteVersionedOnlyAddsTheVersionCheck(t *testing.T) {
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		rw := newTestRewriter(t, d)
		in := `UPDATE accounts SET x = 1 WHERE id = 2`
		plain, err := rw.Rewrite(in, false)
		if err != nil {
			t.Fatal(err)
		}
		ver, err := rw.Rewrite(in, true)
		if err != nil {
			t.Fatal(err)
		}
		if plain.SQL == ver.SQL {
			t.Errorf("%s: versioned plan equals plain plan", d.name)
		}
		if slices.Contains(plain.Args, plan.ArgVersion) {
			t.Errorf("%s: plain plan binds the version: %v", d.name, plain.Args)
		}
		if n := countRef(ver.Args, plan.ArgVersion); n != 1 {
			t.Errorf("%s: versioned plan binds the version %d times: %v", d.name, n, ver.Args)
		}
	}
}

func countRef(args []plan.ArgRef, r plan.ArgRef) int {
	n := 0
	for _, a := range args {
		if a == r {
			n++
		}
	}
	return n
}

// Guards are matched on identifiers, never on substrings of other names or text.
func TestRewriteGuardMatching(t *testing.T) {
	rw := newTestRewriter(t, pgTest, Guard("accounts"), Guard("shop.orders"))
	for in, want := range map[string]plan.Kind{
		`UPDATE accounts SET x = 1`:        plan.KindUpdate,
		`UPDATE ACCOUNTS SET x = 1`:        plan.KindUpdate,
		`UPDATE public.accounts SET x = 1`: plan.KindUpdate,
		`UPDATE shop.orders SET x = 1`:     plan.KindUpdate,
		`UPDATE orders SET x = 1`:          plan.KindUpdate,
		`UPDATE SHOP.ORDERS SET x = 1`:     plan.KindUpdate,
		`UPDATE other.orders SET x = 1`:    plan.KindUpdate, // G13: any qualifier
		`UPDATE accountsx SET x = 1`:       plan.KindPass,
		`UPDATE xaccounts SET x = 1`:       plan.KindPass,
		`UPDATE "accounts x" SET x = 1`:    plan.KindPass,
	} {
		p, err := rw.Rewrite(in, false)
		if err != nil {
			t.Errorf("rewrite(%q): %v", in, err)
			continue
		}
		if p.Kind != want {
			t.Errorf("rewrite(%q) kind = %v, want %v", in, p.Kind, want)
		}
	}
}

// The plan cache returns the same plan for the same text, keeps the plain and versioned
// variants apart, and does not cache refusals.
func TestCorePlanCache(t *testing.T) {
	k, err := newCore([]Option{WithDialect(pgTest), Guard("accounts")})
	if err != nil {
		t.Fatal(err)
	}
	in := `UPDATE accounts SET x = $1`
	a, err := k.plan(in, false)
	if err != nil {
		t.Fatal(err)
	}
	b, _ := k.plan(in, false)
	if a != b {
		t.Errorf("second plan is not the cached one")
	}
	v, _ := k.plan(in, true)
	if v == a || !slices.Contains(v.Args, plan.ArgVersion) {
		t.Errorf("versioned plan = %v, want a distinct plan with the version", v.Args)
	}
	for range 2 {
		if _, err := k.plan(`TRUNCATE accounts`, false); !errors.Is(err, ErrUnsupported) {
			t.Errorf("TRUNCATE: %v", err)
		}
	}
}

// Statements that the server executes as writes to a guarded table, although the table's
// name or the write is spelled in a way the parser does not resolve. Whatever the fix,
// they must never pass through unfenced: refused (ErrUnsupported) or rewritten.
func TestRewriteNoBypass(t *testing.T) {
	cases := []struct {
		d    testDialect
		opts []Option
		in   string
	}{
		// executable comments that hide the statement or the table name
		{mysqlTest, nil, `/*! UPDATE accounts SET x = 1 */`},
		{mysqlTest, nil, `UPDATE /*! accounts */ SET x = 1`},
		{mysqlTest, nil, `DELETE FROM /*!50000 accounts */ WHERE id = 1`},
		// names the parser cannot resolve, but the server can
		{pgTest, nil, `UPDATE U&"accounts" SET x = 1`},
		{pgTest, nil, `UPDATE U&"\0061ccounts" SET x = 1`},
		{pgTest, nil, `INSERT INTO U&"\0061ccounts" (a) VALUES (1)`},
		{sqliteTest, nil, `UPDATE 'accounts' SET x = 1`},
		{sqliteTest, nil, `INSERT INTO 'accounts' (a) VALUES (1)`},
		{sqliteTest, nil, `DELETE FROM 'accounts' WHERE a = 1`},
		// statements that carry a write to a guarded table for later or nested execution
		{pgTest, nil, `PREPARE p AS UPDATE accounts SET x = 1`},
		{pgTest, nil, `PREPARE p (int) AS DELETE FROM accounts WHERE id = $1`},
		{pgTest, nil, `(WITH u AS (UPDATE accounts SET x = 1 RETURNING id) SELECT * FROM u)`},
	}
	for _, c := range cases {
		rw := newTestRewriter(t, c.d, c.opts...)
		for _, versioned := range []bool{false, true} {
			p, err := rw.Rewrite(c.in, versioned)
			switch {
			case err != nil:
				if !errors.Is(err, ErrUnsupported) {
					t.Errorf("%s: rewrite(%q): %v is not ErrUnsupported", c.d.name, c.in, err)
				}
			case p.Kind == plan.KindPass:
				t.Errorf("%s: rewrite(%q, versioned=%v) passes through unfenced; want ErrUnsupported or a fenced rewrite", c.d.name, c.in, versioned)
			}
		}
	}
}
