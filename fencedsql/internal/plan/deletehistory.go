package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// MariaDB's DELETE HISTORY FROM t [PARTITION (…)] [BEFORE SYSTEM_TIME …] removes
// history rows of a system-versioned table: rows that a write since replaced or a
// DELETE since removed, which no statement reads unless it names FOR SYSTEM_TIME. It
// changes no current row, fires no trigger, and touches neither the tombstones nor
// the floor; the guards and the fencing read only current rows. So it passes on a
// guarded table (red-team rt50b F3: it was refused as "a multi-table DELETE"); the
// guards' own tables are refused by their reserved prefix before any planning.
//
// MySQL, which has no system versioning, reads `DELETE history FROM <list>` as a
// multi-table DELETE whose target is the table history of its list. The two readings
// agree on everything deleteHistory passes: its list is one table, followed by the end
// of the statement or BEFORE (reserved in both: never an alias), so on MySQL the target
// history names a table of the list only when that table is called history, which
// deleteHistory leaves to multiDelete.

// deleteHistory plans DELETE HISTORY FROM …, i at the table after FROM. handled is
// false when the statement is to be planned as MySQL's multi-table DELETE (a table
// called history, which MySQL would delete from).
func (p *parser) deleteHistory(i int) (pl *Plan, handled bool, err error) {
	r, ok := p.parseTarget(i)
	if !ok || len(r.parts) == 0 {
		return nil, false, nil
	}
	if strings.EqualFold(r.parts[len(r.parts)-1], "history") {
		return nil, false, nil
	}
	refuse := func() (*Plan, bool, error) {
		if !p.mayNameGuard() {
			return p.pass(), true, nil
		}
		return nil, true, unsupported(p.guardName(p.rw.Lookup(r.parts)), "DELETE HISTORY of a shape the rewriter does not know (DELETE HISTORY FROM <table> [PARTITION (…)] [BEFORE SYSTEM_TIME …] passes)")
	}
	if !p.skipPartition(&r) {
		return refuse()
	}
	j := r.aliasEnd
	if j >= len(p.sig) || p.punct(j, ";") || p.kw(j, "BEFORE") && p.kw(j+1, "SYSTEM_TIME") {
		return p.pass(), true, nil
	}
	return refuse()
}

// isDeleteHistory reports whether sig[i:] starts MariaDB's HISTORY FROM (after DELETE
// and its modifiers).
func (p *parser) isDeleteHistory(i int) bool {
	return p.rw.syn == sqllex.MySQL && p.kw(i, "HISTORY") && p.kw(i+1, "FROM")
}
