package sqlite

import (
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TombstoneMessagePrefix starts the message of a refusal by the tombstone guard; the
// message goes on "<table>: NOT NULL constraint failed: <table>.<token column>", and
// Dialect's Classify reports it as a NOT NULL violation on the token column, which the
// wrapper reports as fencedsql.ErrFenced.
//
// Tombstones (fencedsql.Tombstoner, G9 in docs/design.md: no resurrection of a deleted
// row under an older token): TombstoneDDL creates the tombstone table in the guarded
// table's schema (main, or the attached database the table is in) when it is missing,
//
//	CREATE TABLE IF NOT EXISTS fencedsql_tombstones (table_name TEXT NOT NULL,
//	    pk TEXT NOT NULL, fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL,
//	    PRIMARY KEY (table_name, pk)) WITHOUT ROWID
//
// (deleted_at in Unix seconds), and two triggers per table, with the key and token
// columns compiled in:
//
//	fencedsql_tombdel_<table>  AFTER DELETE   records json_array(OLD.<pk>…) and
//	                                           OLD.<token>, keeping the greater token
//	fencedsql_tombins_<table>  BEFORE INSERT  WHEN the tombstone of NEW's key holds a
//	                                           greater token than NEW.<token>:
//	                                           SELECT RAISE(ABORT, '<message>')
//
// A BEFORE trigger cannot assign NEW in SQLite, hence RAISE (SQLITE_CONSTRAINT_TRIGGER)
// with a message of this package's own, which Classify maps. SQLite runs BEFORE INSERT
// triggers for an upsert (INSERT … ON CONFLICT DO UPDATE / DO NOTHING) before the
// conflict is looked at, so upserts are covered. Limits as for the guard: any
// connection can drop the triggers.
const TombstoneMessagePrefix = "fencedsql: tombstone on "

func tombTrigger(kind, name string) string { return "fencedsql_tomb" + kind + "_" + name }

// PrimaryKeyQuery lists the primary key columns of table in key order (a rowid table
// without a declared PRIMARY KEY has none).
func (dialect) PrimaryKeyQuery(table fencedsql.TableName) (query string, args []any) {
	if table.Schema != "" {
		return `SELECT name FROM pragma_table_info(?, ?) WHERE pk > 0 ORDER BY pk`, []any{table.Name, table.Schema}
	}
	return `SELECT name FROM pragma_table_info(?) WHERE pk > 0 ORDER BY pk`, []any{table.Name}
}

// TombstoneDDL returns the statements that create the tombstone table (if missing)
// and install table's tombstone triggers; run them in one transaction.
func (d dialect) TombstoneDDL(table fencedsql.TableName, pk []string, tokenCol string) []string {
	tomb := fencedsql.TableName{Schema: table.Schema, Name: fencedsql.TombstoneTable}.Quote(d.QuoteIdent)
	del := fencedsql.TableName{Schema: table.Schema, Name: tombTrigger("del", table.Name)}.Quote(d.QuoteIdent)
	ins := fencedsql.TableName{Schema: table.Schema, Name: tombTrigger("ins", table.Name)}.Quote(d.QuoteIdent)
	tbl, tombIn := d.QuoteIdent(table.Name), d.QuoteIdent(fencedsql.TombstoneTable) // unqualified in trigger bodies
	tok := d.QuoteIdent(tokenCol)
	key := func(row string) string {
		cols := make([]string, len(pk))
		for i, c := range pk {
			cols[i] = row + "." + d.QuoteIdent(c)
		}
		return "json_array(" + strings.Join(cols, ", ") + ")"
	}
	name := literal(table.Name)
	msg := literal(TombstoneMessagePrefix + table.Name + ": NOT NULL constraint failed: " + table.Name + "." + tokenCol)
	return []string{
		"CREATE TABLE IF NOT EXISTS " + tomb + " (table_name TEXT NOT NULL, pk TEXT NOT NULL, fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL, PRIMARY KEY (table_name, pk)) WITHOUT ROWID",
		"DROP TRIGGER IF EXISTS " + del,
		"CREATE TRIGGER " + del + " AFTER DELETE ON " + tbl + " FOR EACH ROW\nBEGIN\n" +
			"  INSERT INTO " + tombIn + " (table_name, pk, fence_token, deleted_at) VALUES (" + name + ", " + key("OLD") + ", coalesce(OLD." + tok + ", 0), " + sqliteNow + ")\n" +
			"  ON CONFLICT (table_name, pk) DO UPDATE SET fence_token = max(fence_token, excluded.fence_token), deleted_at = excluded.deleted_at;\nEND",
		"DROP TRIGGER IF EXISTS " + ins,
		"CREATE TRIGGER " + ins + " BEFORE INSERT ON " + tbl + " FOR EACH ROW\n" +
			"WHEN NEW." + tok + " IS NOT NULL AND EXISTS (SELECT 1 FROM " + tombIn + " t WHERE t.table_name = " + name + " AND t.pk = " + key("NEW") + " AND t.fence_token > NEW." + tok + ")\n" +
			"BEGIN\n  SELECT RAISE(ABORT, " + msg + ");\nEND",
	}
}

// sqliteNow is the current time in Unix seconds, with fractions.
const sqliteNow = "((julianday('now') - 2440587.5) * 86400.0)"

// UntombstoneDDL drops table's two tombstone triggers (the tombstone table stays).
func (d dialect) UntombstoneDDL(table fencedsql.TableName) []string {
	return []string{
		"DROP TRIGGER IF EXISTS " + fencedsql.TableName{Schema: table.Schema, Name: tombTrigger("del", table.Name)}.Quote(d.QuoteIdent),
		"DROP TRIGGER IF EXISTS " + fencedsql.TableName{Schema: table.Schema, Name: tombTrigger("ins", table.Name)}.Quote(d.QuoteIdent),
	}
}

// TombstoneInstalledQuery yields 1 when both tombstone triggers exist on table.
func (d dialect) TombstoneInstalledQuery(table fencedsql.TableName) (query string, args []any) {
	master := "sqlite_master"
	if table.Schema != "" {
		master = d.QuoteIdent(table.Schema) + ".sqlite_master"
	}
	return "SELECT CASE WHEN COUNT(*) = 2 THEN 1 ELSE 0 END FROM " + master + " WHERE type = 'trigger' AND name IN (? COLLATE NOCASE, ? COLLATE NOCASE) AND tbl_name = ? COLLATE NOCASE",
		[]any{tombTrigger("del", table.Name), tombTrigger("ins", table.Name), table.Name}
}

// PurgeTombstonesQuery deletes the tombstones older than olderThan (by SQLite's clock).
func (d dialect) PurgeTombstonesQuery(schema string, olderThan time.Duration) (query string, args []any) {
	return "DELETE FROM " + fencedsql.TableName{Schema: schema, Name: fencedsql.TombstoneTable}.Quote(d.QuoteIdent) + " WHERE deleted_at < " + sqliteNow + " - ?",
		[]any{olderThan.Seconds()}
}

var _ fencedsql.Tombstoner = dialect{}
