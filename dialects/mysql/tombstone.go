package mysql

import (
	"fmt"
	"hash/fnv"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Tombstones (fencedsql.Tombstoner, G9 in docs/design.md: no resurrection of a deleted
// row under an older token).
//
// TombstoneDDL creates the tombstone table in the guarded table's database (the
// connection's database for an unqualified table) when it is missing:
//
//	CREATE TABLE IF NOT EXISTS fencedsql_tombstones (
//	    table_name VARCHAR(64) … COLLATE utf8mb4_bin NOT NULL,
//	    pk VARCHAR(700) … COLLATE utf8mb4_bin NOT NULL,
//	    fence_token BIGINT NOT NULL, deleted_at DATETIME(6) NOT NULL,
//	    PRIMARY KEY (table_name, pk)) ENGINE=InnoDB
//
// and two triggers per table, with the key and token columns compiled in:
//
//	fencedsql_tombdel_<table>  AFTER DELETE   records JSON_ARRAY(OLD.<pk>…) and
//	                                           OLD.<token> (UTC_TIMESTAMP(6)), keeping
//	                                           the greater token
//	fencedsql_tombins_<table>  BEFORE INSERT  refuses NEW when the tombstone of its key
//	                                           holds a greater token than NEW.<token>
//
// The refusal is the error strict mode raises for a NULL in the token column,
// SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column
// ”fence_token” cannot be null', which the wrapper reports as fencedsql.ErrFenced
// (the guard uses the same SIGNAL; setting NEW.<token> to NULL instead would store 0
// in a non-strict session). MySQL and MariaDB run BEFORE INSERT triggers for every row
// of INSERT … ON DUPLICATE KEY UPDATE (and REPLACE) before the duplicate is looked at,
// so upserts are covered.
//
// Limits: a key whose JSON text exceeds 700 characters makes the DELETE fail (strict
// mode); keys compare exactly (binary collation), even where the table's key column
// compares case-insensitively. Foreign-key cascades run no triggers in MySQL and
// record no tombstones. The DELETE trigger writes the tombstone table, so writers need
// INSERT and UPDATE on it. DDL is not transactional: re-installing leaves a moment
// without the triggers.
const tombMaxPK = 700

func tombTrigger(kind, name string) string {
	prefix := "fencedsql_tomb" + kind + "_"
	full := prefix + name
	if len([]rune(full)) <= maxIdentLen {
		return full
	}
	h := fnv.New32a()
	h.Write([]byte(name))
	suffix := fmt.Sprintf("_%08x", h.Sum32())
	r := []rune(full)
	return string(r[:maxIdentLen-len(suffix)]) + suffix
}

func tombTable(schema string) fencedsql.TableName {
	return fencedsql.TableName{Schema: schema, Name: fencedsql.TombstoneTable}
}

// PrimaryKeyQuery lists the primary key columns of table in key order.
func (dialect) PrimaryKeyQuery(table fencedsql.TableName) (query string, args []any) {
	return "SELECT COLUMN_NAME FROM information_schema.KEY_COLUMN_USAGE WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ? AND CONSTRAINT_NAME = 'PRIMARY' ORDER BY ORDINAL_POSITION",
		[]any{table.Schema, table.Name}
}

// TombstoneDDL returns the statements that create the tombstone table (if missing)
// and install table's tombstone triggers, one statement each for database/sql.
func (d dialect) TombstoneDDL(table fencedsql.TableName, pk []string, tokenCol string) []string {
	tbl := table.Quote(d.QuoteIdent)
	tomb := tombTable(table.Schema).Quote(d.QuoteIdent)
	del := fencedsql.TableName{Schema: table.Schema, Name: tombTrigger("del", table.Name)}.Quote(d.QuoteIdent)
	ins := fencedsql.TableName{Schema: table.Schema, Name: tombTrigger("ins", table.Name)}.Quote(d.QuoteIdent)
	tok := d.QuoteIdent(tokenCol)
	key := func(row string) string {
		cols := make([]string, len(pk))
		for i, c := range pk {
			cols[i] = row + "." + d.QuoteIdent(c)
		}
		return "CAST(JSON_ARRAY(" + strings.Join(cols, ", ") + ") AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin"
	}
	name := literal(table.Name)
	return []string{
		"CREATE TABLE IF NOT EXISTS " + tomb + " (table_name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, " +
			fmt.Sprintf("pk VARCHAR(%d) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, ", tombMaxPK) +
			"fence_token BIGINT NOT NULL, deleted_at DATETIME(6) NOT NULL, PRIMARY KEY (table_name, pk)) ENGINE=InnoDB",
		"DROP TRIGGER IF EXISTS " + del,
		"CREATE TRIGGER " + del + " AFTER DELETE ON " + tbl + " FOR EACH ROW\n" +
			"INSERT INTO " + tomb + " (table_name, pk, fence_token, deleted_at) VALUES (" + name + ", " + key("OLD") + ", COALESCE(OLD." + tok + ", 0), UTC_TIMESTAMP(6))\n" +
			"ON DUPLICATE KEY UPDATE fence_token = GREATEST(fence_token, VALUES(fence_token)), deleted_at = VALUES(deleted_at)",
		"DROP TRIGGER IF EXISTS " + ins,
		"CREATE TRIGGER " + ins + " BEFORE INSERT ON " + tbl + " FOR EACH ROW\nBEGIN\n" +
			"  IF NEW." + tok + " IS NOT NULL AND EXISTS (SELECT 1 FROM " + tomb + " t WHERE t.table_name = " + name +
			" AND t.pk = " + key("NEW") + " AND t.fence_token > NEW." + tok + ") THEN\n" +
			"    SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = " + literal("Column '"+tokenCol+"' cannot be null") + ";\n" +
			"  END IF;\nEND",
	}
}

// UntombstoneDDL drops table's two tombstone triggers (the tombstone table stays).
func (d dialect) UntombstoneDDL(table fencedsql.TableName) []string {
	return []string{
		"DROP TRIGGER IF EXISTS " + fencedsql.TableName{Schema: table.Schema, Name: tombTrigger("del", table.Name)}.Quote(d.QuoteIdent),
		"DROP TRIGGER IF EXISTS " + fencedsql.TableName{Schema: table.Schema, Name: tombTrigger("ins", table.Name)}.Quote(d.QuoteIdent),
	}
}

// TombstoneInstalledQuery yields 1 when both tombstone triggers exist on table.
func (dialect) TombstoneInstalledQuery(table fencedsql.TableName) (query string, args []any) {
	return "SELECT IF(COUNT(*) = 2, 1, 0) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND EVENT_OBJECT_TABLE = ? AND ((TRIGGER_NAME = ? AND EVENT_MANIPULATION = 'DELETE' AND ACTION_TIMING = 'AFTER') OR (TRIGGER_NAME = ? AND EVENT_MANIPULATION = 'INSERT' AND ACTION_TIMING = 'BEFORE'))",
		[]any{table.Schema, table.Name, tombTrigger("del", table.Name), tombTrigger("ins", table.Name)}
}

// PurgeTombstonesQuery deletes the tombstones older than olderThan (server clock, UTC).
func (d dialect) PurgeTombstonesQuery(schema string, olderThan time.Duration) (query string, args []any) {
	return "DELETE FROM " + tombTable(schema).Quote(d.QuoteIdent) + " WHERE deleted_at < UTC_TIMESTAMP(6) - INTERVAL ? MICROSECOND",
		[]any{olderThan.Microseconds()}
}

var _ fencedsql.Tombstoner = dialect{}
