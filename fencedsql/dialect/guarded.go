package dialect

import "strings"

// GuardFinder is implemented by dialects that can list the tables carrying the guard's
// triggers: the database's own record of what is guarded, which a rename of the table,
// a registry the pool does not read or a typo in fenced_tables does not change. A fenced
// pool guards every table it lists (schema.Guarded), on the columns its guard checks.
type GuardFinder interface {
	// GuardedTablesQuery returns a query yielding one row (schema, table, guard text)
	// per table of the database that carries a trigger of the guard or of the
	// tombstones (the partitions of such a table included), fencedsql's own tables
	// excluded. The guard text is the text of the table's guard trigger (or of the
	// function it calls) as the database keeps it, from which GuardColumns reads the
	// fencing columns the guard was installed for; NULL or empty when the table carries
	// no guard trigger (tombstone triggers only).
	GuardedTablesQuery() string
	// GuardColumns returns the token and version columns the guard text of a
	// GuardedTablesQuery row checks; ok is false when the text names none (no guard
	// trigger, a text this version did not write).
	GuardColumns(text string) (tokenCol, versionCol string, ok bool)
}

// GuardColumnsInText reads the fencing columns from the text of a guard trigger that
// tests each for NULL, the token first — NEW.<token> IS NULL … NEW.<version> IS NULL,
// each column quoted with quote (doubled inside) — as the guard of every stock dialect
// does before naming the NOT NULL refusal. ok is false unless two such tests name two
// columns.
func GuardColumnsInText(text string, quote byte) (tokenCol, versionCol string, ok bool) {
	var cols []string
	prefix := "NEW." + string(quote)
	for rest := text; len(cols) < 2; {
		i := strings.Index(rest, prefix)
		if i < 0 {
			return "", "", false
		}
		rest = rest[i+len(prefix):]
		var b strings.Builder
		j := 0
		for ; j < len(rest); j++ {
			if rest[j] != quote {
				b.WriteByte(rest[j])
				continue
			}
			if j+1 < len(rest) && rest[j+1] == quote {
				b.WriteByte(quote)
				j++
				continue
			}
			break
		}
		if j >= len(rest) {
			return "", "", false
		}
		rest = rest[j+1:]
		if strings.HasPrefix(rest, " IS NULL") && b.Len() > 0 {
			cols = append(cols, b.String())
		}
	}
	if cols[0] == cols[1] {
		return "", "", false
	}
	return cols[0], cols[1], true
}
