package postgres

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestBodyShadows (red-team rt47c F1): a routine body that may create, rename, move or
// drop a relation of the table's name (or a partition's or child's) — any CREATE,
// ALTER, RENAME, DROP or IMPORT statement naming it, in any quoting or schema, and an
// SQL body's INTO whose target is the name — shadows it; a temporary table of another
// name, a PL/pgSQL SELECT … INTO a variable (even one spelled like the table), a write
// (INSERT INTO, UPDATE, MERGE INTO) and a body in another language (bodyWrites'
// business) do not.
func TestBodyShadows(t *testing.T) {
	tbl := dialect.SideDoorTable{Table: dialect.TableName{Schema: "public", Name: "accounts"}}
	names := familyNames(tbl, "accounts accounts_p1")
	for _, c := range []struct {
		src, lang, want string
	}{
		{"BEGIN CREATE TEMP TABLE accounts (id int); RETURN 1; END", "plpgsql", "accounts"},
		{"BEGIN CREATE TABLE pg_temp.accounts (id int); RETURN 1; END", "plpgsql", "accounts"},
		{`BEGIN IF true THEN CREATE TEMP TABLE IF NOT EXISTS "ACCOUNTS" (id int); END IF; RETURN 1; END`, "plpgsql", "accounts"},
		{"BEGIN CREATE TEMP VIEW accounts_p1 AS SELECT 1; RETURN 1; END", "plpgsql", "accounts_p1"},
		{"BEGIN CREATE TEMP TABLE x (id int); ALTER TABLE x RENAME TO accounts; RETURN 1; END", "plpgsql", "accounts"},
		{"BEGIN ALTER TABLE s2.accounts SET SCHEMA public; RETURN 1; END", "plpgsql", "accounts"},
		{"BEGIN DROP TABLE IF EXISTS pg_temp.accounts; RETURN 1; END", "plpgsql", "accounts"},
		{"BEGIN IMPORT FOREIGN SCHEMA r LIMIT TO (accounts) FROM SERVER s INTO pg_temp; RETURN 1; END", "plpgsql", "accounts"},
		{"CREATE TEMP TABLE accounts AS SELECT 1 AS id; SELECT 1", "sql", "accounts"},
		{"SELECT 1 AS id INTO TEMP accounts; SELECT 1", "sql", "accounts"},
		{"SELECT 1 AS id INTO UNLOGGED TABLE pg_temp.\"accounts_p1\"; SELECT 1", "sql", "accounts_p1"},
		{`SELECT 1 AS id INTO TEMP U&"\0061ccounts"; SELECT 1`, "sql", "accounts"},
		{"BEGIN CREATE TEMP TABLE accounts_tmp (id int); RETURN 1; END", "plpgsql", ""},
		{"DECLARE v bigint; BEGIN SELECT balance INTO v FROM accounts; RETURN v; END", "plpgsql", ""},
		{"DECLARE accounts bigint; BEGIN SELECT 1 INTO accounts; RETURN 1; END", "plpgsql", ""},
		{"BEGIN PERFORM 1 FROM accounts; CREATE TEMP TABLE other (id int); RETURN 1; END", "plpgsql", ""},
		{"plpy.execute('CREATE TEMP TABLE accounts (id int)')", "plpython3u", ""},
		// Writes are bodyWrites' business (a trigger of the table itself writing it is
		// ownTriggers'), not a shadow.
		{"BEGIN INSERT INTO accounts (id) VALUES (NEW.id); UPDATE accounts SET b = 1; RETURN NULL; END", "plpgsql", ""},
		{"MERGE INTO accounts a USING s ON a.id = s.id WHEN MATCHED THEN DELETE", "sql", ""},
		{"BEGIN UPDATE accounts SET b = 1 RETURNING b INTO v; RETURN NULL; END", "plpgsql", ""},
	} {
		got, ok := bodyShadows(c.src, c.lang, names)
		if ok != (c.want != "") || got != c.want {
			t.Errorf("bodyShadows(%q, %s) = %q, %v; want %q", c.src, c.lang, got, ok, c.want)
		}
	}
}
