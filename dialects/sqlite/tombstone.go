package sqlite

import (
	"encoding/hex"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/internal/sqltext"
)

// TombstoneMessagePrefix starts the message of a refusal by the tombstone guard; the
// message goes on "<table>: NOT NULL constraint failed: <table>.<token column>", and
// Dialect's Classify reports it as a NOT NULL violation on the token column, which the
// wrapper reports as fencedsql.ErrFenced.
//
// Tombstones (dialect.Tombstoner, G9 in docs/design.md: no resurrection of a deleted
// row under an older token): TombstoneDDL creates, when it is missing, the table's own
// tombstone table in its schema (main, or the attached database the table is in),
// keyed by the table's primary key with the same declared types and collations (a
// TEXT COLLATE NOCASE key matches 'a' and 'A', as the table's key does),
//
//	CREATE TABLE IF NOT EXISTS fencedsql_tomb_<table> (<pk columns> NOT NULL,
//	    fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL,
//	    PRIMARY KEY (<pk columns>)) WITHOUT ROWID
//
// (deleted_at in Unix seconds), and five triggers per table, with the key and token
// columns compiled in:
//
//	fencedsql_tombdel_<table>  AFTER DELETE   records OLD's key and OLD.<token>,
//	                                           keeping the greater token
//	fencedsql_tombins_<table>  AFTER INSERT   WHEN the tombstone of NEW's key holds a
//	                                           greater token than NEW.<token>:
//	                                           SELECT RAISE(ABORT, '<message>')
//	fencedsql_tombkey_<table>  AFTER UPDATE   WHEN the key changed: records the key the
//	                                           row left, refuses the key it moved onto
//	                                           like an INSERT
//	fencedsql_tombrep_<table>  BEFORE INSERT  WHEN a row of NEW's key holds a greater
//	fencedsql_tombmov_<table>  BEFORE UPDATE  token than NEW.<token>, or a row of
//	                                           another key collides with NEW on the
//	                                           rowid or a unique index (the UPDATE's:
//	                                           and the key, the rowid or a unique
//	                                           column changed): records that row's
//	                                           key and token
//
// The last two close REPLACE: SQLite deletes the row a REPLACE (INSERT OR REPLACE,
// REPLACE, UPDATE OR REPLACE, from a connection outside the wrapper, which refuses the
// OR clauses) collides with without firing its delete triggers unless the connection
// set recursive_triggers, so neither the guard nor the DELETE trigger sees it; the
// tombstone recorded before the write makes the AFTER check refuse it, as it refuses
// the same key deleted first. Where the write does not delete that row — a plain
// INSERT fails on the key's UNIQUE constraint, which undoes the record; INSERT OR
// IGNORE, or an upsert's DO NOTHING, writes nothing and keeps it; an upsert's DO
// UPDATE updates the row — the record stays: a tombstone of a live key at a token
// its row already carries (or passed), which refuses nothing that key's UNIQUE
// constraint does not (a row's token never goes down under the guard). A REPLACE (or
// a plain write under a UNIQUE … ON CONFLICT REPLACE constraint) that collides on
// another UNIQUE index deletes a row of another key: the same triggers record that
// row's tombstone at the greater of its token and the write's (the deleter's, as a
// fenced DELETE stamps it before deleting: red-team rt29a F7), and the write goes on
// (TombstoneUniqueDDL; an index on an expression is reported by SideDoors instead).
// The REPLACE triggers name the unique indexes they were written for in their text
// (uniqueMarker), which TombstoneInstalledQuery compares with the catalog: a unique
// index created (or dropped) after the install reports the guard as not installed,
// and schema.Check's Fix re-creates the triggers. The whole-text comparison
// (guardTriggers) compares them with the text written for the indexes they name, so a
// stale guard is not taken for a forged one (the lazy check does not require the
// tombstone guard).
//
// The INSERT check is an AFTER trigger because only there is NEW's key the row's
// key: when SQLite chooses a rowid (an INTEGER PRIMARY KEY omitted, NULL, or an
// INSERT … DEFAULT VALUES), NEW.<key> reads -1 in a BEFORE trigger, and the rowid it
// then picks is max(rowid)+1, which is the key just deleted when that was the highest
// (the AUTOINCREMENT keyword prevents reuse; a plain INTEGER PRIMARY KEY does not).
// RAISE(ABORT) in an AFTER trigger undoes the whole statement, every row and trigger
// effect of it, whatever its OR clause (OR IGNORE/REPLACE/FAIL do not apply to a
// RAISE), and fails with SQLITE_CONSTRAINT_TRIGGER and a message of this package's
// own, which Classify maps. An upsert (INSERT … ON CONFLICT) that inserts fires it
// like an INSERT; one that takes its DO UPDATE branch is an UPDATE of an existing row
// (fenced by the row's token), and DO NOTHING on an existing row writes nothing. A
// stale INSERT of a key that exists fails on the key's UNIQUE constraint before the
// trigger runs. Writers are serialised, so no DELETE can commit while an INSERT of
// the same key waits. Every trigger's text holds tombVersion, which
// TombstoneInstalledQuery requires: a guard installed by an earlier version (a
// BEFORE INSERT check) is reported as not installed, and schema.Check's Fix replaces
// it. Trigger bodies name their tables unqualified, which SQLite resolves in the
// trigger's own schema (a TEMP table of the same name shadows nothing). Limits as for
// the guard: any connection can drop the triggers.
const TombstoneMessagePrefix = "fencedsql: tombstone on "

// tombVersion marks the text of every tombstone trigger of this version (a comment in
// its body, which sqlite_master keeps); TombstoneInstalledQuery reports triggers
// without it as not installed. v2: the INSERT check is an AFTER INSERT trigger; v3:
// a REPLACE of a newer row is refused (the rep and mov triggers); v4: the rows a
// write displaces through a unique index other than the primary key are recorded.
const tombVersion = "fencedsql tombstone guard v4"

// tombTriggerKinds are the kinds of the tombstone guard's triggers, fencedsql_tomb<kind>_<table>.
var tombTriggerKinds = []string{"del", "ins", "key", "rep", "mov"}

func tombObject(kind string, table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: "fencedsql_tomb" + kind + "_" + table.Name}
}

// PrimaryKeyQuery lists the primary key columns of table in key order: name, declared
// type, collation (of the primary key's index; "" for an INTEGER PRIMARY KEY), schema
// (main unless given), no equality operator, and whether the table keeps a rowid apart
// from its key (dialect.KeyColumn.Rowid: a rowid table whose key has an index of its
// own, i.e. is not the INTEGER PRIMARY KEY).
func (dialectImpl) PrimaryKeyQuery(table dialect.TableName) (query string, args []any) {
	schema := table.Schema
	if schema == "" {
		schema = "main"
	}
	return `SELECT ti.name, ti.type, COALESCE((SELECT x.coll FROM pragma_index_list(?1, ?2) il, pragma_index_xinfo(il.name, ?2) x WHERE il.origin = 'pk' AND x.name = ti.name), ''), ?2, '',
  EXISTS (SELECT 1 FROM pragma_table_list(?1) tl WHERE tl.schema = ?2 AND tl.wr = 0) AND EXISTS (SELECT 1 FROM pragma_index_list(?1, ?2) il WHERE il.origin = 'pk')
FROM pragma_table_info(?1, ?2) ti WHERE ti.pk > 0 ORDER BY ti.pk`, []any{table.Name, schema}
}

// TombstoneDDL returns the statements that create the tombstone table (if missing)
// and install table's tombstone triggers, for a table without unique indexes other
// than its primary key's (TombstoneUniqueDDL with none); run them in one transaction.
func (d dialectImpl) TombstoneDDL(table dialect.TableName, key []dialect.KeyColumn, tokenCol string) []string {
	return d.TombstoneUniqueDDL(table, key, nil, tokenCol)
}

// TombstoneUniqueDDL returns the statements that create the tombstone table (if
// missing) and install table's tombstone triggers (dialect.UniqueTombstoner), whose
// REPLACE triggers also record the rows a write displaces through unique, the table's
// unique indexes other than its primary key's (UniqueIndexesQuery); run them in one
// transaction.
//
// A row displaced through a unique index has another key than the write's: its
// tombstone is recorded at the greater of its token and the write's (the deleter's), and the write
// goes on (its own key is judged by the AFTER check as ever). The columns are compared
// each under the collation the index compares it under (the index's COLLATE clause, or
// the column's), and a NULL equals nothing, as in the index. An index on an expression
// is left out (reported by SideDoors, dialect.SideDoorUniqueExpression), and so is one
// holding every key column under the key's collation (a collision on it is one on the
// key). A partial index is compared without its WHERE clause, and the UPDATE trigger
// runs on every UPDATE of such a table (a change of the WHERE clause's columns alone
// can bring a row into the index): both over-approximate, so a live row that does not
// collide may get a tombstone at the greater of its token and the write's. That fails
// closed: while the row lives the key's own UNIQUE constraint refuses an INSERT of it
// anyway; once the row is deleted under a token below the write's, an INSERT of the key
// below the write's token is refused too — by a holder older than a token already
// granted. Every way the row leaves its key (a DELETE, a key-changing UPDATE, a
// REPLACE, all recorded) records a token at least as great as its own, since a row's
// token never goes down under the guard.
func (d dialectImpl) TombstoneUniqueDDL(table dialect.TableName, key []dialect.KeyColumn, unique []dialect.UniqueIndex, tokenCol string) []string {
	if table.Schema == "main" {
		table.Schema = ""
	}
	tomb := tombObject("", table).Quote(d.QuoteIdent)
	del := tombObject("del", table).Quote(d.QuoteIdent)
	ins := tombObject("ins", table).Quote(d.QuoteIdent)
	rekey := tombObject("key", table).Quote(d.QuoteIdent)
	rep := tombObject("rep", table).Quote(d.QuoteIdent)
	mov := tombObject("mov", table).Quote(d.QuoteIdent)
	tbl, tombIn := d.QuoteIdent(table.Name), d.QuoteIdent(tombObject("", dialect.TableName{Name: table.Name}).Name) // unqualified in trigger bodies
	tok := d.QuoteIdent(tokenCol)
	cols, defs := make([]string, len(key)), make([]string, len(key))
	// keyColl is each key column's COLLATE clause: the tombstone table's column
	// carries it, and so does every comparison of a key the triggers make outside that
	// table: the key's index may compare under another collation than its column's
	// (PRIMARY KEY (name COLLATE BINARY) on a NOCASE column: 'alice' and 'Alice' are
	// two keys), and SQLite compares two column values under the left one's (red-team
	// rt23b F1).
	keyColl := map[string]string{}
	for i, k := range key {
		cols[i] = d.QuoteIdent(k.Name)
		if k.Collation != "" {
			keyColl[cols[i]] = " COLLATE " + d.QuoteIdent(k.Collation)
		}
		defs[i] = cols[i] + " " + k.Type + keyColl[cols[i]] + " NOT NULL"
	}
	list := strings.Join(cols, ", ")
	each := func(sep string, f func(c string) string) string { return sqltext.Each(cols, sep, f) }
	moved := each(" OR ", func(c string) string { return "OLD." + c + " IS NOT NEW." + c + keyColl[c] })
	// record writes the tombstone of OLD's key; a NULL in the key (SQLite lets a rowid
	// table's non-integer key hold NULL) is no key a write can take again: none.
	record := func(token string) string {
		return "  INSERT INTO " + tombIn + " (" + list + ", fence_token, deleted_at) SELECT " + each(", ", func(c string) string { return "OLD." + c }) + ", " + token + ", " + sqliteNow +
			" WHERE " + each(" AND ", func(c string) string { return "OLD." + c + " IS NOT NULL" }) + "\n" +
			"  ON CONFLICT (" + list + ") DO UPDATE SET fence_token = max(fence_token, excluded.fence_token), deleted_at = excluded.deleted_at;\n"
	}
	newer := "EXISTS (SELECT 1 FROM " + tombIn + " t WHERE " + each(" AND ", func(c string) string { return "t." + c + " = NEW." + c + keyColl[c] }) + " AND t.fence_token > NEW." + tok + ")"
	msg := literal(TombstoneMessagePrefix + table.Name + ": NOT NULL constraint failed: " + table.Name + "." + tokenCol)
	begin := "BEGIN\n  /* " + tombVersion + " */\n"
	rowidKey := len(key) > 0 && key[0].Rowid
	// displaced is the row of a newer token that holds NEW's key (compared under the
	// key's own collation, as the key's index compares): the row a REPLACE deletes
	// without its delete trigger. A tombstone of it, written before the write, makes
	// the AFTER check refuse the write as it refuses the same key deleted first.
	// A NULL token in NEW is the lowest (a REPLACE turns it into the column's default).
	// A table with a rowid apart from its key (dialect.KeyColumn.Rowid) loses a row of
	// another key to a write that names its rowid, and any table a row of another key
	// to a write that collides with it on a unique index: that row's tombstone is
	// recorded too, at the greater of its token and NEW's (its key not NULL:
	// such a key has no tombstone). NEW's key is compared with coalesce(…, 0): a NULL
	// in it (a rowid table's key) equals no row's.
	sameKey := each(" AND ", func(c string) string { return "o." + c + " = NEW." + c + keyColl[c] })
	otherKey := "NOT coalesce(" + sameKey + ", 0)"
	keyNotNull := each(" AND ", func(c string) string { return "o." + c + " IS NOT NULL" })
	// self leaves the row an UPDATE writes out of the rows it displaces (by rowid
	// where the table has one apart from its key; else by its key, never NULL there).
	self := " AND o.rowid IS NOT OLD.rowid"
	if !rowidKey {
		self = " AND NOT (" + each(" AND ", func(c string) string { return "o." + c + " = OLD." + c + keyColl[c] }) + ")"
	}
	uniqueTerms, uniqueChanged, partial := d.uniqueTerms(key, unique)
	// displacedWhere is one WHERE clause per way a row is displaced (the key, the
	// rowid, each unique index), each searched on its own (UNION ALL): SQLite (3.54)
	// does not search the indexes of an OR whose terms carry a COLLATE clause, and
	// scanned the table on every write.
	displacedWhere := func(update bool) []string {
		w := []string{sameKey + " AND (NEW." + tok + " IS NULL OR o." + tok + " > NEW." + tok + ")"}
		if rowidKey {
			rowid := "o.rowid = NEW.rowid"
			if update {
				rowid += self
			}
			w = append(w, rowid+" AND "+keyNotNull+" AND "+otherKey)
		}
		for _, u := range uniqueTerms {
			u += " AND " + otherKey + " AND " + keyNotNull
			if update {
				u += self
			}
			w = append(w, u)
		}
		return w
	}
	displaced := func(update bool, cols string) string {
		var parts []string
		for _, w := range displacedWhere(update) {
			parts = append(parts, "SELECT "+cols+" FROM "+tbl+" o WHERE "+w)
		}
		return strings.Join(parts, " UNION ALL ")
	}
	recordDisplaced := func(update bool) string {
		return "  INSERT INTO " + tombIn + " (" + list + ", fence_token, deleted_at) " + displaced(update, each(", ", func(c string) string { return "o." + c })+", max(coalesce(o."+tok+", 0), coalesce(NEW."+tok+", 0)), "+sqliteNow) + "\n" +
			"  ON CONFLICT (" + list + ") DO UPDATE SET fence_token = max(fence_token, excluded.fence_token), deleted_at = excluded.deleted_at;\n"
	}
	// movWhen: the UPDATE trigger runs when the write may collide: its key, its rowid
	// or a unique index's column changed; on every UPDATE where a partial unique index
	// may take the row in by its WHERE clause.
	movWhen := "WHEN (" + moved
	if rowidKey {
		movWhen += " OR OLD.rowid IS NOT NEW.rowid"
	}
	movWhen += uniqueChanged + ") AND "
	if partial {
		movWhen = "WHEN "
	}
	return []string{
		"CREATE TABLE IF NOT EXISTS " + tomb + " (" + strings.Join(defs, ", ") + ", fence_token INTEGER NOT NULL, deleted_at REAL NOT NULL, PRIMARY KEY (" + list + ")) WITHOUT ROWID",
		"DROP TRIGGER IF EXISTS " + del,
		"CREATE TRIGGER " + del + " AFTER DELETE ON " + tbl + " FOR EACH ROW\n" + begin + record("coalesce(OLD."+tok+", 0)") + "END",
		"DROP TRIGGER IF EXISTS " + ins,
		// AFTER, not BEFORE: NEW's key is the stored one only there (a rowid SQLite
		// chooses reads -1 in a BEFORE trigger).
		"CREATE TRIGGER " + ins + " AFTER INSERT ON " + tbl + " FOR EACH ROW\n" +
			"WHEN NEW." + tok + " IS NOT NULL AND " + newer + "\n" +
			begin + "  SELECT RAISE(ABORT, " + msg + ");\nEND",
		"DROP TRIGGER IF EXISTS " + rekey,
		"CREATE TRIGGER " + rekey + " AFTER UPDATE ON " + tbl + " FOR EACH ROW\n" +
			"WHEN " + moved + "\n" + begin +
			record("max(coalesce(OLD."+tok+", 0), coalesce(NEW."+tok+", 0))") +
			"  SELECT RAISE(ABORT, " + msg + ") WHERE NEW." + tok + " IS NULL OR " + newer + ";\nEND",
		"DROP TRIGGER IF EXISTS " + rep,
		"CREATE TRIGGER " + rep + " BEFORE INSERT ON " + tbl + " FOR EACH ROW\n" +
			"WHEN EXISTS (" + displaced(false, "1") + ")\n" + begin + uniqueMarker(unique) + recordDisplaced(false) + "END",
		"DROP TRIGGER IF EXISTS " + mov,
		"CREATE TRIGGER " + mov + " BEFORE UPDATE ON " + tbl + " FOR EACH ROW\n" +
			movWhen + "EXISTS (" + displaced(true, "1") + ")\n" + begin + uniqueMarker(unique) + recordDisplaced(true) + "END",
	}
}

// uniqueMarkerPrefix starts the comment in the REPLACE triggers' text that names the
// unique indexes they were written for (uniqueMarker).
const uniqueMarkerPrefix = "/* fencedsql unique indexes ["

// uniqueMarker is the comment line of the REPLACE triggers naming unique, the unique
// indexes (as UniqueIndexesQuery lists them, expressions included) they were written
// for: the rows of UniqueIndexesQuery (name, column, collation, partial 0 or 1; tabs
// between, newlines between rows) in hexadecimal, which no name can break out of.
// TombstoneInstalledQuery computes the same text from the catalog (uniqueSignature),
// so a unique index created or dropped since reports the guard as not installed; the
// whole-text comparison (guardTriggers) reads it back (parseUniqueMarker) to compare
// the triggers with the text written for the indexes they name.
func uniqueMarker(unique []dialect.UniqueIndex) string {
	var rows []string
	for _, u := range unique {
		partial := "0"
		if u.Partial {
			partial = "1"
		}
		for _, c := range u.Columns {
			rows = append(rows, u.Name+"\t"+c.Name+"\t"+c.Collation+"\t"+partial)
		}
	}
	return "  " + uniqueMarkerPrefix + strings.ToUpper(hex.EncodeToString([]byte(strings.Join(rows, "\n")))) + "] */\n"
}

// parseUniqueMarker reads back the unique indexes a REPLACE trigger's text names
// (uniqueMarker); ok is false when it names none readable.
func parseUniqueMarker(sql string) (unique []dialect.UniqueIndex, ok bool) {
	_, rest, found := strings.Cut(sql, uniqueMarkerPrefix)
	if !found {
		return nil, false
	}
	h, _, found := strings.Cut(rest, "] */")
	if !found {
		return nil, false
	}
	b, err := hex.DecodeString(h)
	if err != nil {
		return nil, false
	}
	if len(b) == 0 {
		return nil, true
	}
	for _, row := range strings.Split(string(b), "\n") {
		f := strings.Split(row, "\t")
		if len(f) != 4 || f[0] == "" {
			return nil, false
		}
		if len(unique) == 0 || unique[len(unique)-1].Name != f[0] {
			unique = append(unique, dialect.UniqueIndex{Name: f[0], Partial: f[3] == "1"})
		}
		last := &unique[len(unique)-1]
		last.Columns = append(last.Columns, dialect.KeyColumn{Name: f[1], Collation: f[2]})
	}
	return unique, true
}

// uniqueSignature is an SQL expression that yields uniqueMarker's hexadecimal text for
// the unique indexes of the table named ?9 in the schema named ?10 (as
// TombstoneInstalledQuery binds them), read from the catalog as UniqueIndexesQuery
// reads them.
const uniqueSignature = `(SELECT hex(coalesce(group_concat(r, char(10)), '')) FROM (SELECT il.name || char(9) || COALESCE(x.name, '') || char(9) || COALESCE(x.coll, '') || char(9) || il.partial AS r
  FROM pragma_index_list(?9, ?10) il, pragma_index_xinfo(il.name, ?10) x WHERE il."unique" = 1 AND il.origin IN ('u', 'c') AND x.key = 1 ORDER BY il.name, x.seqno))`

// uniqueTerms returns, for the unique indexes of unique the REPLACE triggers compare
// (TombstoneUniqueDDL: not on an expression, not holding the key), the condition that
// a row o collides with NEW on each of them (none: none), the OR terms of a change of
// one of their columns (" OR OLD.c IS NOT NEW.c" each; a change under BINARY, which
// every change under another collation is), and whether one of them is partial.
func (d dialectImpl) uniqueTerms(key []dialect.KeyColumn, unique []dialect.UniqueIndex) (collide []string, changed string, partial bool) {
	coll := func(c string) string {
		if c == "" {
			return "BINARY"
		}
		return c
	}
	seen := map[string]bool{}
	for _, u := range unique {
		if len(u.Columns) == 0 || u.Expression() {
			continue
		}
		holdsKey := len(key) > 0
		for _, k := range key {
			found := false
			for _, c := range u.Columns {
				found = found || sameName(c.Name, k.Name) && sameName(coll(c.Collation), coll(k.Collation))
			}
			holdsKey = holdsKey && found
		}
		if holdsKey {
			continue
		}
		conds := make([]string, len(u.Columns))
		for i, c := range u.Columns {
			q := d.QuoteIdent(c.Name)
			conds[i] = "o." + q + " = NEW." + q
			if c.Collation != "" {
				conds[i] += " COLLATE " + d.QuoteIdent(c.Collation)
			}
			if !seen[foldName(c.Name)] {
				seen[foldName(c.Name)] = true
				changed += " OR OLD." + q + " IS NOT NEW." + q
			}
		}
		collide = append(collide, strings.Join(conds, " AND "))
		partial = partial || u.Partial
	}
	return collide, changed, partial
}

// sqliteNow is the current time in Unix seconds, with fractions.
const sqliteNow = "((julianday('now') - 2440587.5) * 86400.0)"

// UntombstoneDDL drops table's three tombstone triggers, then its tombstone table: a
// tombstone table without the triggers is the evidence of a guard a table swap lost
// (lostGuard), which the lazy check refuses.
func (d dialectImpl) UntombstoneDDL(table dialect.TableName) []string {
	var ddl []string
	for _, kind := range tombTriggerKinds {
		ddl = append(ddl, "DROP TRIGGER IF EXISTS "+tombObject(kind, table).Quote(d.QuoteIdent))
	}
	return append(ddl, "DROP TABLE IF EXISTS "+tombObject("", table).Quote(d.QuoteIdent))
}

// TombstoneInstalledQuery yields 1 when the five tombstone triggers of this version
// (their text holds tombVersion) and the tombstone table exist, and the REPLACE
// triggers were written for the table's unique indexes as they are now (their
// uniqueMarker is the catalog's, uniqueSignature); triggers installed by an earlier
// version, or before a unique index was created or dropped, are reported as not
// installed, so schema.Check's Fix replaces them. So is a guard beside a tombstone
// trigger of another name on the table (one a rename kept, recording into the old
// name's tombstone table: TombstoneCarryDDL carries its tombstones over and drops it,
// red-team rt31a F2).
func (d dialectImpl) TombstoneInstalledQuery(table dialect.TableName) (query string, args []any) {
	master := "sqlite_master"
	schema := "main"
	if table.Schema != "" {
		master = d.QuoteIdent(table.Schema) + ".sqlite_master"
		schema = table.Schema
	}
	return "SELECT CASE WHEN COUNT(*) = 6 AND NOT EXISTS (SELECT 1 FROM " + master + " o WHERE o.type = 'trigger' AND o.tbl_name = ?6 COLLATE NOCASE AND o.name LIKE 'fencedsql\\_tomb___\\_%' ESCAPE '\\' " +
			"AND o.name NOT IN (?1 COLLATE NOCASE, ?2 COLLATE NOCASE, ?3 COLLATE NOCASE, ?4 COLLATE NOCASE, ?5 COLLATE NOCASE)) THEN 1 ELSE 0 END FROM " + master + " WHERE (type = 'trigger' AND tbl_name = ?6 COLLATE NOCASE AND instr(sql, ?7) > 0 AND (" +
			"name IN (?1 COLLATE NOCASE, ?2 COLLATE NOCASE, ?3 COLLATE NOCASE) OR name IN (?4 COLLATE NOCASE, ?5 COLLATE NOCASE) AND instr(sql, ?11 || " + uniqueSignature + " || '] */') > 0)) " +
			"OR (type = 'table' AND name = ?8 COLLATE NOCASE)",
		[]any{tombObject("del", table).Name, tombObject("ins", table).Name, tombObject("key", table).Name, tombObject("rep", table).Name, tombObject("mov", table).Name,
			table.Name, "/* " + tombVersion + " */", tombObject("", table).Name, table.Name, schema, uniqueMarkerPrefix}
}

// PurgeTombstonesQuery deletes table's tombstones older than olderThan (by SQLite's clock).
func (d dialectImpl) PurgeTombstonesQuery(table dialect.TableName, olderThan time.Duration) (query string, args []any) {
	return "DELETE FROM " + tombObject("", table).Quote(d.QuoteIdent) + " WHERE deleted_at < " + sqliteNow + " - ?",
		[]any{olderThan.Seconds()}
}

var _ dialect.Tombstoner = dialectImpl{}

// UniqueIndexesQuery lists the columns of table's unique indexes other than the
// primary key's (dialect.UniqueTombstoner): of a UNIQUE constraint (origin 'u') or a
// CREATE UNIQUE INDEX (origin 'c'), in index name and column order, each with the
// collation the index compares it under (pragma_index_xinfo) and whether the index is
// partial; a column of an expression reads "".
func (dialectImpl) UniqueIndexesQuery(table dialect.TableName) (query string, args []any) {
	schema := table.Schema
	if schema == "" {
		schema = "main"
	}
	return `SELECT il.name, COALESCE(x.name, ''), COALESCE(x.coll, ''), il.partial FROM pragma_index_list(?1, ?2) il, pragma_index_xinfo(il.name, ?2) x
WHERE il."unique" = 1 AND il.origin IN ('u', 'c') AND x.key = 1 ORDER BY il.name, x.seqno`, []any{table.Name, schema}
}

var _ dialect.UniqueTombstoner = dialectImpl{}

// UniqueKeysQuery lists the columns of table's unique indexes other than the primary
// key's (UNIQUE constraints and CREATE UNIQUE INDEX; dialect.UniqueKeyFinder); an
// expression reads "(expression)".
func (dialectImpl) UniqueKeysQuery(table dialect.TableName) (query string, args []any) {
	schema := table.Schema
	if schema == "" {
		schema = "main"
	}
	return `SELECT il.name, COALESCE(ii.name, '(expression)') FROM pragma_index_list(?1, ?2) il, pragma_index_info(il.name, ?2) ii
WHERE il."unique" = 1 AND il.origin <> 'pk' ORDER BY il.name, ii.seqno`, []any{table.Name, schema}
}

var _ dialect.UniqueKeyFinder = dialectImpl{}

// TombstoneTablesQuery lists the tombstone tables of the main database
// (dialect.TombstoneLister).
func (dialectImpl) TombstoneTablesQuery() string {
	return `SELECT '', name FROM sqlite_master WHERE type = 'table' AND name LIKE 'fencedsql\_tomb\_%' ESCAPE '\'`
}

var _ dialect.TombstoneLister = dialectImpl{}
