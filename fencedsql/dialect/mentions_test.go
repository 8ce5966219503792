package dialect_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

func TestMentions(t *testing.T) {
	for s, want := range map[string]bool{
		"UPDATE accounts SET x = 1":            true,
		`UPDATE "Accounts" SET x = 1`:          true,
		"UPDATE [accounts] SET x = 1":          true,
		"UPDATE main.accounts SET x = 1":       true,
		"UPDATE accounts_log SET x = 1":        false,
		"UPDATE my_accounts SET x = 1":         false,
		"INSERT INTO fencedsql_tomb_accounts":  false,
		"UPDATE accounts2 SET x = 1; accounts": true,
		"":                                     false,
	} {
		if got := dialect.Mentions(s, "accounts"); got != want {
			t.Errorf("Mentions(%q) = %v, want %v", s, got, want)
		}
	}
}

// WritesTable: a statement of the body that writes and names the table, in any
// quoting or as a string (dynamic SQL, SQLite's string names); reads, other tables,
// names glued to others, comments and messages do not count; text the lexer cannot
// read counts when it mentions the table.
func TestWritesTable(t *testing.T) {
	cases := []struct {
		syn  dialect.Syntax
		body string
		want bool
	}{
		{dialect.SQLiteSyntax, " UPDATE accounts SET balance = NEW.amount WHERE id = NEW.acct; END", true},
		{dialect.SQLiteSyntax, " DELETE FROM \"Accounts\" WHERE id = OLD.acct; END", true},
		{dialect.SQLiteSyntax, " INSERT OR REPLACE INTO [accounts] (id) VALUES (NEW.id); END", true},
		{dialect.SQLiteSyntax, " UPDATE 'accounts' SET balance = 0; END", true},
		{dialect.SQLiteSyntax, " SELECT RAISE(ABORT, 'no account') WHERE NOT EXISTS (SELECT 1 FROM accounts WHERE id = NEW.acct); UPDATE other SET x = 1; END", false},
		{dialect.SQLiteSyntax, " UPDATE accounts_log SET x = 1; END", false},
		{dialect.SQLiteSyntax, " INSERT INTO fencedsql_tomb_accounts (id) VALUES (OLD.id); END", false},
		{dialect.SQLiteSyntax, " UPDATE other SET x = 1; -- accounts\nEND", false},
		{dialect.SQLiteSyntax, " INSERT INTO other SELECT * FROM accounts; END", true}, // errs on the side of yes
		{dialect.PostgresSyntax, "BEGIN UPDATE public.accounts SET balance = 0 WHERE id = NEW.acct; RETURN NEW; END", true},
		{dialect.PostgresSyntax, "BEGIN EXECUTE format('DELETE FROM %I WHERE id = $1', 'accounts') USING NEW.id; RETURN NULL; END", true},
		{dialect.PostgresSyntax, "BEGIN EXECUTE $q$UPDATE accounts SET x = 1$q$; RETURN NULL; END", true},
		// The name glued to the dollar quote's closing tag (red-team rt30a F8).
		{dialect.PostgresSyntax, "BEGIN EXECUTE $q$DELETE FROM accounts$q$; RETURN NULL; END", true},
		{dialect.PostgresSyntax, "BEGIN EXECUTE $q$TRUNCATE accounts$q$; END", true},
		{dialect.PostgresSyntax, "BEGIN RAISE NOTICE 'accounts changed'; UPDATE audit SET n = n + 1; RETURN NEW; END", false},
		{dialect.PostgresSyntax, "BEGIN NEW.updated_at := now(); RETURN NEW; END", false},
		{dialect.PostgresSyntax, "BEGIN UPDATE accounts SET x = 'unterminated; END", true},
		{dialect.PostgresSyntax, `BEGIN UPDATE U&"\0061ccounts" SET x = 1; RETURN NULL; END`, true}, // a name it cannot decode may be the table
		{dialect.PostgresSyntax, `BEGIN UPDATE U&"!0061ccounts" UESCAPE '!' SET x = 1; RETURN NULL; END`, true},
		{dialect.MySQLSyntax, "BEGIN IF NEW.x > 0 THEN UPDATE `accounts` SET balance = 0 WHERE id = NEW.acct; END IF; END", true},
		{dialect.MySQLSyntax, "UPDATE accounts SET balance = NEW.amount WHERE id = NEW.acct", true},
		{dialect.MySQLSyntax, "SET NEW.note = (SELECT name FROM accounts WHERE id = NEW.acct)", false},
	}
	for _, c := range cases {
		if got := dialect.WritesTable(c.body, c.syn, "accounts"); got != c.want {
			t.Errorf("WritesTable(%q) = %v, want %v", c.body, got, c.want)
		}
	}
}

func TestNamesColumn(t *testing.T) {
	for _, c := range []struct {
		src  string
		syn  dialect.Syntax
		want bool
	}{
		{"BEGIN NEW.fence_token := COALESCE(NEW.fence_token, OLD.fence_token); RETURN NEW; END", dialect.PostgresSyntax, true},
		{`BEGIN NEW."Version" := 1; RETURN NEW; END`, dialect.PostgresSyntax, true},
		{"SET NEW.`FENCE_TOKEN` = IFNULL(NEW.fence_token, OLD.fence_token)", dialect.MySQLSyntax, true},
		{`BEGIN NEW.U&"\0066ence_token" := 1; RETURN NEW; END`, dialect.PostgresSyntax, true},
		{"x FENCE_TOKEN", dialect.PostgresSyntax, true}, // trigger arguments
		{"BEGIN NEW.updated_at := now(); RETURN NEW; END", dialect.PostgresSyntax, false},
		{"BEGIN NEW.row_version := 1; NEW.fence_token_note := 'x'; RETURN NEW; END", dialect.PostgresSyntax, false},
		{"SET NEW.updated_at = NOW(6)", dialect.MySQLSyntax, false},
	} {
		if got := dialect.NamesColumn(c.src, c.syn, "fence_token", "version"); got != c.want {
			t.Errorf("NamesColumn(%q) = %v, want %v", c.src, got, c.want)
		}
	}
}

// TestWritesTableWords: extra words count as writing (PostgreSQL's DDL on a guard
// table, red-team rt29a F5); nil extra is WritesTable.
func TestWritesTableWords(t *testing.T) {
	ddl := map[string]bool{"ALTER": true, "DROP": true, "CREATE": true}
	swap := "BEGIN ALTER TABLE public.fencedsql_tomb_a RENAME TO old; CREATE TABLE public.fencedsql_tomb_a (LIKE public.old); RETURN NULL; END"
	if dialect.WritesTable(swap, dialect.PostgresSyntax, "fencedsql_tomb_a") || dialect.WritesTableWords(swap, dialect.PostgresSyntax, "fencedsql_tomb_a", nil) {
		t.Error("the swap counts as a write without the extra words")
	}
	if !dialect.WritesTableWords(swap, dialect.PostgresSyntax, "fencedsql_tomb_a", ddl) {
		t.Error("the swap does not count with ALTER, CREATE as extra words")
	}
	if dialect.WritesTableWords("BEGIN PERFORM 1 FROM fencedsql_tomb_a; ALTER TABLE other ADD x int; END", dialect.PostgresSyntax, "fencedsql_tomb_a", ddl) {
		t.Error("a read and DDL on another table in separate statements count")
	}
}

// TestWritesTableSQLiteNameFolding (red-team rt61b F3): SQLite folds ASCII letters only,
// so a body writing "ä" does not write the table "Ä" (on MySQL/MariaDB, which fold
// every letter, it does), and a body writing "ACCOUNTS" still writes accounts.
func TestWritesTableSQLiteNameFolding(t *testing.T) {
	cases := []struct {
		syn        dialect.Syntax
		body, name string
		want       bool
	}{
		{dialect.SQLiteSyntax, ` UPDATE "ä" SET x = 1; END`, "Ä", false},
		{dialect.SQLiteSyntax, ` UPDATE "Ä" SET x = 1; END`, "Ä", true},
		{dialect.SQLiteSyntax, ` UPDATE ACCOUNTS SET x = 1; END`, "accounts", true},
		{dialect.SQLiteSyntax, ` UPDATE "accounſ" SET x = 1; END`, "accounts", false},
		{dialect.MySQLSyntax, " UPDATE `ä` SET x = 1; END", "Ä", true},
	}
	for _, c := range cases {
		if got := dialect.WritesTable(c.body, c.syn, c.name); got != c.want {
			t.Errorf("WritesTable(%q, %v, %q) = %v, want %v", c.body, c.syn, c.name, got, c.want)
		}
	}
}

// TestDDLTokenIsASCIIKeyword: a keyword matches in ASCII case only; a bare name spelled
// with a letter that Unicode folds to an ASCII one (ſ U+017F → s, K U+212A → k) is a
// name, as the servers read it (red-team rt61b F3: CREATE TABLE aſ (…) is no
// CREATE TABLE … AS).
func TestDDLTokenIsASCIIKeyword(t *testing.T) {
	toks, err := dialect.LexDDL("aſ As \u212aEY key", dialect.SQLiteSyntax)
	if err != nil || len(toks) != 4 {
		t.Fatalf("LexDDL: %v %v", toks, err)
	}
	for i, want := range []bool{false, true, false, true} {
		kw := "AS"
		if i >= 2 {
			kw = "KEY"
		}
		if got := toks[i].Is(kw); got != want {
			t.Errorf("%q.Is(%q) = %v, want %v", toks[i].Text, kw, got, want)
		}
	}
}
