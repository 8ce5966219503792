// MariaDB's sql_mode=MSSQL reads [name] as a quoted identifier (]] for a ]): a quote, a
// #, a -- or a /* inside it opens nothing, while the wrapper's default-mode lexer
// takes it for the start of a string or a comment (red-team rt51e F1, F2).

package redteam

import (
	"context"
	"database/sql"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMariaDBMSSQLBracketsHideNoWrite: after the session's sql_mode moves to MSSQL
// (SET in any spelling, an executable comment, the DSN), a text whose brackets hide a
// write of accounts from the lexer — one statement, or several with multiStatements —
// is refused before it is sent: a [ makes the text session-dependent, so the session
// check (which refuses MSSQL) runs first. The rows of accounts stay unchanged under a
// stale token and under none. (SET STATEMENT sql_mode='MSSQL' FOR … needs nothing: the
// server parses the whole text under the session's mode, the prefix's applies only
// when the statement runs — a bracket there is a syntax error.)
func TestMariaDBMSSQLBracketsHideNoWrite(t *testing.T) {
	const quoteJoin = "UPDATE ledger AS [l'] JOIN accounts a ON a.id = [l'].account_id SET a.balance = 0"
	single := []genCase{
		hand("one_quote_join", quoteJoin, "SET sql_mode = 'MSSQL'"),
		hand("one_block", "UPDATE ledger AS [x/*], accounts AS [*/] SET [*/].balance = 0", "SET @@session.sql_mode = 'MSSQL'"),
		hand("one_dashdash", "DELETE [a/*] FROM ledger AS l JOIN accounts AS [a/*] ON 1 = 1 -- */]", "SET SESSION sql_mode := 'MSSQL'"),
		hand("one_doubled", "UPDATE ledger AS [a]]'] JOIN accounts a ON a.id = [a]]'].account_id SET a.balance = 0", "/*!SET sql_mode = 'MSSQL'*/"),
	}
	multi := []genCase{
		hand("quote", "SELECT 1 AS [x']; DELETE FROM accounts; SELECT '", "SET sql_mode = 'MSSQL'"),
		hand("hash", "SELECT 1 AS [#]; DELETE FROM accounts", "SET sql_mode = 'MSSQL'"),
		hand("block", "SELECT 1 AS [x/*]; DELETE FROM accounts; SELECT 1 AS [*/]", "SET sql_mode = 'MSSQL'"),
		hand("dashdash", "SELECT 1 AS [-- ]; UPDATE accounts SET balance = 0", "SET sql_mode = CONCAT(@@sql_mode, ',MSSQL')"),
		hand("backtick", "SELECT 1 AS [`]; DELETE FROM accounts; SELECT 1 AS [`]", "SET sql_mode = 'MSSQL,STRICT_ALL_TABLES'"),
	}
	run := func(t *testing.T, d *dbs, fenced *sql.DB, cases []genCase) {
		for _, c := range cases {
			for _, tok := range []uint64{staleToken, 0} {
				ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
				if tok != 0 {
					ctx = tokenCtx(ctx, tok)
				}
				_, err := execCase(ctx, fenced, c, true)
				cancel()
				rows, rerr := genRows(context.Background(), d.raw, genAccountsQuery)
				if rerr != nil {
					t.Fatal(rerr)
				}
				if what := judgeAccounts(rows, tok); what != "" {
					t.Errorf("FAIL-OPEN %s tok=%d: %s\n    pre=%q sql=%q err=%v", c.name, tok, what, c.pre, c.sql, err)
				} else if err == nil || !typedRefusal(err) {
					t.Errorf("%s tok=%d: want a typed refusal, got %v", c.name, tok, err)
				}
				resetGenerated(context.Background(), t, d.raw, true)
			}
		}
	}
	t.Run("single", func(t *testing.T) {
		b := mysqlBackend()
		b.freshDSN = testdb.MySQL // no multiStatements=true: one statement is enough
		d := freshDB(t, b, entry{})
		fenced, _ := d.open(true, nil)
		run(t, d, fenced, single)
	})
	t.Run("multi", func(t *testing.T) {
		d := freshDB(t, mysqlBackend(), entry{}) // multiStatements=true
		fenced, _ := d.open(true, nil)
		run(t, d, fenced, multi)
	})
	t.Run("dsn", func(t *testing.T) {
		// The connection starts under MSSQL (the DSN's sql_mode, as an init command would).
		b := mysqlBackend()
		b.freshDSN = testdb.MySQL
		d := freshDB(t, b, entry{})
		d.dsn = withParam(d.dsn, "sql_mode=%27MSSQL%27")
		fenced, _ := d.open(true, nil)
		run(t, d, fenced, []genCase{hand("dsn_quote_join", quoteJoin), hand("dsn_block", "UPDATE ledger AS [x/*], accounts AS [*/] SET [*/].balance = 0")})
	})
}

// TestMariaDBMSSQLBracketBodyIsDoor: a procedure or trigger created under
// sql_mode=MSSQL whose body writes the guarded table behind bracket identifiers — [#]
// or [-- ] (a line comment to the default reading), [x/*] … [*/] (a block comment) —
// is reported as a door like the same body without brackets: the body readers read a
// body stored under MSSQL with brackets (dialects/mysql storedSyntax). The pool's
// guarded write is refused by its lazy schema check.
func TestMariaDBMSSQLBracketBodyIsDoor(t *testing.T) {
	for _, c := range []struct{ name, create string }{
		{"control_plain", "CREATE PROCEDURE gram_p() BEGIN UPDATE ledger AS l JOIN accounts a ON a.id = 1 SET a.balance = 0; END"},
		{"proc_hash", "CREATE PROCEDURE gram_p() BEGIN UPDATE ledger AS [#] JOIN accounts a ON a.id = 1 SET a.balance = 0; END"},
		{"proc_dashdash", "CREATE PROCEDURE gram_p() BEGIN UPDATE ledger AS [-- ] JOIN accounts a ON a.id = 1 SET a.balance = 0; END"},
		{"proc_block", "CREATE PROCEDURE gram_p() BEGIN UPDATE ledger AS [x/*], accounts AS [*/] SET [*/].balance = 0; END"},
		{"proc_doubled", "CREATE PROCEDURE gram_p() BEGIN UPDATE ledger AS [a]]#] JOIN accounts a ON a.id = 1 SET a.balance = 0; END"},
		{"trigger_hash", "CREATE TRIGGER gram_tr AFTER UPDATE ON ledger FOR EACH ROW UPDATE ledger2 AS [#] JOIN accounts a ON a.id = 1 SET a.balance = 0"},
	} {
		t.Run(c.name, func(t *testing.T) {
			d := freshDB(t, mysqlBackend(), entry{setup: []string{"CREATE TABLE ledger2 (id BIGINT PRIMARY KEY) ENGINE=InnoDB", "INSERT INTO ledger2 VALUES (1)"}})
			ctx := context.Background()
			conn, err := d.raw.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			for _, q := range []string{"SET sql_mode = 'MSSQL'", c.create} {
				if _, err := conn.ExecContext(ctx, q); err != nil {
					t.Fatalf("%s: %v", q, err)
				}
			}
			conn.Close()
			// the body writes accounts (checked on the raw driver, then undone)
			if c.name[:4] != "trig" {
				_, err = d.raw.ExecContext(ctx, "CALL gram_p()")
			} else {
				_, err = d.raw.ExecContext(ctx, "UPDATE ledger SET amount = 1 WHERE id = 1")
			}
			rows, _ := genRows(ctx, d.raw, genAccountsQuery)
			if err != nil || judgeAccounts(rows, 0) == "" {
				t.Fatalf("the body did not write accounts on the raw driver: %v %v", err, rows)
			}
			resetGenerated(ctx, t, d.raw, true)
			fenced, _ := d.open(true, nil)
			_, err = fenced.ExecContext(tokenCtx(ctx, freshToken), "UPDATE accounts SET balance = 1 WHERE id = 1")
			if err == nil {
				t.Errorf("a %s that writes accounts (hidden by MSSQL brackets) is not reported: the pool's guarded write passed its lazy check", c.name)
			}
		})
	}
}
