package mysql

import "testing"

// TestWritesAsStored: a stored body is judged under the default reading and its own
// sql_mode's (red-team rt47a F1): a statement after '\' (NO_BACKSLASH_ESCAPES) or "\"
// (ANSI_QUOTES) is seen when the body was stored under that mode, or when its mode is
// unknown; a default-mode body with an escaped quote that only reads the table is no
// writer (no reading it was not stored with is judged).
func TestWritesAsStored(t *testing.T) {
	const nbe = "BEGIN SET @a = '\\'; DELETE FROM accounts; -- '\nEND"
	const ansi = "BEGIN SELECT 1 AS \"\\\" INTO @z; DELETE FROM accounts; -- \"\nEND"
	const escaped = "BEGIN SELECT COUNT(*) INTO @n FROM accounts WHERE note = 'it\\'s'; END"
	const mssqlHash = "BEGIN UPDATE ledger AS [#] JOIN accounts a ON a.id = 1 SET a.balance = 0; END"
	const mssql = "PIPES_AS_CONCAT,ANSI_QUOTES,IGNORE_SPACE,MSSQL,NO_KEY_OPTIONS,NO_TABLE_OPTIONS,NO_FIELD_OPTIONS,STRICT_ALL_TABLES"
	for _, c := range []struct {
		name, src, mode string
		want            bool
	}{
		{"NoBackslashEscapes", nbe, "STRICT_TRANS_TABLES,NO_BACKSLASH_ESCAPES", true},
		{"NoBackslashEscapesUnknown", nbe, unknownMode, true},
		{"NoBackslashEscapesDefaultMode", nbe, "STRICT_TRANS_TABLES", false},
		{"AnsiQuotes", ansi, "ANSI_QUOTES,STRICT_ALL_TABLES", true},
		{"AnsiCombination", ansi, "ANSI", true},
		{"OracleCombination", ansi, "ORACLE", true},
		{"AnsiQuotesUnknown", ansi, unknownMode, true},
		{"EscapedQuoteReadOnly", escaped, "STRICT_TRANS_TABLES", false},
		// MariaDB's MSSQL mode: [name] is an identifier, so #, -- and /* inside open
		// nothing (red-team rt51e F2), in every body reader's reading.
		{"MSSQLHash", mssqlHash, mssql, true},
		{"MSSQLDashDash", "BEGIN UPDATE ledger AS [-- ] JOIN accounts a ON a.id = 1 SET a.balance = 0; END", mssql, true},
		{"MSSQLBlock", "BEGIN UPDATE ledger AS [x/*], accounts AS [*/] SET [*/].balance = 0; END", mssql, true},
		{"MSSQLQuote", "BEGIN SELECT 1 AS [x'] INTO @z; DELETE FROM accounts; SELECT 1 AS ['] INTO @z; END", mssql, true},
		{"MSSQLDoubledBracket", "BEGIN SELECT 1 AS [a]]#] INTO @z; DELETE FROM accounts; END", mssql, true},
		{"MSSQLDynamic", "BEGIN SELECT 1 AS [x'] INTO @z; PREPARE s FROM @q; EXECUTE s; SELECT 1 AS ['] INTO @z; END", mssql, true},
		{"MSSQLUnknown", mssqlHash, unknownMode, true},
		{"MSSQLNoBackslashEscapes", "BEGIN SET @a = '\\'; UPDATE ledger AS [#] JOIN accounts a ON a.id = 1 SET a.balance = 0; END", mssql + ",NO_BACKSLASH_ESCAPES", true},
		{"MSSQLReadOnly", "BEGIN SELECT [balance] INTO @b FROM [accounts] WHERE [id] = 1; END", mssql, false},
		{"BracketDefaultMode", mssqlHash, "STRICT_TRANS_TABLES", false},
	} {
		if got := writesAsStored(c.src, c.mode, "accounts", false); got != c.want {
			t.Errorf("%s: writesAsStored(%q, %q) = %v, want %v", c.name, c.src, c.mode, got, c.want)
		}
	}
}
