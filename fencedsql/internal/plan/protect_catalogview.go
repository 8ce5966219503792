// Relations that reach a system catalog or settings relation under another name: a
// view over pg_proc, pg_trigger, pg_attribute or pg_settings, over mysql.proc, or a
// table with a rule that writes one (red-team rt37e F2, F3) — and, the same way, a
// view or a foreign table over one of the guards' own tables (a tombstone table, the
// token floor: red-team rt40a F2, F3), whose Reaches names it. A write through one
// changes the catalog without naming it — a guard function's body, a trigger's
// enabled flag, a fencing column's NOT NULL, a protected setting — so the planner
// refuses it like a write to the catalog itself (protectCatalogWrites), and refuses the
// DDL that would make a new one (protectViewDDL).

package plan

import (
	"strings"
	"unicode/utf8"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// CatalogView is a relation outside the system catalogs through which a write reaches
// a system catalog or settings relation (dialect.CatalogViewFinder): Schema and Name as
// the catalog spells them, Reaches the catalog relation it reaches ("" when the
// dialect cannot tell, e.g. a view whose definition the account may not read).
type CatalogView struct{ Schema, Name, Reaches string }

// setCatalogViews records the catalog views of cfg, keyed by their name as the guards
// are (Key): a reference matches by its last name part, whatever its qualifier (a
// namesake in another schema is refused too: fail closed).
func (rw *Planner) setCatalogViews(views []CatalogView) {
	for _, v := range views {
		if rw.catalogViews == nil {
			rw.catalogViews = map[string]CatalogView{}
		}
		k := rw.Key(v.Name)
		if _, ok := rw.catalogViews[k]; !ok {
			rw.catalogViewKeys = append(rw.catalogViewKeys, k)
		}
		rw.catalogViews[k] = v
	}
}

// catalogView returns the catalog view a table reference (parts as written) names.
func (rw *Planner) catalogView(parts []string) (CatalogView, bool) {
	if len(parts) == 0 || len(rw.catalogViews) == 0 {
		return CatalogView{}, false
	}
	v, ok := rw.catalogViews[rw.Key(parts[len(parts)-1])]
	return v, ok
}

// mayNameCatalogView is the pre-filter's part for the catalog views: false when sql
// cannot name one (ASCII case-insensitively; any non-ASCII byte counts for a name
// that is not ASCII, whose folding the pre-filter does not repeat).
func (rw *Planner) mayNameCatalogView(sql string) bool {
	for _, k := range rw.catalogViewKeys {
		if ContainsFold(sql, k) {
			return true
		}
		if !isASCII(k) && !isASCII(sql) {
			return true
		}
	}
	return false
}

func isASCII(s string) bool {
	for i := 0; i < len(s); i++ {
		if s[i] >= utf8.RuneSelf {
			return false
		}
	}
	return true
}

// viewKinds are the objects whose definition a write through them (or to the relation
// they sit on) runs: a view, a rule, a trigger. A materialized view is not written
// through.
var viewKinds = []string{"VIEW", "RULE", "TRIGGER"}

// protectViewDDL refuses, whatever WithDDL allows, the DDL that makes a relation reach
// a system catalog or settings relation under another name, and the DDL that would
// move a known one out of the planner's sight:
//
//   - CREATE [OR REPLACE] VIEW / RULE / TRIGGER (and MySQL's ALTER VIEW … AS) whose
//     text names a system catalog (catalogTable) or a known catalog view in a relation
//     position (relationPositions: after FROM, JOIN, INTO, UPDATE, TABLE, USING, … —
//     with a column list too, INSERT INTO pg_catalog.pg_description(objoid, …)): a
//     write through the view, or to the rule's or trigger's table, would change the
//     catalog. Elsewhere a name is a column, a function, a type, a collation or an
//     operator (a column pg_score, CAST(x AS pg_catalog.text), COLLATE
//     pg_catalog."default", OPERATOR(pg_catalog.=) pass); a schema-qualified catalog
//     name in a position read as none of these is refused (fail closed);
//   - ALTER or RENAME that names a known catalog view (ALTER VIEW … RENAME TO, RENAME
//     TABLE … TO): under a new name the pool would not know it. DROP passes: it
//     removes the door.
func (p *parser) protectViewDDL(head string, first, to int) error {
	switch head {
	case "CREATE", "ALTER":
	case "RENAME":
		if v := p.catalogViewIn(first, to); v != "" {
			return catalogViewDDLRefusal(head, v)
		}
		return nil
	default:
		return nil
	}
	if head == "ALTER" {
		if v := p.catalogViewIn(first, to); v != "" {
			return catalogViewDDLRefusal(head, v)
		}
	}
	// The kind is found anywhere in the statement, not only where the grammar puts it:
	// what may stand before it (MySQL's DEFINER = user@host, whose user may be spelled
	// like a keyword: event@localhost) is not parsed. A statement of another kind that
	// holds the word and names a catalog is refused too (fail closed).
	kind := ""
	for i := first + 1; i < to && i < len(p.sig); i++ {
		if p.kwIn(i, viewKinds...) && !p.kw(i-1, "MATERIALIZED") {
			kind = strings.ToUpper(p.text(p.sig[i]))
			break
		}
	}
	if kind == "" {
		return nil
	}
	rel := p.relationPositions(first+1, to, kind == "TRIGGER")
	for k := first + 1; k < to && k < len(p.sig); k++ {
		if p.kw(k, "OPERATOR") && p.punct(k+1, "(") && p.matching(k+1) > 0 {
			k = p.matching(k + 1) // OPERATOR(pg_catalog.=): an operator
			continue
		}
		if k > 0 && p.punct(k-1, ".") {
			continue // a later part of a name read from its first
		}
		parts := p.namePartsAt(k)
		if len(parts) == 0 {
			continue
		}
		if !rel[k] {
			// Not a relation position: a column, a function call, a type (after ::,
			// after AS — CAST(x AS pg_catalog.text); an alias is never qualified — or
			// before a literal, pg_catalog.int4 '5'), a collation (after COLLATE).
			// Only a schema-qualified catalog name left over is refused: a relation
			// in a position this reader does not know (fail closed).
			end := k + 2*len(parts) - 1
			if len(parts) < 2 || p.punct(end, "(") || end < len(p.sig) && p.sig[end].Kind == sqllex.KindString ||
				k > 0 && (p.punct(k-1, "::") || p.kwIn(k-1, "AS", "COLLATE")) {
				continue
			}
		}
		if p.catalogTable(parts) {
			return unsupported("", "%s %s naming the system catalog %s on a pool with guarded tables: a write through it would change the catalog (the guards' functions and triggers, the fencing columns' NOT NULL, the session's settings) without naming it; create it on a plain connection (the pool refuses writes through it)", head, kind, strings.Join(parts, "."))
		}
		if v, ok := p.rw.catalogView(parts); ok && (rel[k] || strings.EqualFold(parts[len(parts)-2], v.Schema)) {
			return unsupported("", "%s %s naming %s, a relation through which a write reaches a system catalog, on a pool with guarded tables: a write through it would change the catalog without naming it; create it on a plain connection (the pool refuses writes through it)", head, kind, strings.Join(parts, "."))
		}
	}
	return nil
}

// catalogViewIn returns the first known catalog view named in sig[from:to], as written.
func (p *parser) catalogViewIn(from, to int) string {
	for k := from; k < to && k < len(p.sig); k++ {
		if k > 0 && p.punct(k-1, ".") {
			continue
		}
		if parts := p.namePartsAt(k); len(parts) > 0 {
			if _, ok := p.rw.catalogView(parts); ok {
				return strings.Join(parts, ".")
			}
		}
	}
	return ""
}

func catalogViewDDLRefusal(head, name string) error {
	return unsupported("", "%s naming %s on a pool with guarded tables: a write through it reaches a system catalog, and under another name the pool would not know it; drop it (DROP VIEW, DROP RULE), or run it on a plain connection", head, name)
}

// catalogViewRefusal is the refusal of a write (what) through the catalog view v
// (name as written).
func catalogViewRefusal(what, name string, v CatalogView) error {
	reaches := "a system catalog or settings relation"
	switch {
	case ContainsFold(v.Reaches, guardPrefix):
		// A view or foreign table over a guard table (red-team rt40a F2, F3).
		return unsupported("", "%s of %s on a pool with guarded tables: a write through it reaches the guard table %s (a view over it, or a foreign table naming it), so it deletes tombstones or lowers the token floor without naming them; drop it, or run the write on a plain connection", what, name, v.Reaches)
	case v.Reaches != "":
		reaches = "the system catalog " + v.Reaches
	}
	return unsupported("", "%s of %s on a pool with guarded tables: a write through it reaches %s (a view over it, or a rule that writes it), which holds the guards' functions and triggers, the fencing columns' NOT NULL or the session's settings, so it changes or disables the guards without naming them; drop the view or rule, or run the write on a plain connection", what, name, reaches)
}
