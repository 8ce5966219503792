package postgres_test

import (
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// tombWriterSpellings are SECURITY DEFINER bodies (EXECUTE to PUBLIC) that write the
// tombstone table in spellings the guard-writer judgement (guardWrites) must read.
var tombWriterSpellings = map[string]string{
	"Merge":           `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN MERGE INTO fencedsql_tomb_accounts t USING (SELECT 1::bigint AS id) s ON t.id = s.id WHEN MATCHED THEN DELETE; END $$`,
	"SpacedDot":       `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM public . fencedsql_tomb_accounts; END $$`,
	"CommentDot":      `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM public/**/./**/"fencedsql_tomb_accounts"; END $$`,
	"FormatI":         `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN EXECUTE format('DELETE FROM %I', 'fencedsql_tomb_accounts'); END $$`,
	"NestedDollar":    `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $a$ BEGIN EXECUTE $b$DELETE FROM fencedsql_tomb_accounts$b$; END $a$`,
	"SQLAtomic":       `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE sql SECURITY DEFINER BEGIN ATOMIC DELETE FROM fencedsql_tomb_accounts; END`,
	"SQLString":       `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE sql SECURITY DEFINER AS 'DELETE FROM fencedsql_tomb_accounts'`,
	"UpdateLower":     `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN UPDATE fencedsql_tomb_accounts SET fence_token = 0; END $$`,
	"WithDelete":      `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE sql SECURITY DEFINER AS $$ WITH d AS (DELETE FROM fencedsql_tomb_accounts RETURNING 1) SELECT NULL::void $$`,
	"UnicodeIdent":    `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE sql SECURITY DEFINER AS $$ DELETE FROM U&"fencedsql_tomb_accoun\0074s" $$`,
	"TruncateList":    `CREATE TABLE rt48a_x (x int); CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN TRUNCATE ONLY rt48a_x, fencedsql_tomb_accounts; END $$`,
	"RenameAway":      `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN ALTER TABLE IF EXISTS fencedsql_tomb_accounts RENAME TO rt48a_old; CREATE TABLE fencedsql_tomb_accounts (LIKE rt48a_old INCLUDING ALL); END $$`,
	"ExecuteVariable": `CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql SECURITY DEFINER AS $$ DECLARE q text := 'DELETE FROM fencedsql_tomb_accounts'; BEGIN EXECUTE q; END $$`,
	"ProcedureCall":   `CREATE PROCEDURE rt48a_p() LANGUAGE plpgsql SECURITY DEFINER AS $$ BEGIN DELETE FROM fencedsql_tomb_accounts; END $$; CREATE FUNCTION rt48a_w() RETURNS void LANGUAGE plpgsql AS $$ BEGIN CALL rt48a_p(); END $$`,
}

// TestTombWriterSpellingsReported (red-team rt48a's spellings, which held, and
// ExecuteVariable, a string EXECUTE'd through a variable, which did not: its F1
// class): each body is a door (schema.Check not OK) and the tombstone attack through
// the pool fails.
func TestTombWriterSpellingsReported(t *testing.T) {
	for name, ddl := range tombWriterSpellings {
		t.Run(name, func(t *testing.T) {
			ctx, dsn, raw := guardedAccounts(t)
			testdb.Exec(t, raw, ddl)
			reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				t.Fatal(err)
			}
			if reps[0].OK() {
				t.Errorf("schema.Check reports accounts OK with %s", ddl)
			}
			tombAttack(t, ctx, dsn, false, 0, "SELECT rt48a_w()")
		})
	}
}
