package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The library's own guard objects of another table are not doors of a table named
// like one of their words (red-team rt56a F1). The word test (bodyWrites,
// dialect.WritesTable) counts a statement that holds a write word and any word equal
// to the table's name, and the tombstone guard's triggers (INSERT INTO … VALUES
// (OLD.…) ON DUPLICATE KEY UPDATE … = GREATEST(…, VALUES(…)); IF EXISTS (SELECT 1
// FROM … t WHERE … NEW.…) THEN SIGNAL SQLSTATE … SET MESSAGE_TEXT …) and absence
// recorder of every guarded table hold a dozen such words: a guarded table named key,
// set, values, old, x … was refused on every write, and its -apply dropped the other
// table's tombstone triggers (their door's Fix). A trigger or recorder that is, after
// the normalisation guardTriggers and ownRecorder apply, exactly the text this
// version installs (the tombstone triggers also as the previous REPLACE mark version
// wrote them, mark.go) for the table it belongs to — that table's primary key and columns
// read from the catalog, never out of the body — writes that table's tombstone table
// and nothing else (the guard's own triggers and the REPLACE mark's write no table):
// it is judged by that (stockWrites), not by the word test. Anything else — a
// changed body, a user's trigger or routine writing a table named key, a tombstone
// guard moved with a renamed table — is judged by the word test as before.

// stockWrites reports whether a stock guard object writing only the tables wrote
// writes the table name (in any case: errs on the side of yes).
func stockWrites(wrote []dialect.TableName, name string) bool {
	for _, w := range wrote {
		if strings.EqualFold(w.Name, name) {
			return true
		}
	}
	return false
}

// stockTrigger reports whether the trigger of otherTriggers' row r (TRIGGER_SCHEMA,
// TRIGGER_NAME, EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE, ACTION_STATEMENT) is one the
// guard or the tombstone guard installs on its table, as this version writes it for
// that table's primary key and one of its columns as the token column (and, for the
// guard's, another as the version column) — the tombstone guard's also as the
// previous REPLACE mark version wrote it (markVersion-1, whose texts write the same
// tables) — and returns what it writes: the tombstone
// guard's DELETE and key-change triggers write the table's tombstone table, the others
// nothing. Two catalog queries (the table's columns and primary key), run only for a
// trigger named as the guards name that table's.
func (d dialectImpl) stockTrigger(ctx context.Context, query dialect.CatalogQuery, r []string) ([]dialect.TableName, bool, error) {
	if len(r) < 5 || strings.TrimSpace(r[4]) == "" {
		return nil, false, nil
	}
	rel := dialect.TableName{Schema: r[2], Name: r[3]}
	if name, _, ok := guardTriggerTable(r[1], rel.Name); !ok || name != rel.Name {
		return nil, false, nil
	}
	_, key, err := dialect.PrimaryKeyColumns(ctx, query, d, rel)
	if err != nil {
		return nil, false, err
	}
	rows, err := query(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? ORDER BY ORDINAL_POSITION", rel.Schema, rel.Name)
	if err != nil {
		return nil, false, err
	}
	var cols, pk []string
	for _, row := range rows {
		if len(row) == 1 {
			cols = append(cols, row[0])
		}
	}
	for _, k := range key {
		pk = append(pk, k.Name)
	}
	lower := strings.ToLower(r[1])
	versions := []string{""}
	if strings.HasPrefix(lower, "fencedsql_guard_") || strings.HasPrefix(lower, "fencedsql_floor_") {
		versions = cols
	}
	got := strings.TrimSpace(strings.ReplaceAll(r[4], d.QuoteIdent(rel.Schema)+".", ""))
	for _, tok := range cols {
		for _, ver := range versions {
			if ver == tok {
				continue
			}
			for _, mark := range []int{markVersion, markVersion - 1} {
				g, ok := d.ownTriggerBodies(mark, dialect.SideDoorTable{Table: rel, TokenColumn: tok, VersionColumn: ver, PrimaryKey: pk}, rel.Name)[lower]
				fold := append([]string{tok, ver}, pk...)
				if !ok || foldColumns(got, fold) != foldColumns(strings.TrimSpace(g.body), fold) {
					continue
				}
				if strings.HasPrefix(lower, "fencedsql_tombdel_") || strings.HasPrefix(lower, "fencedsql_tombkey_") {
					return []dialect.TableName{tombTable(rel)}, true, nil
				}
				return nil, true, nil
			}
		}
	}
	return nil, false, nil
}

// stockRecorder reports whether the routine of routines' row r (schema, name, type,
// definition, in the table's database, comment, SQL SECURITY, sql_mode) is the
// absence recorder of the table its name is made of (recorderTable), as
// ownRecorder judges it whole for the token column its refusal names, and returns
// what it writes: that table's tombstone table.
func (d dialectImpl) stockRecorder(ctx context.Context, query dialect.CatalogQuery, r []string) ([]dialect.TableName, bool, error) {
	const prefix = "fencedsql_tombclaim_"
	if len(r) < 8 || !strings.EqualFold(r[2], "PROCEDURE") || !strings.HasPrefix(r[1], prefix) {
		return nil, false, nil
	}
	rel, ok, err := recorderTable(ctx, query, r[0], r[1])
	if err != nil || !ok {
		return nil, false, err
	}
	msg, ok := literalAfter(r[3], "SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = ")
	tok, found := strings.CutPrefix(msg, "Column '")
	tok, suffix := strings.CutSuffix(tok, "' cannot be null")
	if !ok || !found || !suffix || tok == "" {
		return nil, false, nil
	}
	own, _, err := d.ownRecorder(ctx, query, dialect.SideDoorTable{Table: rel, TokenColumn: tok}, r)
	if err != nil || !own {
		return nil, false, err
	}
	return []dialect.TableName{tombTable(rel)}, true, nil
}

// recorderTable returns the table of database db whose recorder (absenceProc) is
// named proc: the one table of db named as proc after its prefix, or, for a name of
// the identifier limit (which may be cut and hashed: tombName), starting with its cut
// part, whose recorder's name is proc (one catalog query). ok is false when there is
// none, or more than one.
func recorderTable(ctx context.Context, query dialect.CatalogQuery, db, proc string) (dialect.TableName, bool, error) {
	rest := []rune(proc[len("fencedsql_tombclaim_"):])
	esc := strings.NewReplacer("!", "!!", "%", "!%", "_", "!_")
	like := esc.Replace(string(rest))
	if n := len(hashSuffix("")); len([]rune(proc)) == maxIdentLen && len(rest) > n {
		like = esc.Replace(string(rest[:len(rest)-n])) + "%"
	}
	rows, err := query(ctx, "SELECT TABLE_NAME FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME LIKE ? ESCAPE '!'", db, like)
	if err != nil {
		return dialect.TableName{}, false, err
	}
	var found []string
	for _, row := range rows {
		if len(row) == 1 && absenceProc(row[0]) == proc {
			found = append(found, row[0])
		}
	}
	if len(found) != 1 {
		return dialect.TableName{}, false, nil
	}
	return dialect.TableName{Schema: db, Name: found[0]}, true, nil
}

// literalAfter returns the content of the string literal (literal's: ” and \\
// escapes) that follows marker in src, ok false when there is none. Only a candidate:
// the caller compares the whole text it regenerates with it.
func literalAfter(src, marker string) (string, bool) {
	i := strings.Index(src, marker)
	if i < 0 {
		return "", false
	}
	rest := src[i+len(marker):]
	if !strings.HasPrefix(rest, "'") {
		return "", false
	}
	var b strings.Builder
	for j := 1; j < len(rest); j++ {
		switch c := rest[j]; {
		case c == '\\' && j+1 < len(rest):
			b.WriteByte(rest[j+1])
			j++
		case c == '\'' && j+1 < len(rest) && rest[j+1] == '\'':
			b.WriteByte('\'')
			j++
		case c == '\'':
			return b.String(), true
		default:
			b.WriteByte(c)
		}
	}
	return "", false
}
