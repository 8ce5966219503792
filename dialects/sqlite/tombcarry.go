package sqlite

import (
	"context"
	"regexp"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// A renamed table's tombstones (dialect.TombstoneCarrier, red-team rt31a F2).
//
// Trigger names are unique per schema, and ALTER TABLE … RENAME TO keeps a table's
// triggers under their names: after ALTER TABLE ledger RENAME TO ledger2, the five
// fencedsql_tomb*_ledger triggers sit on ledger2 and record into fencedsql_tomb_ledger.
// Installing the tombstone guard on ledger2 must not start from an empty
// fencedsql_tomb_ledger2, and installing it on a table created under the name ledger
// must not DROP TRIGGER IF EXISTS the old names, which would drop ledger2's triggers and
// with them the only record of its tombstones. So TombstoneCarryDDL:
//
//   - where a trigger of table's own tombstone names sits on another table, first
//     installs that table's own tombstone guard (dialect.TombstoneMovedDDL: its
//     primary key read from the catalog, table's token column), whose carry-over
//     below frees the names; a table without a primary key cannot keep them, and the
//     install is refused (dialect.ErrTombstoneMoved);
//   - after TombstoneUniqueDDL's statements, merges each tombstone table the
//     other-named tombstone triggers on table record into (read from their bodies,
//     else from their names) into table's own, keeping the greater token and date of a
//     key, then drops those triggers.
//
// The old name's tombstone table stays, and a table created under the old name shares
// it (CREATE TABLE IF NOT EXISTS): in a table swap (the twelve-step rebuild, an online
// schema change), which the catalog cannot tell from a rename followed by a new table,
// the new table is the one whose tombstones they are. A table that is new in fact
// inherits them: an over-refusal, purged with the retention.
//
// The statements are the Fix's, run in one transaction: no write of the table
// interleaves (SQLite has one writer). A tombstone table whose key columns are not
// table's fails its merge, and with it the Fix. TombstoneInstalledQuery reports the
// guard not installed while a tombstone trigger of another name is on table.

// tombTableRef finds, in a tombstone trigger's body folded by foldName (ASCII letters
// only, byte offsets kept: a regexp's (?i) would also match ſ for s), the tombstone
// table it records into or checks (unqualified there).
var tombTableRef = regexp.MustCompile(`(?:insert into|from) "(fencedsql_tomb_(?:[^"]|"")*)"`)

// tombTriggerTable returns the tombstone table a tombstone trigger named name with body
// records into: the one its body names, else its name's table's
// (fencedsql_tomb<kind>_<name> → fencedsql_tomb_<name>), "" when neither is known.
func tombTriggerTable(name, body string) string {
	if m := tombTableRef.FindStringSubmatchIndex(foldName(body)); m != nil {
		return strings.ReplaceAll(body[m[2]:m[3]], `""`, `"`)
	}
	for _, k := range tombTriggerKinds {
		if p := "fencedsql_tomb" + k + "_"; len(name) > len(p) && sameName(name[:len(p)], p) {
			return tombObject("", dialect.TableName{Name: name[len(p):]}).Name
		}
	}
	return ""
}

// TombstoneCarryDDL completes ddl, TombstoneUniqueDDL's statements for table (tokenCol
// its token column), with the install on the table that keeps triggers of table's
// names and the carry-over of table's tombstone triggers of another name (see above),
// or refuses with an error wrapping dialect.ErrTombstoneMoved.
func (d dialectImpl) TombstoneCarryDDL(ctx context.Context, query dialect.CatalogQuery, table dialect.TableName, key []dialect.KeyColumn, tokenCol string, ddl []string) ([]string, error) {
	if table.Schema == "main" {
		table.Schema = ""
	}
	rows, err := query(ctx, "SELECT type, name, tbl_name, coalesce(sql, '') FROM "+d.master(table.Schema)+
		" WHERE type IN ('trigger', 'table') AND name LIKE 'fencedsql\\_tomb%' ESCAPE '\\' ORDER BY name")
	if err != nil {
		return nil, err
	}
	lower := dialect.LowerASCII
	own := map[string]bool{}
	for _, k := range tombTriggerKinds {
		own[lower(tombObject(k, table).Name)] = true
	}
	exists := map[string]bool{} // tombstone tables, lower-cased
	var triggers []dialect.TombTrigger
	for _, r := range rows {
		if len(r) < 4 {
			continue
		}
		if r[0] == "table" {
			exists[lower(r[1])] = true
		} else {
			triggers = append(triggers, dialect.TombTrigger{Name: r[1], On: r[2], Records: tombTriggerTable(r[1], r[3])})
		}
	}
	into := tombObject("", table).Quote(d.QuoteIdent)
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
	}
	keyList := strings.Join(cols, ", ")
	list := keyList + ", fence_token, deleted_at"
	merge := func(t string) string {
		if !exists[lower(t)] {
			return ""
		}
		// WHERE true: SQLite's upsert after a SELECT needs it to parse ON CONFLICT.
		return "INSERT INTO " + into + " (" + list + ") SELECT " + list + " FROM " + dialect.TableName{Schema: table.Schema, Name: t}.Quote(d.QuoteIdent) +
			" WHERE true ON CONFLICT (" + keyList + ") DO UPDATE SET fence_token = max(fence_token, excluded.fence_token), deleted_at = max(deleted_at, excluded.deleted_at)"
	}
	drop := func(n string) string {
		return "DROP TRIGGER IF EXISTS " + dialect.TableName{Schema: table.Schema, Name: n}.Quote(d.QuoteIdent)
	}
	isOwn := func(n string) bool { return own[lower(n)] }
	return dialect.TombCarry(ctx, query, d, table, tokenCol, ddl, triggers, isOwn, tombObject("", table).Name, lower, merge, drop)
}

var _ dialect.TombstoneCarrier = dialectImpl{}
