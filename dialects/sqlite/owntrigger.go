package sqlite

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ownTriggers finds the table's own triggers, of any timing and event, other than
// those carrying the name of one of the guard's BEFORE triggers (guardTriggers compares
// their whole text; any other name, fencedsql_… and the tombstone guard's AFTER
// triggers' names too, is judged here by its text), that may undo the fence of a
// statement on the table or skip one of the guards' triggers (ownTriggerJudged):
//
//   - any trigger whose WHEN clause or body uses RAISE(IGNORE): it abandons the rest
//     of the statement and every trigger of it not yet run while the row changes made
//     so far stay. SQLite runs a table's triggers newest first, so a trigger created
//     after the guards (or re-created since: a migration, or the guards' own Fix
//     re-creating them makes the order the other way round) runs before the tombstone
//     guard's AFTER triggers and abandons them: a DELETE records no tombstone, a stale
//     INSERT or key move of a deleted key is not checked (red-team rt48j F1–F3); in a
//     BEFORE INSERT or UPDATE trigger it turns a refused stale write into a silent
//     success; in a BEFORE DELETE one it makes the fenced DELETE delete nothing.
//   - any trigger whose body writes the table itself (dialect.WritesTable, the test
//     otherTriggers applies to other tables' triggers): SQLite's "PATCH" idiom (it
//     cannot assign NEW) — a BEFORE UPDATE trigger (WHEN NEW.fence_token IS NULL) that
//     UPDATEs the row itself with the old token kept and the version advanced, then
//     SELECT RAISE(IGNORE) — stored a stale holder's values (red-team "rtf" F2b); an
//     AFTER DELETE trigger that re-inserts the row at a low token runs, newest first,
//     before the tombstone record, so its INSERT finds no tombstone and the deleted key
//     is back below the deleting token (red-team rt48j F4).
//   - a BEFORE INSERT or UPDATE trigger (no timing is BEFORE) whose WHEN clause or
//     body names the token or the version column as a word (dialect.NamesColumn): it
//     runs before the NOT NULL check of the fencing NULL. Conservative (a trigger that
//     only reads NEW.version counts), as on PostgreSQL and MySQL. An AFTER trigger or
//     a DELETE trigger that only reads or logs the token is no door.
//
// The judgement is by content, whatever the order the triggers were created in: that
// order is not kept (re-creating either trigger reverses it). TEMP triggers (of one
// connection, not seen) are not judged. Fix: DROP TRIGGER, and do its work through the
// wrapper.
func (d dialectImpl) ownTriggers(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, "SELECT name, sql FROM "+d.master(t.Table.Schema)+" WHERE type = 'trigger' AND tbl_name = ? COLLATE NOCASE ORDER BY name", t.Table.Name)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 2 {
			continue
		}
		if _, before, ok := guardTriggerTable(r[0]); ok && before {
			continue // the guard's or the floor's name: guardTriggers judges its whole text
		}
		kind, why, explain := ownTriggerJudged(r[1], t)
		if len(why) == 0 {
			continue
		}
		trg := dialect.TableName{Schema: t.Table.Schema, Name: r[0]}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: r[0] + " on " + t.Table.String(),
			Problem: "the " + kind + "trigger " + r[0] + " on " + t.Table.String() + " " + strings.Join(why, ", ") + ": " + strings.Join(explain, "; ") +
				"; drop the trigger and do its work through the wrapper",
			Fix: []string{"DROP TRIGGER IF EXISTS " + trg.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}

// Why an own trigger is a door, by ownTriggerJudged's rule.
const (
	explainColumn = "SQLite cannot assign NEW, but a BEFORE trigger runs before the NOT NULL check of the fencing NULL the wrapper writes when a row carries a newer token, and can write the row itself and drop the original change, so a stale write is stored (the nested write advances the version: the guard lets it through) or reported as done"
	explainWrite  = "its nested write of the table runs before the statement's change is complete: before the NOT NULL check of the fencing NULL (a BEFORE trigger), or before the tombstone guard's AFTER triggers record or check the key (an AFTER trigger: SQLite runs a table's triggers newest first), so a stale write is stored or a deleted key comes back at a lower token"
	explainIgnore = "RAISE(IGNORE) abandons the rest of the statement and every trigger of it not yet run (SQLite runs a table's triggers newest first, and any re-creation changes that order) while the rows changed so far stay: a refused stale write is reported as done, a DELETE records no tombstone, a stale INSERT or key move of a deleted key is not checked"
)

// ownTriggerJudged reads a CREATE TRIGGER statement of the guarded table and returns
// its timing and event followed by a space ("BEFORE UPDATE ", "AFTER DELETE ", …; ""
// when they cannot be read), why it is a door (nothing
// when it is none) and what each reason lets through (ownTriggers states the rules). A
// text the lexer cannot read, or whose header is not the one SQLite's grammar allows,
// is a door (it errs on the side of yes).
func ownTriggerJudged(sql string, t dialect.SideDoorTable) (kind string, why, explain []string) {
	unreadable := func(kind string) (string, []string, []string) {
		return kind, []string{"whose text cannot be read"}, []string{"its text is not read as SQLite's CREATE TRIGGER grammar allows, so what it does is not known"}
	}
	toks, err := dialect.LexDDL(sql, dialect.SQLiteSyntax)
	if err != nil {
		return unreadable("")
	}
	// CREATE [TEMP|TEMPORARY] TRIGGER [IF NOT EXISTS] [schema.]name
	//   [BEFORE|AFTER|INSTEAD OF] {DELETE|INSERT|UPDATE [OF col, …]} ON table
	//   [FOR EACH ROW] [WHEN expr] BEGIN … END
	i := 0
	for i < len(toks) && !toks[i].Is("TRIGGER") {
		i++
	}
	i++
	if i+2 < len(toks) && toks[i].Is("IF") && toks[i+1].Is("NOT") && toks[i+2].Is("EXISTS") {
		i += 3
	}
	i++ // the name
	if i+1 < len(toks) && toks[i].Kind == dialect.DDLPunct && toks[i].Text == "." {
		i += 2
	}
	if i >= len(toks) {
		return unreadable("")
	}
	timing := "BEFORE"
	switch {
	case toks[i].Is("AFTER"), toks[i].Is("BEFORE"):
		timing = upperWord(toks[i].Text)
		i++
	case toks[i].Is("INSTEAD"):
		timing = "INSTEAD OF"
		i += 2
	}
	if i >= len(toks) || !toks[i].Is("DELETE") && !toks[i].Is("INSERT") && !toks[i].Is("UPDATE") {
		return unreadable(timing + " ")
	}
	event := upperWord(toks[i].Text)
	kind = timing + " " + event + " "
	for i < len(toks) && !toks[i].Is("ON") {
		i++
	}
	begin, when := -1, -1
	for j := i + 1; j < len(toks); j++ {
		if toks[j].Is("WHEN") && when < 0 {
			when = j
		}
		if toks[j].Is("BEGIN") {
			begin = j
			break
		}
	}
	if begin < 0 {
		return unreadable(kind)
	}
	body := sql[toks[begin].End:]
	if timing == "BEFORE" && event != "DELETE" {
		cols := []string{t.TokenColumn}
		if t.VersionColumn != "" {
			cols = append(cols, t.VersionColumn)
		}
		names := strings.Join(cols, " or ")
		column := false
		if when >= 0 && dialect.NamesColumn(sql[toks[when].Start:toks[begin].Start], dialect.SQLiteSyntax, cols...) {
			why, column = append(why, "has a WHEN clause naming "+names), true
		}
		if dialect.NamesColumn(body, dialect.SQLiteSyntax, cols...) {
			why, column = append(why, "has a body naming "+names), true
		}
		if column {
			explain = append(explain, explainColumn)
		}
	}
	// A write of the table itself in a BEFORE trigger, or in a DELETE trigger (its
	// nested INSERT runs before the tombstone record); an AFTER INSERT or UPDATE
	// trigger's nested write (an updated_at touch) is fenced by the guards' own
	// triggers, which it fires, and the statement's own AFTER checks still run after it.
	if (timing == "BEFORE" || event == "DELETE") && dialect.WritesTable(body, dialect.SQLiteSyntax, t.Table.Name) {
		why, explain = append(why, "writes "+t.Table.String()+" itself"), append(explain, explainWrite)
	}
	// RAISE(IGNORE) anywhere after ON (the WHEN clause too), in any case, with
	// comments or spaces between its tokens (the lexer drops them).
	for j := i + 3; j < len(toks); j++ {
		if toks[j].Is("IGNORE") && toks[j-1].Kind == dialect.DDLPunct && toks[j-1].Text == "(" && toks[j-2].Is("RAISE") {
			why, explain = append(why, "drops the rest of the statement with RAISE(IGNORE)"), append(explain, explainIgnore)
			break
		}
	}
	return kind, why, explain
}
