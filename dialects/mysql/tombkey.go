package mysql

import (
	"context"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// tombstoneKey finds a tombstone table whose key is no longer the table's primary key
// (dialect.SideDoorTombstoneKey): TombstoneDDL gives the tombstone table the key's
// columns with their COLUMN_TYPE and collation, and MySQL/MariaDB let a key column's
// type change under the tombstone triggers (ALTER TABLE … MODIFY id DECIMAL(10,1)),
// after which a deleted key 1.5 is recorded as 2 and a stale INSERT of 1.5 finds no
// tombstone (red-team rt20g F5). One query: each primary-key column of the table
// beside the tombstone table's column of that name, its place in the tombstone's key,
// and whether that key covers whole columns. Fix: MODIFY each differing tombstone column to the key's type and collation
// (existing tombstones are converted as the table's keys were); when the key's
// columns themselves differ, no statement: drop the tombstone table and re-run
// fencedsql-schema -apply.
func (d dialectImpl) tombstoneKey(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	tomb := tombTable(dialect.TableName{Name: t.Table.Name}).Name
	// Every view is restricted by constant names (information_schema opens only those
	// tables) and joined to k byte for byte (sameName, red-team rt56a F2).
	const db = "COALESCE(NULLIF(?, _binary''), DATABASE())"
	same := func(a string) string {
		return sameName(a+".TABLE_SCHEMA", "k.TABLE_SCHEMA")
	}
	rows, err := query(ctx, "SELECT k.COLUMN_NAME, c.COLUMN_TYPE, COALESCE(c.COLLATION_NAME, ''), COALESCE(tc.COLUMN_TYPE, ''), COALESCE(tc.COLLATION_NAME, ''), "+
		"COALESCE(tk.ORDINAL_POSITION, 0) = k.ORDINAL_POSITION, "+
		"(SELECT COUNT(*) FROM information_schema.KEY_COLUMN_USAGE x WHERE x.TABLE_SCHEMA = "+db+" AND "+same("x")+" AND x.TABLE_NAME = ? AND x.CONSTRAINT_NAME = 'PRIMARY'), k.TABLE_SCHEMA, "+
		"NOT EXISTS (SELECT 1 FROM information_schema.STATISTICS s WHERE s.TABLE_SCHEMA = "+db+" AND "+same("s")+" AND s.TABLE_NAME = ? AND s.INDEX_NAME = 'PRIMARY' AND s.SUB_PART IS NOT NULL) "+
		"FROM information_schema.KEY_COLUMN_USAGE k "+
		"JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = "+db+" AND c.TABLE_NAME = ? AND "+same("c")+" AND "+sameName("c.TABLE_NAME", "k.TABLE_NAME")+" AND "+sameName("c.COLUMN_NAME", "k.COLUMN_NAME")+" "+
		// A system-versioned tombstone table is guardTables' to report (guardversioned.go):
		// MariaDB adds row_end to its primary key.
		"JOIN information_schema.TABLES tt ON tt.TABLE_SCHEMA = "+db+" AND "+same("tt")+" AND tt.TABLE_NAME = ? AND tt.TABLE_TYPE = 'BASE TABLE' "+
		"LEFT JOIN information_schema.COLUMNS tc ON tc.TABLE_SCHEMA = "+db+" AND "+same("tc")+" AND tc.TABLE_NAME = ? AND "+sameName("tc.TABLE_NAME", "tt.TABLE_NAME")+" AND "+sameName("tc.COLUMN_NAME", "k.COLUMN_NAME")+" "+
		"LEFT JOIN information_schema.KEY_COLUMN_USAGE tk ON tk.TABLE_SCHEMA = "+db+" AND "+same("tk")+" AND tk.TABLE_NAME = ? AND "+sameName("tk.TABLE_NAME", "tt.TABLE_NAME")+" AND tk.CONSTRAINT_NAME = 'PRIMARY' AND "+sameName("tk.COLUMN_NAME", "k.COLUMN_NAME")+" "+
		"WHERE k.TABLE_SCHEMA = "+db+" AND k.TABLE_NAME = ? AND k.CONSTRAINT_NAME = 'PRIMARY' ORDER BY k.ORDINAL_POSITION",
		t.Table.Schema, tomb, t.Table.Schema, tomb, t.Table.Schema, t.Table.Name, t.Table.Schema, tomb, t.Table.Schema, tomb, t.Table.Schema, tomb, t.Table.Schema, t.Table.Name)
	if err != nil || len(rows) == 0 {
		return nil, err
	}
	var differ, fix []string
	sameColumns := true
	for _, r := range rows {
		if len(r) < 9 {
			return nil, nil
		}
		// The same columns in the same places, each whole (a key on a prefix of a
		// column, id(5), merges the tombstones of keys that share it: red-team rt21a F8).
		if r[5] != "1" || r[6] != strconv.Itoa(len(rows)) || r[8] != "1" {
			sameColumns = false
		}
		if !strings.EqualFold(r[1], r[3]) || !strings.EqualFold(r[2], r[4]) {
			differ = append(differ, r[0]+" ("+r[1]+" in the table, "+orNone(r[3])+" in the tombstone table)")
			if r[3] != "" {
				fix = append(fix, "MODIFY "+keyColumnDef(dialect.KeyColumn{Name: r[0], Type: r[1], Collation: r[2]}, d.QuoteIdent))
			}
		}
	}
	if sameColumns && len(differ) == 0 {
		return nil, nil
	}
	tt := dialect.TableName{Schema: rows[0][7], Name: tomb}
	if !sameColumns {
		fix = nil // the key's columns changed: no statement converts them
	}
	var stmts []string
	if fix != nil {
		stmts = []string{"ALTER TABLE " + tt.Quote(d.QuoteIdent) + " " + strings.Join(fix, ", ")}
	}
	return []dialect.SideDoor{dialect.TombstoneKeyDoor(tt.String(), t.Table.String(), differ, stmts, false)}, nil
}

func orNone(s string) string {
	if s == "" {
		return "none"
	}
	return s
}
