package postgres

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestBodyWrites: the one judgement of a routine body the door checks share
// (red-team rt44d F2, F3): a write of the table or of a partition or child by name,
// dynamic SQL naming one anywhere or holding an escape literal, and in a language the
// lexer does not read any mention; not a read, nor a write of another table.
func TestBodyWrites(t *testing.T) {
	tbl := dialect.SideDoorTable{Table: dialect.TableName{Schema: "public", Name: "accounts"}}
	names := familyNames(tbl, "accounts accounts_p1 Accounts_Child")
	if len(names) != 3 {
		t.Fatalf("familyNames = %q, want accounts, accounts_p1, Accounts_Child once each", names)
	}
	for _, c := range []struct {
		src, lang, want string
	}{
		{"BEGIN UPDATE accounts SET balance = 1; RETURN NEW; END", "plpgsql", "accounts"},
		{"BEGIN UPDATE accounts_p1 SET balance = 1; RETURN NEW; END", "plpgsql", "accounts_p1"},
		{`BEGIN DELETE FROM "accounts_child"; RETURN NEW; END`, "plpgsql", "Accounts_Child"},
		{"UPDATE public.accounts_p1 SET balance = v RETURNING balance", "sql", "accounts_p1"},
		{"DECLARE q text := 'UPDATE accounts_p1 SET b = '; BEGIN EXECUTE q || NEW.x; RETURN NEW; END", "plpgsql", "accounts_p1"},
		{"DECLARE t text := 'accounts'; BEGIN EXECUTE format('UPDATE %I SET b = 1', t); RETURN NEW; END", "plpgsql", "accounts"},
		{`BEGIN EXECUTE E'UPDATE \x61ccounts SET b = 1'; RETURN NEW; END`, "plpgsql", "accounts"},
		{"plpy.execute('UPDATE accounts_p1 SET b = 1')", "plpython3u", "accounts_p1"},
		{"BEGIN PERFORM 1 FROM accounts; RETURN NEW; END", "plpgsql", ""},
		{"BEGIN EXECUTE 'UPDATE other SET b = 1'; RETURN NEW; END", "plpgsql", ""},
		{"BEGIN INSERT INTO accounts_p10 VALUES (1); RETURN NEW; END", "plpgsql", ""},
	} {
		got, ok := bodyWrites(c.src, c.lang, names)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("bodyWrites(%q, %s) = %q, %v; want %q", c.src, c.lang, got, ok, c.want)
		}
	}
}
