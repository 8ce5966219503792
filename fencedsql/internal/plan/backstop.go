package plan

import (
	"slices"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// The backstop is a second, independent look at a statement the planner lets pass
// although it names a guarded table. Wherever a write keyword (INSERT, UPDATE, DELETE,
// REPLACE, MERGE, UPSERT, TRUNCATE) is followed — after any run of the modifiers the
// dialects accept there (INTO, FROM, ONLY, IGNORE, OR REPLACE, …), however many and in
// whatever order — by the name of a guarded table, the statement writes that table and
// must not pass unfenced. A gap in a planner therefore fails closed with ErrUnsupported
// instead of reaching the database unfenced.
//
// It does not look at an EXPLAIN that only shows a plan (explain), nor at DDL, which WithDDL governs: a trigger body that writes a guarded
// table is the database-side business WithDDL hands to the user. It does refuse the DDL
// hidden in a query, PostgreSQL's SELECT … INTO <guarded name>, unless WithDDL.

// backstopSkip are the words a write accepts between its keyword and its table.
var backstopSkip = []string{"INTO", "FROM", "ONLY", "IGNORE", "LOW_PRIORITY", "QUICK", "DELAYED", "HIGH_PRIORITY", "TABLE"}

// backstop returns a refusal when a write keyword in a passing statement is followed
// by a guarded table's name.
func (p *parser) backstop() error {
	if p.shownOnly {
		return nil // an EXPLAIN without ANALYZE runs nothing (explain.go)
	}
	for i := range p.sig {
		if !p.writeKeyword(i) {
			continue
		}
		j := p.afterWriteModifiers(i + 1)
		if slices.Contains(p.aliasTargets, j) {
			continue // a multi-table DELETE's target that is an alias of an unguarded table
		}
		if g := p.rw.Lookup(p.namePartsAt(j)); g != nil {
			return unsupported(g.String(), "%s of a guarded table in a shape the rewriter does not know", p.text(p.sig[i]))
		}
	}
	return p.selectInto()
}

// selectInto refuses PostgreSQL's SELECT … INTO [TEMP] <name> when the name is a guarded
// table's: it is CREATE TABLE AS, and a temporary table of that name would shadow the
// guarded one for every later statement of the session. DDL naming a guarded table is
// refused unless WithDDL.
func (p *parser) selectInto() error {
	first := 0
	for first < len(p.sig)-1 && p.punct(first, "(") {
		first++
	}
	if p.rw.allowDDL || !p.kwIn(first, "SELECT", "WITH") {
		return nil
	}
	for i := first; i < len(p.sig); i++ {
		if !p.kw(i, "INTO") {
			continue
		}
		j := i + 1
		for p.kwIn(j, "TEMP", "TEMPORARY", "UNLOGGED", "LOCAL", "GLOBAL", "TABLE") {
			j++
		}
		if g := p.rw.Lookup(p.namePartsAt(j)); g != nil {
			return unsupported(g.String(), "SELECT … INTO a table named like a guarded table (CREATE TABLE AS: DDL), or allow it with fencedsql.WithDDL(true)")
		}
	}
	return nil
}

// writeKeyword reports whether sig[i] is a keyword that starts a write: not the
// locking clause FOR [NO KEY] UPDATE, an upsert's DO UPDATE / ON DUPLICATE KEY UPDATE,
// or a referential action or trigger event ON UPDATE / ON DELETE.
func (p *parser) writeKeyword(i int) bool {
	if !p.kwIn(i, "INSERT", "UPDATE", "DELETE", "REPLACE", "MERGE", "UPSERT", "TRUNCATE") {
		return false
	}
	return i == 0 || !p.kwIn(i-1, "FOR", "KEY", "DO", "ON")
}

// namePartsAt reads ident ('.' ident)* at sig[i] as written, keywords included.
func (p *parser) namePartsAt(i int) []string {
	var parts []string
	for p.isIdent(i) {
		n, ok := p.ident(i)
		if !ok {
			return nil
		}
		parts = append(parts, n)
		if !p.punct(i+1, ".") {
			break
		}
		i += 2
	}
	return parts
}

// isDDL reports whether the statement's head keyword (after any opening parentheses)
// changes the schema.
func (p *parser) isDDL() bool {
	i := 0
	for i < len(p.sig)-1 && p.punct(i, "(") {
		i++
	}
	return i < len(p.sig) && p.sig[i].Kind == sqllex.KindWord && ddlHeads[strings.ToUpper(p.text(p.sig[i]))]
}

// afterWriteModifiers returns the index of the first token at or after j that is not a
// write's modifier (backstopSkip) or SQLite's OR <conflict action>: the write's target.
func (p *parser) afterWriteModifiers(j int) int {
	for {
		if p.kwIn(j, backstopSkip...) {
			j++
		} else if p.kw(j, "OR") && p.isIdent(j+1) {
			j += 2
		} else {
			return j
		}
	}
}
