package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// MySQL/MariaDB explicit partition selection: a single-table write may name the
// partitions it touches after its table, `UPDATE t PARTITION (p0) SET …`,
// `DELETE FROM t PARTITION (p1) WHERE …` (MySQL 8 also `DELETE FROM t AS a PARTITION
// (p1) …`), `INSERT INTO t PARTITION (p1) (cols) VALUES …`. The list only narrows the
// rows the statement may reach (a row outside it is not matched, or, for an INSERT, an
// error); it changes neither the table nor what the fencing assignments and the token
// condition do, so the statement is fenced as the same write without the list, the list
// kept where it was written (in the fencing UPDATE of a DELETE too). Red-team rt34c F3:
// such writes were refused with reasons that did not fit their text.

// skipPartition advances r.aliasEnd past a partition list `PARTITION ( name [, name]… )`
// standing there (MySQL/MariaDB only; PARTITION is reserved there, so it is never an
// alias). ok is false for a PARTITION clause of any other shape: the caller fails
// closed. Without a list there, r is unchanged.
func (p *parser) skipPartition(r *tableRef) (ok bool) {
	i := r.aliasEnd
	if p.rw.syn != sqllex.MySQL || !p.kw(i, "PARTITION") {
		return true
	}
	if !p.punct(i+1, "(") {
		return false
	}
	k := i + 2
	for {
		if !p.isIdent(k) {
			return false
		}
		if p.punct(k+1, ")") {
			r.aliasEnd = k + 2
			return true
		}
		if !p.punct(k+1, ",") {
			return false
		}
		k += 2
	}
}
