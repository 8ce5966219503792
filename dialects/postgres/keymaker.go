package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// keyMakers finds the table's own row triggers that ownTriggers does not read — AFTER
// row triggers on any event, BEFORE row triggers on DELETE only — whose function may
// make a key of the table exist again (createsKey): a door of G9 (red-team rt48j F4,
// PostgreSQL's form). PostgreSQL fires a relation's AFTER row triggers of one event in
// the order of their names, all at the end of the statement, so a trigger named to
// sort before fencedsql_tombstone_delete (or _rekey) that INSERTs the deleted key back
// runs before the tombstone exists: the re-insert passes the tombstone check, the key
// is back at the token the trigger gives it (0), and a holder older than the deleter
// then updates it with no error. A BEFORE DELETE trigger of a multi-row DELETE can do
// the same for a key deleted earlier in the statement. Trigger names cannot rule it
// out (a quoted name sorts anywhere), so the body is judged, whatever its WHEN clause:
// a door when it holds an INSERT, MERGE, COPY or dynamic SQL statement naming the
// table (or one of its partitions or inheritance children: familyNames), or an UPDATE
// of it whose SET list assigns a primary-key column (a row moved onto the deleted
// key). An UPDATE of other columns (an updated_at touch, a counter of another row) is
// not: it makes no key exist that did not. Judged only for a table the tombstone guard
// covers (t.Tombstones: schema.Check's Fix installs it; or the table carries its
// fencedsql_tombstone_delete trigger, for the pool's lazy check): without it no
// deleted key is kept from coming back. The primary key is t.PrimaryKey, or the
// catalog's. Enabled
// or not (one ALTER TABLE … ENABLE TRIGGER switches it on); triggers cloned onto
// partitions are judged through their parent's. Not seen: a key made by a routine the
// body calls, or under a name built at run time. The relation's own tombstone function
// as this version installs it (stockTombstoneBody) is judged by what it writes, not by
// its words (red-team rt56a F1: a table named new). Fix: DROP TRIGGER, and do its work
// through the wrapper.
func (d dialectImpl) keyMakers(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `WITH RECURSIVE `+familySQL(1)+`
SELECT n.nspname::text, c.relname::text, tg.tgname::text, pn.nspname::text, p.proname::text,
  CASE WHEN COALESCE(p.prosrc, '') = '' THEN pg_catalog.pg_get_functiondef(p.oid) ELSE p.prosrc END,
  COALESCE((SELECT l.lanname::text FROM pg_catalog.pg_language l WHERE l.oid = p.prolang), ''),
  `+familyNamesSQL+`,
  EXISTS (SELECT 1 FROM pg_catalog.pg_trigger tt WHERE tt.tgrelid = pg_catalog.to_regclass($1) AND tt.tgname = 'fencedsql_tombstone_delete')::text,
  COALESCE((SELECT pg_catalog.string_agg(a.attname::text, pg_catalog.chr(1)) FROM pg_catalog.pg_index i
    JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum OPERATOR(pg_catalog.=) ANY (i.indkey)
    WHERE i.indrelid = pg_catalog.to_regclass($1) AND i.indisprimary), '')
FROM fam JOIN pg_catalog.pg_trigger tg ON tg.tgrelid = fam.oid JOIN pg_catalog.pg_class c ON c.oid = tg.tgrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_catalog.pg_proc p ON p.oid = tg.tgfoid JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace
WHERE NOT tg.tgisinternal AND tg.tgtype OPERATOR(pg_catalog.&) 1 = 1
  AND NOT (tg.tgtype OPERATOR(pg_catalog.&) 2 = 2 AND tg.tgtype OPERATOR(pg_catalog.&) 20 <> 0)
  AND (tg.tgrelid = pg_catalog.to_regclass($1) OR tg.tgparentid = 0)
ORDER BY 1, 2, 3`, regclass(t.Table))
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 10 || !t.Tombstones && r[8] != "true" {
			continue
		}
		key := t.PrimaryKey
		if len(key) == 0 {
			key = strings.Split(r[9], "\x01")
		}
		name, ok := createsKey(r[5], r[6], familyNames(t, r[7]), key)
		if !ok {
			continue
		}
		// The relation's own tombstone function, as installed, writes its tombstone
		// table only (stockbodies.go: a table named new or set is named by its words).
		rel := dialect.CatalogName(r[0], r[1])
		if wrote, stock, err := d.stockTombstoneBody(ctx, query, rel, r[6], r[5]); err != nil {
			return nil, err
		} else if stock {
			if name, ok = stockWrites(wrote, familyNames(t, r[7])); !ok {
				continue
			}
		}
		fn := dialect.CatalogName(r[3], r[4])
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: r[2] + " on " + rel.String(),
			Problem: "the row trigger " + r[2] + " on " + rel.String() + " runs " + fn.String() + "(), which may make a key of " + writtenName(t, name) +
				" exist again (an INSERT, MERGE, COPY or dynamic SQL naming it, or an UPDATE assigning its primary key): PostgreSQL runs a table's AFTER row triggers in the order of their names, so it may run before the tombstone guard records the key a DELETE (or a key-changing UPDATE) removed, and the key comes back at the token the trigger writes, which an older holder may then update; drop the trigger and do its work through the wrapper",
			Fix: []string{"DROP TRIGGER IF EXISTS " + d.QuoteIdent(r[2]) + " ON " + rel.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}

// createsKey reports whether the trigger function body src, in language lang, may make
// a key of one of names exist, and which name: an SQL or PL/pgSQL body by
// statementCreatesKey under each of bodyReadings' lexical rules, or by dynamic SQL
// (dynamicSQLWrites, escapeDynamicSQL: text the check does not read), or by dynamic SQL
// that may name the trigger's own relation without naming it (tgRelationDynamic); a
// body in another language when it mentions a name at all. key is the table's primary
// key.
func createsKey(src, lang string, names, key []string) (string, bool) {
	if (lang == "sql" || lang == "plpgsql") && tgRelationDynamic(src) {
		return names[0], true
	}
	for _, n := range names {
		switch lang {
		case "sql", "plpgsql":
			if dynamicSQLWrites(src, n) || escapeDynamicSQL(src) {
				return n, true
			}
			for _, syn := range bodyReadings(src) {
				if statementCreatesKey(src, syn, n, key) {
					return n, true
				}
			}
		default:
			if dialect.Mentions(src, n) {
				return n, true
			}
		}
	}
	return "", false
}

// tgRelationDynamic reports whether the PL/pgSQL body src runs dynamic SQL (EXECUTE)
// and reads one of the variables that name the relation the trigger fired on
// (TG_TABLE_NAME, TG_RELNAME, TG_RELID, TG_TABLE_SCHEMA): EXECUTE format('INSERT INTO
// %I.%I …', TG_TABLE_SCHEMA, TG_TABLE_NAME) writes the guarded table itself when the
// trigger is one of the table's, without its name in the text. A word test.
func tgRelationDynamic(src string) bool {
	if !dialect.Mentions(src, "execute") {
		return false
	}
	for _, v := range []string{"tg_table_name", "tg_relname", "tg_relid", "tg_table_schema"} {
		if dialect.Mentions(src, v) {
			return true
		}
	}
	return false
}

// keyWords are the statements that may add a row to a table: a statement holding one
// and naming the table counts (a word test, as dialect.WritesTable's: it errs on the
// side of yes).
var keyWords = map[string]bool{"INSERT": true, "MERGE": true, "COPY": true, "UPSERT": true, "REPLACE": true, "EXECUTE": true}

// statementCreatesKey reports whether one statement of src (the text between two
// semicolons), lexed by syn, names the table name and either holds one of keyWords or
// is an UPDATE whose SET list assigns a column of key (a target at the start of an
// item, or inside a parenthesized target list; a quoted name the lexer cannot decode
// counts as one). A body the lexer cannot read counts when it mentions name.
func statementCreatesKey(src string, syn dialect.Syntax, name string, key []string) bool {
	toks, err := dialect.LexDDL(src, syn)
	if err != nil {
		return dialect.Mentions(src, name)
	}
	isKey := func(tk dialect.DDLToken) bool {
		n, ok := tk.Name()
		if !ok {
			return tk.Kind == dialect.DDLQuoted
		}
		for _, k := range key {
			if strings.EqualFold(n, k) {
				return true
			}
		}
		return false
	}
	var creates, names, update, inSet, itemStart, targets, setsKey bool
	depth := 0
	for _, tk := range toks {
		if tk.Kind == dialect.DDLPunct && tk.Text == ";" {
			creates, names, update, inSet, itemStart, targets, setsKey, depth = false, false, false, false, false, false, false, 0
			continue
		}
		switch tk.Kind {
		case dialect.DDLString:
			names = names || dialect.Mentions(tk.Text, name)
		case dialect.DDLWord, dialect.DDLQuoted:
			if n, ok := tk.Name(); ok && strings.EqualFold(n, name) || !ok && tk.Kind == dialect.DDLQuoted {
				names = true
			}
		}
		switch {
		case tk.Kind == dialect.DDLWord && keyWords[strings.ToUpper(tk.Text)]:
			creates = true
		case tk.Is("UPDATE"):
			update, inSet = true, false
		case update && depth == 0 && tk.Is("SET"):
			inSet, itemStart = true, true
			continue
		case inSet && depth == 0 && (tk.Is("WHERE") || tk.Is("FROM") || tk.Is("RETURNING")):
			inSet = false
		case inSet && tk.Kind == dialect.DDLPunct && tk.Text == "(":
			targets = targets || itemStart && depth == 0
			depth++
		case inSet && tk.Kind == dialect.DDLPunct && tk.Text == ")":
			if depth--; depth <= 0 {
				depth, targets = 0, false
			}
		case inSet && depth == 0 && tk.Kind == dialect.DDLPunct && tk.Text == ",":
			itemStart = true
			continue
		case inSet && (tk.Kind == dialect.DDLWord || tk.Kind == dialect.DDLQuoted):
			if (depth == 0 && itemStart || targets && depth == 1) && isKey(tk) {
				setsKey = true
			}
		}
		itemStart = false
		if names && (creates || setsKey) {
			return true
		}
	}
	return false
}
