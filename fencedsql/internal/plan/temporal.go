package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// MariaDB's temporal clauses on a guarded table (red-team rt50b F3: they were refused
// with reasons that described other statements — a multi-table UPDATE, a join). Each
// is refused with a reason that names it:
//
//   - UPDATE t FOR PORTION OF p FROM … TO … SET … (an application-time period) updates
//     the part of each row inside the portion and inserts the parts outside it as new
//     rows, which carry the old row's values: the fencing assignments judge the
//     updated rows only. (The DELETE form is refused as an unexpected clause.)
//   - a claim SELECT … FROM t FOR SYSTEM_TIME AS OF/ALL/BETWEEN/FROM … FOR UPDATE reads
//     rows as of another time, while the claim's UPDATE stamps the current ones: it
//     would return rows it did not stamp.
//
// DELETE HISTORY passes (deletehistory.go).

// forPortion reports whether sig[j] starts FOR PORTION OF.
func (p *parser) forPortion(j int) bool {
	return p.rw.syn == sqllex.MySQL && p.kw(j, "FOR") && p.kw(j+1, "PORTION") && p.kw(j+2, "OF")
}

// refusePortion refuses UPDATE … FOR PORTION OF on the guarded table g.
func refusePortion(g *Table) error {
	return unsupported(g.String(), "UPDATE … FOR PORTION OF (MariaDB's application-time period: the parts of each row outside the portion are inserted as new rows with the old row's values, which the fencing assignments do not judge); update whole rows")
}

// forSystemTime reports whether FOR SYSTEM_TIME stands in sig[from:to].
func (p *parser) forSystemTime(from, to int) bool {
	if p.rw.syn != sqllex.MySQL {
		return false
	}
	for k := from; k+1 < to; k++ {
		if p.kw(k, "FOR") && p.kw(k+1, "SYSTEM_TIME") {
			return true
		}
	}
	return false
}

// systemTimeClaim is the reason a claim that reads FOR SYSTEM_TIME is refused.
const systemTimeClaim = "a locking SELECT … FOR SYSTEM_TIME (MariaDB: it reads the rows as of another time, while the claim's UPDATE stamps the current ones, so it would return rows it did not stamp); claim with a plain SELECT … FOR UPDATE"
