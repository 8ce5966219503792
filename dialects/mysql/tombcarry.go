package mysql

import (
	"context"
	"regexp"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// A renamed table's tombstones (dialect.TombstoneCarrier, red-team rt31a F1).
//
// Trigger names are unique per database, and RENAME TABLE keeps a table's triggers
// under their names: after RENAME TABLE ledger TO ledger2, the fencedsql_tomb*_ledger
// triggers sit on ledger2 and record into fencedsql_tomb_ledger. Installing the
// tombstone guard on ledger2 must not start from an empty fencedsql_tomb_ledger2, and
// installing it on a table created under the name ledger must not DROP TRIGGER IF
// EXISTS the old names, which would drop ledger2's triggers and with them the only
// record of its tombstones. So TombstoneCarryDDL:
//
//   - where a trigger of table's own tombstone names sits on another table, first
//     installs that table's own tombstone guard (dialect.TombstoneMovedDDL: its
//     primary key read from the catalog, table's token column), whose carry-over
//     below frees the names; a table without a primary key cannot keep them, and the
//     install is refused (dialect.ErrTombstoneMoved);
//   - after TombstoneDDL's statements (table's own triggers in place: CREATE TRIGGER
//     waits for every transaction that used the table to end, so every DELETE from then
//     on records into table's own tombstone table as well), merges each tombstone table
//     the other-named tombstone triggers on table record into (read from their bodies:
//     INSERT INTO / FROM `fencedsql_tomb_…`) into table's own, keeping the greater token
//     and date of a key (INSERT … SELECT reads the latest committed tombstones), then
//     drops those triggers.
//
// The old name's tombstone table stays, and a table created under the old name shares
// it (CREATE TABLE IF NOT EXISTS): in a table swap (an online schema change renames
// the table away and a copy into its place), which the catalog cannot tell from a
// rename followed by a new table, the new table is the one whose tombstones they are.
// A table that is new in fact inherits them: an over-refusal (an INSERT of a key the
// old table deleted, under a token below the deleter's), purged with the retention.
//
// A tombstone table whose key columns are not table's fails its merge, and the
// statements after it do not run: the old triggers stay (and go on refusing), and
// TombstoneInstalledQuery reports the guard not installed while they are there.

// tombKinds are the kinds of the tombstone triggers, fencedsql_tomb<kind>_<table>, in
// the order UntombstoneDDL drops them (the REPLACE mark's last).
var tombKinds = []string{"del", "ins", "key", "rep"}

// tombTableRef finds, in a tombstone trigger's body, the tombstone table it records
// into or checks: the first `fencedsql_tomb_…` after INSERT INTO or FROM, with the
// database qualifier the body gives it (dropped: tombstone tables live in the
// trigger's database).
var tombTableRef = regexp.MustCompile("(?:INSERT INTO|FROM) (?:`(?:[^`]|``)+`\\.)?`(fencedsql_tomb_(?:[^`]|``)*)`")

// tombTriggerTable returns the tombstone table a tombstone trigger named name with body
// records into: the one its body names, else the one its name's table has
// (fencedsql_tomb<kind>_<name> → fencedsql_tomb_<name>), "" when neither is known.
func tombTriggerTable(name, body string) string {
	if m := tombTableRef.FindStringSubmatch(body); m != nil {
		return strings.ReplaceAll(m[1], "``", "`")
	}
	for _, k := range tombKinds {
		p := "fencedsql_tomb" + k + "_"
		if strings.HasPrefix(strings.ToLower(name), p) && len([]rune(name)) < maxIdentLen {
			return tombName("", name[len(p):])
		}
	}
	return ""
}

// TombstoneCarryDDL completes ddl, TombstoneDDL's statements for table (tokenCol its
// token column), with the install on the table that keeps triggers of table's names
// and the carry-over of table's tombstone triggers of another name (see above), or
// refuses with an error wrapping dialect.ErrTombstoneMoved.
func (d dialectImpl) TombstoneCarryDDL(ctx context.Context, query dialect.CatalogQuery, table dialect.TableName, key []dialect.KeyColumn, tokenCol string, ddl []string) ([]string, error) {
	rows, err := query(ctx, "SELECT TRIGGER_NAME, EVENT_OBJECT_TABLE, ACTION_STATEMENT FROM information_schema.TRIGGERS "+
		"WHERE TRIGGER_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND "+exactDatabase("TRIGGER_SCHEMA", table.Schema)+" AND "+tombTriggerNameLike("TRIGGER_NAME")+" "+
		"ORDER BY TRIGGER_NAME", table.Schema)
	if err != nil {
		return nil, err
	}
	tables, err := query(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND TABLE_NAME LIKE 'fencedsql\\_tomb\\_%'", table.Schema)
	if err != nil {
		return nil, err
	}
	exists := map[string]bool{}
	for _, r := range tables {
		if len(r) > 0 {
			exists[r[0]] = true
		}
	}
	own := map[string]bool{}
	for _, k := range tombKinds {
		own[strings.ToLower(tombName(k, table.Name))] = true
	}
	var triggers []dialect.TombTrigger
	for _, r := range rows {
		if len(r) >= 3 {
			triggers = append(triggers, dialect.TombTrigger{Name: r[0], On: r[1], Records: tombTriggerTable(r[0], r[2])})
		}
	}
	into := tombTable(table).Quote(d.QuoteIdent)
	cols := make([]string, len(key))
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
	}
	list := strings.Join(cols, ", ") + ", fence_token, deleted_at"
	merge := func(t string) string {
		if !exists[t] {
			return ""
		}
		return "INSERT INTO " + into + " (" + list + ") SELECT " + list + " FROM " + dialect.TableName{Schema: table.Schema, Name: t}.Quote(d.QuoteIdent) +
			" ON DUPLICATE KEY UPDATE fence_token = GREATEST(" + into + ".fence_token, VALUES(fence_token)), deleted_at = GREATEST(" + into + ".deleted_at, VALUES(deleted_at))"
	}
	drop := func(n string) string {
		return "DROP TRIGGER IF EXISTS " + dialect.TableName{Schema: table.Schema, Name: n}.Quote(d.QuoteIdent)
	}
	isOwn := func(n string) bool { return own[strings.ToLower(n)] }
	exact := func(s string) string { return s }
	return dialect.TombCarry(ctx, query, d, table, tokenCol, ddl, triggers, isOwn, tombTable(table).Name, exact, merge, drop)
}

var _ dialect.TombstoneCarrier = dialectImpl{}
