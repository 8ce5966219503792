package postgres

import (
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Tombstones (fencedsql.Tombstoner, G9 in docs/design.md: no resurrection of a deleted
// row under an older token).
//
// TombstoneDDL creates the tombstone table in the guarded table's schema (the first
// schema of the installer's search_path for an unqualified table) when it is missing:
//
//	CREATE TABLE IF NOT EXISTS fencedsql_tombstones (
//	    table_name text COLLATE "C" NOT NULL, pk text COLLATE "C" NOT NULL,
//	    fence_token bigint NOT NULL, deleted_at timestamptz NOT NULL DEFAULT now(),
//	    PRIMARY KEY (table_name, pk))
//
// and one trigger function per table, fencedsql_tombstone_<table>(), with the key and
// token columns compiled in, called by two row triggers:
//
//	fencedsql_tombstone_delete  AFTER DELETE   records jsonb_build_array(OLD.<pk>…)::text
//	                                            and OLD.<token>, keeping the greater token
//	fencedsql_tombstone_insert  BEFORE INSERT  refuses NEW when the tombstone of its key
//	                                            holds a greater token than NEW.<token>
//
// The refusal is RAISE … ERRCODE 'not_null_violation' (23502) with COLUMN set to the
// token column (and TABLE, SCHEMA), which the wrapper reports as fencedsql.ErrFenced —
// raised directly rather than by setting NEW.<token> to NULL, so it holds even where
// the column is (wrongly) nullable. PostgreSQL runs BEFORE INSERT row triggers for
// INSERT … ON CONFLICT before the conflict check, so upserts are covered (DO NOTHING
// included: the refused row raises, it is not skipped).
//
// For an unqualified table the function carries SET search_path FROM CURRENT: the
// tombstone table is found with the installer's search_path whatever the writer's is.
// Removing the triggers is one statement (UntombstoneDDL), which keeps the table:
//
//	DROP FUNCTION IF EXISTS fencedsql_tombstone_<table>() CASCADE
//
// The tombstone table's rows are purged with fencedsql.PurgeTombstones (deleted_at by
// the server's clock). The table is written by every DELETE on a tombstoned table: a
// writer needs INSERT and UPDATE on it (or install the function SECURITY DEFINER
// yourself).

const (
	tombDeleteTrigger = "fencedsql_tombstone_delete"
	tombInsertTrigger = "fencedsql_tombstone_insert"
)

func tombFunc(name string) string { return boundedName("fencedsql_tombstone_", name, maxIdentLen) }

func tombFuncName(table fencedsql.TableName) fencedsql.TableName {
	return fencedsql.TableName{Schema: table.Schema, Name: tombFunc(table.Name)}
}

func tombTable(schema string) fencedsql.TableName {
	return fencedsql.TableName{Schema: foldASCII(schema), Name: fencedsql.TombstoneTable}
}

func pgLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

// PrimaryKeyQuery lists the primary key columns of table in key order.
func (dialect) PrimaryKeyQuery(table fencedsql.TableName) (query string, args []any) {
	return `SELECT a.attname::text FROM pg_catalog.pg_index i JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey) WHERE i.indrelid = to_regclass($1) AND i.indisprimary ORDER BY pg_catalog.array_position(i.indkey::int2[], a.attnum)`,
		[]any{table.String()}
}

// TombstoneDDL returns the statements that create the tombstone table (if missing)
// and install table's tombstone triggers; run them in one transaction.
func (d dialect) TombstoneDDL(table fencedsql.TableName, pk []string, tokenCol string) []string {
	table = fold(table)
	tbl := table.Quote(d.QuoteIdent)
	tomb := tombTable(table.Schema).Quote(d.QuoteIdent)
	fn := tombFuncName(table).Quote(d.QuoteIdent)
	tok := d.QuoteIdent(tokenCol)
	key := func(row string) string {
		cols := make([]string, len(pk))
		for i, c := range pk {
			cols[i] = row + "." + d.QuoteIdent(c)
		}
		return "pg_catalog.jsonb_build_array(" + strings.Join(cols, ", ") + ")::text"
	}
	name := pgLiteral(table.Name)
	body := `
BEGIN
  IF TG_OP = 'DELETE' THEN
    INSERT INTO ` + tomb + ` AS t (table_name, pk, fence_token, deleted_at)
    VALUES (` + name + `, ` + key("OLD") + `, COALESCE(OLD.` + tok + `, 0), pg_catalog.now())
    ON CONFLICT (table_name, pk) DO UPDATE
      SET fence_token = GREATEST(t.fence_token, EXCLUDED.fence_token), deleted_at = EXCLUDED.deleted_at;
    RETURN NULL;
  END IF;
  IF NEW.` + tok + ` IS NOT NULL AND EXISTS (SELECT 1 FROM ` + tomb + ` t
      WHERE t.table_name = ` + name + ` AND t.pk = ` + key("NEW") + ` AND t.fence_token > NEW.` + tok + `) THEN
    RAISE EXCEPTION USING ERRCODE = 'not_null_violation', COLUMN = ` + pgLiteral(tokenCol) + `,
      TABLE = TG_TABLE_NAME, SCHEMA = TG_TABLE_SCHEMA,
      MESSAGE = pg_catalog.format('fencedsql: tombstone on %I.%I: a row with this key was deleted under a newer fence token than %s (null value in column %I violates the fence)', TG_TABLE_SCHEMA, TG_TABLE_NAME, NEW.` + tok + `, ` + pgLiteral(tokenCol) + `),
      HINT = 'the writer holds a stale fencing token: see fencedsql.PurgeTombstones';
  END IF;
  RETURN NEW;
END
`
	tag := dollarTag(body)
	set := ""
	if table.Schema == "" {
		set = " SET search_path FROM CURRENT"
	}
	return []string{
		"CREATE TABLE IF NOT EXISTS " + tomb + ` (table_name text COLLATE "C" NOT NULL, pk text COLLATE "C" NOT NULL, fence_token bigint NOT NULL, deleted_at timestamptz NOT NULL DEFAULT now(), PRIMARY KEY (table_name, pk))`,
		"CREATE OR REPLACE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql" + set + " AS " + tag + body + tag,
		"DROP TRIGGER IF EXISTS " + tombDeleteTrigger + " ON " + tbl,
		"CREATE TRIGGER " + tombDeleteTrigger + " AFTER DELETE ON " + tbl + " FOR EACH ROW EXECUTE FUNCTION " + fn + "()",
		"DROP TRIGGER IF EXISTS " + tombInsertTrigger + " ON " + tbl,
		"CREATE TRIGGER " + tombInsertTrigger + " BEFORE INSERT ON " + tbl + " FOR EACH ROW EXECUTE FUNCTION " + fn + "()",
	}
}

// UntombstoneDDL drops table's tombstone function and with it both triggers.
func (d dialect) UntombstoneDDL(table fencedsql.TableName) []string {
	return []string{"DROP FUNCTION IF EXISTS " + tombFuncName(fold(table)).Quote(d.QuoteIdent) + "() CASCADE"}
}

// TombstoneInstalledQuery yields 1 when both tombstone triggers exist on table, are
// enabled for ordinary sessions and call the table's tombstone function.
func (dialect) TombstoneInstalledQuery(table fencedsql.TableName) (query string, args []any) {
	return `SELECT CASE WHEN COUNT(*) = 2 THEN 1 ELSE 0 END FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid WHERE t.tgrelid = to_regclass($1) AND t.tgname IN ($2, $3) AND t.tgenabled IN ('O', 'A') AND p.proname = $4`,
		[]any{table.String(), tombDeleteTrigger, tombInsertTrigger, tombFunc(foldASCII(table.Name))}
}

// PurgeTombstonesQuery deletes the tombstones older than olderThan (server clock).
func (d dialect) PurgeTombstonesQuery(schema string, olderThan time.Duration) (query string, args []any) {
	return "DELETE FROM " + tombTable(schema).Quote(d.QuoteIdent) + " WHERE deleted_at < pg_catalog.now() - pg_catalog.make_interval(secs => $1)",
		[]any{olderThan.Seconds()}
}

var _ fencedsql.Tombstoner = dialect{}
