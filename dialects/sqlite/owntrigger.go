package sqlite

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ownTriggers finds the table's own BEFORE INSERT or UPDATE triggers (a trigger with
// no BEFORE, AFTER or INSTEAD OF is a BEFORE one), other than those carrying the
// guard's or the floor trigger's name (guardTriggers compares their whole text; any
// other name, fencedsql_… and the tombstone guard's AFTER triggers' names too, is
// judged here), that may undo the fence of a
// statement on the table: one whose WHEN clause or body names the token or the
// version column as a word (dialect.NamesColumn), whose body writes the table itself
// (dialect.WritesTable, the test otherTriggers applies to other tables' triggers), or
// whose body drops the row change with RAISE(IGNORE). SQLite cannot assign NEW in a
// trigger, but its "PATCH" idiom does the same: a BEFORE UPDATE trigger (WHEN
// NEW.fence_token IS NULL) that UPDATEs the row itself with the old token kept and the
// version advanced, then SELECT RAISE(IGNORE). The fenced UPDATE's fencing NULL never
// reaches the NOT NULL check, the nested write passes the guard, and the stale
// holder's values are stored with no error (red-team "rtf" finding F2b); RAISE(IGNORE)
// alone turns the refused write into a silent success. The NamesColumn rule is
// conservative (a trigger that only reads NEW.version counts), as on PostgreSQL and
// MySQL. AFTER triggers (which run after the NOT NULL check), DELETE triggers and
// TEMP triggers (of one connection, not seen) are not judged. Fix: DROP TRIGGER, and
// do its work through the wrapper.
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
		event, why := ownTriggerJudged(r[1], t)
		if len(why) == 0 {
			continue
		}
		trg := dialect.TableName{Schema: t.Table.Schema, Name: r[0]}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: r[0] + " on " + t.Table.String(),
			Problem: "the BEFORE " + event + " trigger " + r[0] + " on " + t.Table.String() + " " + strings.Join(why, ", ") +
				": SQLite cannot assign NEW, but a BEFORE trigger can write the row itself and drop the original change with RAISE(IGNORE), so the fencing NULL the wrapper writes when a row carries a newer token never reaches the NOT NULL check, and a stale write is stored (the nested write advances the version: the guard lets it through) or reported as done; drop the trigger and do its work through the wrapper",
			Fix: []string{"DROP TRIGGER IF EXISTS " + trg.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}

// ownTriggerJudged reads a CREATE TRIGGER statement of the guarded table and returns
// its event (INSERT or UPDATE) and why it is a door (nothing when it is none, or is an
// AFTER, INSTEAD OF or DELETE trigger). A text the lexer cannot read, or whose header
// is not the one SQLite's grammar allows, is a door (it errs on the side of yes).
func ownTriggerJudged(sql string, t dialect.SideDoorTable) (event string, why []string) {
	unreadable := []string{"whose text cannot be read"}
	toks, err := dialect.LexDDL(sql, dialect.SQLiteSyntax)
	if err != nil {
		return "INSERT or UPDATE", unreadable
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
		return "INSERT or UPDATE", unreadable
	}
	switch {
	case toks[i].Is("AFTER"), toks[i].Is("INSTEAD"):
		return "", nil
	case toks[i].Is("BEFORE"):
		i++
	}
	switch {
	case i >= len(toks):
		return "INSERT or UPDATE", unreadable
	case toks[i].Is("DELETE"):
		return "", nil
	case toks[i].Is("INSERT"), toks[i].Is("UPDATE"):
		event = strings.ToUpper(toks[i].Text)
	default:
		return "INSERT or UPDATE", unreadable
	}
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
		return event, unreadable
	}
	cols := []string{t.TokenColumn}
	if t.VersionColumn != "" {
		cols = append(cols, t.VersionColumn)
	}
	names := strings.Join(cols, " or ")
	body := sql[toks[begin].End:]
	if when >= 0 && dialect.NamesColumn(sql[toks[when].Start:toks[begin].Start], dialect.SQLiteSyntax, cols...) {
		why = append(why, "has a WHEN clause naming "+names)
	}
	if dialect.NamesColumn(body, dialect.SQLiteSyntax, cols...) {
		why = append(why, "has a body naming "+names)
	}
	if dialect.WritesTable(body, dialect.SQLiteSyntax, t.Table.Name) {
		why = append(why, "writes "+t.Table.String()+" itself")
	}
	for j := begin + 3; j < len(toks); j++ {
		if toks[j].Is("IGNORE") && toks[j-1].Text == "(" && toks[j-2].Is("RAISE") {
			why = append(why, "drops the row change with RAISE(IGNORE)")
			break
		}
	}
	return event, why
}
