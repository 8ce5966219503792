package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// patchDoor judges one of ownTriggers' rows (the table's own BEFORE row triggers on
// INSERT or UPDATE: enabled, of the table and of its inheritance children and
// partitions but not the clones of the table's own, other than fencedsql's) whose
// body and arguments name no fencing column: it is a door when it may undo the fence
// of a statement on the table without assigning a fencing column:
//
//   - a WHEN clause (pg_trigger.tgqual, read from pg_get_triggerdef) that names the
//     token or the version column (dialect.NamesColumn): keyed on the fencing NULL
//     (WHEN (NEW.fence_token IS NULL)), the trigger runs exactly for the writes the
//     fence refuses, and a function that returns NULL skips the row change before the
//     NOT NULL check — the refused write becomes a silent success, or is stored by a
//     function that writes the row itself;
//   - a function whose body writes the table itself, or the relation the trigger is
//     on (dialect.WritesTable, the test otherTriggers applies to other relations'
//     triggers): the "PATCH" form — UPDATE the row with the new values and the old
//     token kept, then RETURN NULL — stores a stale holder's values with no error,
//     without the guard (with the guard installed, its nested UPDATE is refused unless
//     it advances the version) (red-team "rtf" finding F2b).
//
// Fix: DROP TRIGGER, and do its work through the wrapper.
func (d dialectImpl) patchDoor(r []string, t dialect.SideDoorTable) (dialect.SideDoor, bool) {
	var why []string
	if r[7] != "" && dialect.NamesColumn(whenClause(r[7]), dialect.PostgresSyntax, t.TokenColumn, t.VersionColumn) {
		why = append(why, "its WHEN clause names "+ownColumns(t))
	}
	rel := dialect.CatalogName(r[0], r[1])
	fn := dialect.CatalogName(r[3], r[4])
	// The table, the relation the trigger is on, and every partition and child of the
	// table (r[8]): a trigger that writes the row through its partition's name (a
	// red-team pass) writes it as surely as through the table's; judged as every
	// routine body is (bodyWrites: dynamic SQL too, red-team rt44d F3).
	if name, ok := bodyWrites(r[5], r[10], familyNames(t, r[1]+" "+r[8])); ok {
		why = append(why, fn.String()+"() writes "+name+" (the table, or one of its partitions or children) itself")
	}
	if len(why) == 0 {
		return dialect.SideDoor{}, false
	}
	return dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: r[2] + " on " + rel.String(),
		Problem: "the BEFORE row trigger " + r[2] + " on " + rel.String() + " runs " + fn.String() + "(), and " + strings.Join(why, ", and ") +
			": a BEFORE row trigger whose function returns NULL skips the row change before the NOT NULL check that refuses the fencing NULL of a stale write, and one that writes the row itself first stores the stale holder's values (the guard refuses that write only when it does not advance the version); drop the trigger and do its work through the wrapper",
		Fix: []string{"DROP TRIGGER IF EXISTS " + d.QuoteIdent(r[2]) + " ON " + rel.Quote(d.QuoteIdent)}}, true
}

// whenClause returns the WHEN clause of pg_get_triggerdef's text: from the first bare
// WHEN (a trigger, table or column so named is quoted there) to the parenthesis that
// closes its condition; the whole text when it cannot find one (which errs on the
// side of yes).
func whenClause(def string) string {
	toks, err := dialect.LexDDL(def, dialect.PostgresSyntax)
	if err != nil {
		return def
	}
	for i, tk := range toks {
		if !tk.Is("WHEN") {
			continue
		}
		depth := 0
		for j := i + 1; j < len(toks); j++ {
			if toks[j].Kind != dialect.DDLPunct {
				continue
			}
			switch toks[j].Text {
			case "(":
				depth++
			case ")":
				if depth--; depth == 0 {
					return def[tk.Start:toks[j].End]
				}
			}
		}
		break
	}
	return def
}
