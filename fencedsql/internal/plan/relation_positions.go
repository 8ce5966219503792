// Where a statement names relations: the positions protectViewDDL judges as relations
// (red-team rt39a F2, F3), as opposed to the names of columns, functions, types,
// collations and operators around them.

package plan

// relationPositions returns the indexes in sig[from:to] where a name in a relation
// position starts:
//
//   - a from item: after FROM (not IS DISTINCT FROM, nor the FROM inside EXTRACT(…),
//     SUBSTRING(…), TRIM(…), OVERLAY(…)), any JOIN, USING not followed by "(" (a join's
//     column list), LATERAL, and after a comma of such a list at its depth (until a
//     clause keyword ends the list); ONLY and opening parentheses are skipped. There a
//     name followed by "(" is a table function, not a relation;
//   - a write's target: after INTO, UPDATE and DELETE (a write's, not FOR … UPDATE or
//     an event of a rule or trigger), INSERT/REPLACE and their modifiers (MySQL's INTO
//     is optional), TABLE, TRUNCATE, LOCK, and a comma of MySQL's multi-table
//     UPDATE/DELETE list; a rule's table (ON
//     <event> TO t) and a trigger's (the first ON at depth 0 of a statement of kind
//     TRIGGER). There a name followed by "(" is a relation with a column list
//     (INSERT INTO pg_catalog.pg_description(objoid, …)).
func (p *parser) relationPositions(from, to int, trigger bool) map[int]bool {
	rel := map[int]bool{}
	// mark records the name at or after j (past ONLY, LATERAL and, for a from item,
	// opening parentheses) as a relation; a from item followed by "(" is a function.
	mark := func(j int, fromItem bool) {
		for j < to && (p.kwIn(j, "ONLY", "LATERAL") || fromItem && p.punct(j, "(")) {
			j++
		}
		parts := p.namePartsAt(j)
		if len(parts) == 0 || j >= to {
			return
		}
		if fromItem && p.punct(j+2*len(parts)-1, "(") {
			return // a table function
		}
		rel[j] = true
	}
	// lists[d]: the relation list open at depth d ("from" or "target"), "" for none.
	lists := map[int]string{}
	var opener []int // for each open parenthesis, the index of the token before it
	depth := 0
	triggerOn := trigger
	for i := from; i < to && i < len(p.sig); i++ {
		switch {
		case p.punct(i, "("):
			opener = append(opener, i-1)
			depth++
			delete(lists, depth)
		case p.punct(i, ")"):
			delete(lists, depth)
			if depth > 0 {
				depth--
				opener = opener[:len(opener)-1]
			}
		case p.punct(i, ";"):
			lists = map[int]string{}
		case p.punct(i, ","):
			if l := lists[depth]; l != "" {
				mark(i+1, l == "from")
			}
		case p.kw(i, "FROM"):
			if p.kw(i-1, "DISTINCT") || depth > 0 && p.kwIn(opener[len(opener)-1], "EXTRACT", "SUBSTRING", "TRIM", "OVERLAY") {
				continue
			}
			lists[depth] = "from"
			mark(i+1, true)
		case p.kw(i, "JOIN") || p.kw(i, "STRAIGHT_JOIN"):
			mark(i+1, true)
		case p.kw(i, "USING"):
			if !p.punct(i+1, "(") {
				lists[depth] = "from"
				mark(i+1, true)
			}
		case p.kwIn(i, "INTO", "TABLE", "TRUNCATE", "LOCK"):
			mark(i+1, false)
		case p.kwIn(i, "INSERT", "REPLACE"):
			mark(p.afterWriteModifiers(i+1), false)
		case p.kwIn(i, "UPDATE", "DELETE"):
			// Not FOR [NO KEY] UPDATE, a rule's or trigger's event (ON UPDATE TO t,
			// BEFORE UPDATE OF a, b ON t). An upsert's or a rule's DO UPDATE is a
			// write: its target, or SET, is marked; so is SQLite's UPDATE OR IGNORE t
			// (and the ON of a trigger's UPDATE OR DELETE ON t, harmlessly).
			if p.kwIn(i-1, "FOR", "KEY", "ON") || p.kwIn(i+1, "OF", "ON") {
				continue
			}
			lists[depth] = "target"
			mark(p.afterWriteModifiers(i+1), false)
		case p.kw(i, "TO") && p.kwIn(i-1, "SELECT", "INSERT", "UPDATE", "DELETE"):
			mark(i+1, false) // CREATE RULE … AS ON <event> TO t
		case p.kw(i, "ON") && triggerOn && depth == 0:
			triggerOn = false
			mark(i+1, false) // CREATE TRIGGER … ON t
		case p.kwIn(i, relationListEnds...):
			delete(lists, depth)
		}
	}
	return rel
}

// relationListEnds are the keywords that end a from list or a multi-table UPDATE/
// DELETE's target list at their depth.
var relationListEnds = []string{"WHERE", "GROUP", "HAVING", "WINDOW", "ORDER", "LIMIT", "OFFSET", "FETCH",
	"FOR", "UNION", "INTERSECT", "EXCEPT", "MINUS", "RETURNING", "SET", "VALUES", "SELECT", "DUPLICATE", "CONFLICT",
	"WHEN", "THEN", "DO", "END"}
