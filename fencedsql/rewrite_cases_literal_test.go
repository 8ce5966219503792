// Rewrite cases whose comments and literals hold what looks like SQL, names and placeholders.

package fencedsql

import (
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// rewriteLiteralCases: comments and literals.
var rewriteLiteralCases = []rewriteCase{
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
}
