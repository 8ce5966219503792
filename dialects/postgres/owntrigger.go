package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// ownPatchTriggers finds the table's own BEFORE row triggers on INSERT or UPDATE
// that ownTriggers (the same triggers: enabled, of the table and of its inheritance
// children and partitions but not the clones of the table's own, other than
// fencedsql's) does not report, and that may undo the fence of a statement on the
// table without assigning a fencing column:
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
func (d dialectImpl) ownPatchTriggers(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `WITH RECURSIVE d(oid) AS (
  SELECT to_regclass($1)
  UNION
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid)
SELECT n.nspname::text, c.relname::text, tg.tgname::text, pn.nspname::text, p.proname::text,
  CASE WHEN COALESCE(p.prosrc, '') = '' THEN pg_catalog.pg_get_functiondef(p.oid) ELSE p.prosrc END,
  pg_catalog.encode(tg.tgargs, 'escape'),
  CASE WHEN tg.tgqual IS NULL THEN '' ELSE pg_catalog.pg_get_triggerdef(tg.oid) END
FROM d JOIN pg_catalog.pg_trigger tg ON tg.tgrelid = d.oid JOIN pg_catalog.pg_class c ON c.oid = tg.tgrelid
  JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_catalog.pg_proc p ON p.oid = tg.tgfoid JOIN pg_catalog.pg_namespace pn ON pn.oid = p.pronamespace
WHERE NOT tg.tgisinternal AND tg.tgenabled <> 'D' AND tg.tgtype & 3 = 3 AND tg.tgtype & 20 <> 0
  AND (tg.tgrelid = to_regclass($1) OR tg.tgparentid = 0)
  AND p.proname::text NOT LIKE 'fencedsql\_%'
ORDER BY 1, 2, 3`, t.Table.String())
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 8 {
			continue
		}
		args := strings.ReplaceAll(r[6], `\000`, " ")
		if dialect.NamesColumn(r[5], dialect.PostgresSyntax, t.TokenColumn, t.VersionColumn) ||
			dialect.NamesColumn(args, dialect.PostgresSyntax, t.TokenColumn, t.VersionColumn) {
			continue // ownTriggers' door
		}
		var why []string
		if r[7] != "" && dialect.NamesColumn(whenClause(r[7]), dialect.PostgresSyntax, t.TokenColumn, t.VersionColumn) {
			why = append(why, "its WHEN clause names "+ownColumns(t))
		}
		rel := dialect.TableName{Schema: r[0], Name: r[1]}
		fn := dialect.TableName{Schema: r[3], Name: r[4]}
		if dialect.WritesTable(r[5], dialect.PostgresSyntax, t.Table.Name) ||
			!strings.EqualFold(r[1], t.Table.Name) && dialect.WritesTable(r[5], dialect.PostgresSyntax, r[1]) {
			why = append(why, fn.String()+"() writes "+rel.String()+" itself")
		}
		if len(why) == 0 {
			continue
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: r[2] + " on " + rel.String(),
			Problem: "the BEFORE row trigger " + r[2] + " on " + rel.String() + " runs " + fn.String() + "(), and " + strings.Join(why, ", and ") +
				": a BEFORE row trigger whose function returns NULL skips the row change before the NOT NULL check that refuses the fencing NULL of a stale write, and one that writes the row itself first stores the stale holder's values (the guard refuses that write only when it does not advance the version); drop the trigger and do its work through the wrapper",
			Fix: []string{"DROP TRIGGER IF EXISTS " + d.QuoteIdent(r[2]) + " ON " + rel.Quote(d.QuoteIdent)}})
	}
	return doors, nil
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
