package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Partition and inheritance DDL that moves rows into or out of a guarded table without
// its row triggers (docs/design.md, G9 and "Statements that reach the guards without
// naming them"). TRUNCATE of a guarded table is refused whatever WithDDL says: it
// removes rows without the DELETE trigger, so without tombstones, and a stale holder
// could then re-insert a key a newer holder wrote or deleted. The same removal (or the
// arrival of rows no INSERT trigger judged) spelled as partition maintenance is refused
// the same way, on a pool with guarded tables, before anything is sent (red-team rt34a
// F2, F3):
//
//   - MySQL/MariaDB ALTER TABLE … TRUNCATE PARTITION, DROP PARTITION (both delete the
//     partition's rows), EXCHANGE PARTITION … WITH TABLE (swaps rows in and out),
//     DISCARD/IMPORT [PARTITION …] TABLESPACE (drops the data, or brings in a data
//     file's rows), and MariaDB's CONVERT PARTITION … TO TABLE and CONVERT TABLE … TO
//     PARTITION (rows leave, or arrive);
//   - PostgreSQL ALTER [FOREIGN] TABLE … ATTACH PARTITION, DETACH PARTITION, INHERIT
//     and NO INHERIT (a table's rows join or leave the guarded table's, and a table
//     attached below it is written by its own name, which the pool does not guard);
//   - a column's type changed on a guarded table: PostgreSQL ALTER TABLE … ALTER
//     [COLUMN] c [SET DATA] TYPE … [USING <expression>], MySQL/MariaDB MODIFY and
//     CHANGE: every row is rewritten by the cast or the expression without the row
//     triggers (a fencing column set back to 0 or rounded by a FLOAT, numeric(19,-6)
//     rounding every balance; red-team rt36a F1); and MySQL/MariaDB ALTER IGNORE
//     TABLE, which deletes the rows a new unique key or partitioning rejects (F6);
//   - PostgreSQL CREATE [FOREIGN] TABLE … PARTITION OF and CREATE TABLE … INHERITS
//     (…) that name a guarded table (red-team rt34d F5): no row moves, but the new
//     relative holds the guarded table's rows under a name this pool does not guard —
//     its guarded names (a guarded table's partitions and inheritance children, read at
//     its first connection) are fixed once statements have run, and other pools read
//     them when they open. Re-reading them after the statement was weighed and not
//     done: the pool's rewriter and statement caches would change under running
//     statements, and every pool already open elsewhere would still write the new
//     relative unfenced. Create partitions on a plain connection (the migration role),
//     before the pools that write them open, as for one attached by another client.
//
// A statement is judged when it names a guarded table (or one of its relatives) by an
// identifier: the partition's own table, the table it becomes a partition or child of,
// or the table a partition is exchanged with. Maintenance that keeps the rows where they
// are (ADD, COALESCE, REORGANIZE, REBUILD, ANALYZE/CHECK/OPTIMIZE/REPAIR PARTITION,
// PARTITION BY, REMOVE PARTITIONING) passes under WithDDL like any other DDL.

// mysqlRowMoves are, on MySQL/MariaDB, the words that start an ALTER TABLE clause
// moving rows when the word after one of them is in the list it maps to.
var mysqlRowMoves = map[string][]string{
	"TRUNCATE": {"PARTITION"},
	"DROP":     {"PARTITION"},
	"EXCHANGE": {"PARTITION"},
	"DISCARD":  {"PARTITION", "TABLESPACE"},
	"IMPORT":   {"PARTITION", "TABLESPACE"},
	"CONVERT":  {"PARTITION", "TABLE"},
}

// rowMoves refuses, whatever WithDDL allows, the statement at sig[first] (head its
// head keyword, upper-cased) when it is partition or inheritance DDL that moves rows
// into or out of a guarded table without its row triggers, or makes a new partition
// or inheritance child of one (see above). Any other statement is left to the DDL rule.
func (p *parser) rowMoves(head string, first int) error {
	to := first
	for to < len(p.sig) && !p.punct(to, ";") {
		to++
	}
	if !p.mentionsGuardIn(first, to) {
		return nil
	}
	var what string
	switch head {
	case "ALTER":
		what = p.alterMovesRows(first, to)
	case "CREATE":
		what = p.createsRelative(first, to)
	}
	if what == "" {
		return nil
	}
	return unsupported(p.firstGuard(), "%s on a pool with guarded tables, whatever WithDDL allows: like TRUNCATE, it moves rows into or out of a guarded table "+
		"without its row triggers (no tombstone for a row that leaves, no check of a row that arrives, rows rewritten unfenced), or makes a partition or inheritance child the pool "+
		"does not guard by its name; run partition maintenance on a plain connection (the migration role), and open the pools after it", what)
}

// alterMovesRows returns the clause (upper-cased, e.g. "ALTER TABLE … DETACH
// PARTITION") by which the ALTER statement sig[first:to] moves rows of a table
// without its row triggers, or "" when it has none or is not an ALTER TABLE.
func (p *parser) alterMovesRows(first, to int) string {
	tbl := p.alterTableAt(first, to)
	if tbl < 0 {
		return ""
	}
	if p.kwIn(first+1, "IGNORE") || p.kwIn(first+2, "IGNORE") {
		// MySQL/MariaDB: the rows that duplicate a new unique key, or fit no partition
		// of a new partitioning, are deleted without the DELETE trigger.
		return "ALTER IGNORE TABLE"
	}
	clause := func(i, n int) string {
		words := make([]string, n)
		for k := range words {
			words[k] = strings.ToUpper(p.text(p.sig[i+k]))
		}
		return "ALTER TABLE … " + strings.Join(words, " ")
	}
	mysql := p.rw.syn == sqllex.MySQL
	starts, _ := p.alterActionStarts(tbl+1, to) // an unread start of a guarded table: guardColumns
	for _, i := range p.topLevel(tbl+1, to) {
		switch {
		case !mysql && p.kw(i, "TYPE") && !p.kwIn(i-1, "ALTER", "COLUMN") && (p.kw(i-1, "DATA") && p.kw(i-2, "SET") || p.kwIn(i-2, "ALTER", "COLUMN")):
			// ALTER [COLUMN] c [SET DATA] TYPE t: every row rewritten by the cast (a
			// numeric(19,-6) rounds every value), or by a USING expression.
			return "ALTER TABLE … ALTER COLUMN … TYPE"
		case mysql && starts[i] && p.kwIn(i, "MODIFY", "CHANGE"):
			// MODIFY/CHANGE [COLUMN] c type: every row converted (a FLOAT rounds tokens).
			return "ALTER TABLE … " + strings.ToUpper(p.text(p.sig[i]))
		case p.kwIn(i, "ATTACH", "DETACH") && p.kw(i+1, "PARTITION"):
			return clause(i, 2)
		case starts[i] && p.kw(i, "INHERIT"):
			return clause(i, 1)
		case starts[i] && p.kw(i, "NO") && p.kw(i+1, "INHERIT"):
			return clause(i, 2)
		}
		if mysql && p.sig[i].Kind == sqllex.KindWord {
			if next, ok := mysqlRowMoves[strings.ToUpper(p.text(p.sig[i]))]; ok && p.kwIn(i+1, next...) {
				return clause(i, 2)
			}
		}
	}
	return ""
}

// createsRelative returns the clause ("CREATE TABLE … PARTITION OF", "CREATE TABLE …
// INHERITS") by which the CREATE statement sig[first:to] makes a table a partition or
// an inheritance child, or "".
func (p *parser) createsRelative(first, to int) string {
	depth := 0
	for i := first + 1; i < to; i++ {
		switch {
		case p.punct(i, "("):
			depth++
		case p.punct(i, ")"):
			depth--
		case depth != 0:
		case p.kw(i, "PARTITION") && p.kw(i+1, "OF"):
			return "CREATE TABLE … PARTITION OF"
		case p.kw(i, "INHERITS") && p.punct(i+1, "("):
			return "CREATE TABLE … INHERITS"
		}
	}
	return ""
}
