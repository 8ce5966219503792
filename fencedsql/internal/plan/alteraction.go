package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Where the actions of an ALTER TABLE start (docs/design.md, G9 "DDL that changes a
// column the guards read"; red-team rt43c F1). The refusals of DDL that changes a
// column the guards read (guardcolumn.go), rewrites or moves rows (rowmove.go) or
// moves a guarded table's name (tablemove.go) judge each action by its first words,
// so they must know where each action starts:
//
//	PostgreSQL  ALTER [FOREIGN] TABLE [IF EXISTS] [ONLY] name [*] action [, action]…
//	MySQL/      ALTER [ONLINE] [IGNORE] TABLE [IF EXISTS] name [WAIT n | NOWAIT]
//	MariaDB       action [, action]… [partition_options]
//	SQLite      ALTER TABLE [schema.]name action
//
// MariaDB's lock-wait clause (WAIT n, NOWAIT; n a number, which MariaDB also takes
// after a '+', as 1.5, 0x10 or 1e1) stands between the name and the first action: read
// as the first action's start, it hid `ALTER TABLE ledger NOWAIT DROP COLUMN
// fence_token, ADD COLUMN fence_token … DEFAULT 0` from the guard-column refusal, and
// `… NOWAIT MODIFY fence_token FLOAT` from the row-rewrite one (rt43c F1). MariaDB
// 10.11 and MySQL 8 accept nothing else there, and separate the actions by commas
// (table options may follow each other without one, an action never follows a table
// option or ORDER BY without one: a syntax error on the server), so an action starts
// after the name and its lock-wait clause and after each comma outside parentheses
// and brackets.
//
// Fail closed: each action must start with a word the dialect starts an action with
// (alterActionWords; on MySQL/MariaDB also any word followed by '=', an engine-defined
// table option). An action start the planner does not recognise is reported (unread),
// and the refusals refuse the statement when it alters a guarded table, rather than
// judge actions whose starts they may have misplaced. After ORDER BY and a partition
// command's name list (ANALYZE PARTITION p0, p1 …), a comma separates names, not
// actions: there a name is not reported, but a word that starts an action still counts
// as a start.

// alterActionWords are, per dialect, the words (upper-cased) an ALTER TABLE action
// starts with: MySQL/MariaDB's actions and table options, PostgreSQL 15's and SQLite's
// actions.
var alterActionWords = map[sqllex.Syntax]map[string]bool{
	sqllex.Postgres: wordSet(`ADD ALTER ATTACH CLUSTER DETACH DISABLE DROP ENABLE FORCE INHERIT NO NOT OF
		OPTIONS OWNER RENAME REPLICA RESET SET VALIDATE`),
	sqllex.MySQL: wordSet(`ADD ALGORITHM ALTER ANALYZE CHANGE CHECK COALESCE CONVERT DISABLE DISCARD DROP
		ENABLE EXCHANGE FORCE IMPORT LOCK MODIFY OPTIMIZE ORDER PARTITION REBUILD REMOVE RENAME REORGANIZE
		REPAIR SECONDARY_LOAD SECONDARY_UNLOAD TRUNCATE UPGRADE VALIDATION WITH WITHOUT
		AUTOEXTEND_SIZE AUTO_INCREMENT AVG_ROW_LENGTH CHARACTER CHARSET CHECKSUM COLLATE COMMENT COMPRESSION
		CONNECTION DATA DEFAULT DELAY_KEY_WRITE ENCRYPTED ENCRYPTION ENCRYPTION_KEY_ID ENGINE ENGINE_ATTRIBUTE
		IETF_QUOTES INDEX INSERT_METHOD KEY_BLOCK_SIZE MAX_ROWS MIN_ROWS PACK_KEYS PAGE_CHECKSUM
		PAGE_COMPRESSED PAGE_COMPRESSION_LEVEL PASSWORD ROW_FORMAT SECONDARY_ENGINE SECONDARY_ENGINE_ATTRIBUTE
		SEQUENCE STATS_AUTO_RECALC STATS_PERSISTENT STATS_SAMPLE_PAGES STORAGE TABLESPACE TABLE_CHECKSUM
		TRANSACTIONAL UNION`),
	sqllex.SQLite: wordSet(`ADD DROP RENAME`),
}

// alterNameLists are the MySQL/MariaDB action words after which commas separate names
// (ORDER BY a, b; ANALYZE PARTITION p0, p1), not actions: ORDER, and the partition
// commands followed by PARTITION.
var alterNameLists = wordSet(`ORDER ANALYZE CHECK OPTIMIZE REBUILD REPAIR REORGANIZE TRUNCATE DROP DISCARD
	IMPORT COALESCE EXCHANGE`)

// alterActionStarts returns the sig indexes in [from, to) (after ALTER … TABLE) where
// an ALTER TABLE action may start: after [IF EXISTS] [ONLY] name [*] and, on
// MySQL/MariaDB, the lock-wait clause (WAIT n | NOWAIT), and after each comma outside
// parentheses and brackets (see above). unread is the sig index of the first action
// start whose first word the planner does not recognise (alterActionWords), or -1:
// the callers refuse the statement then when it alters a guarded table (fail closed).
// Where the name cannot be read, every top-level position counts as a start and
// unread is -1 (the callers then judge every clause wherever it stands, and count the
// table as guarded when the statement names one anywhere).
func (p *parser) alterActionStarts(from, to int) (starts map[int]bool, unread int) {
	starts = map[int]bool{}
	unread = -1
	i := from
	if p.kw(i, "IF") && p.kw(i+1, "EXISTS") {
		i += 2
	}
	if p.kw(i, "ONLY") {
		i++
	}
	r, ok := p.parseName(i)
	if !ok {
		depth := 0
		for k := from; k < to; k++ {
			switch {
			case p.punct(k, "(") || p.punct(k, "["):
				depth++
			case p.punct(k, ")") || p.punct(k, "]"):
				depth--
			case depth == 0:
				starts[k] = true
			}
		}
		return starts, -1
	}
	first := p.afterAlterPrelude(r.end)
	starts[first] = true
	depth := 0
	for k := first; k < to; k++ {
		switch {
		case p.punct(k, "(") || p.punct(k, "["):
			depth++
		case p.punct(k, ")") || p.punct(k, "]"):
			depth--
		case depth == 0 && p.punct(k, ","):
			starts[k+1] = true
		}
	}
	mysql := p.rw.syn == sqllex.MySQL
	words := alterActionWords[p.rw.syn]
	names := false // a comma now separates the names of ORDER BY or a partition command
	for _, k := range p.topLevel(first, to) {
		if !starts[k] {
			continue
		}
		word := ""
		if k < to && p.sig[k].Kind == sqllex.KindWord {
			word = strings.ToUpper(p.text(p.sig[k]))
		}
		switch {
		case words[word]:
			if mysql && alterNameLists[word] && (word == "ORDER" || p.kw(k+1, "PARTITION")) {
				names = true
			}
		case word != "" && mysql && p.punct(k+1, "="):
			// an engine-defined table option (MariaDB): name = value
		case names && p.isIdent(k):
			// a name of the list, not an action
		case p.sig[k].Kind == sqllex.KindExecComment:
			// MySQL/MariaDB: each reading of the comment (its content written out, or
			// a blank) is judged on its own (execcomment.go)
		default:
			if unread < 0 {
				unread = k
			}
		}
	}
	return starts, unread
}

// afterAlterPrelude returns the sig index of an ALTER TABLE's first action, given end,
// the index just after the table's name: past PostgreSQL's `*` and MySQL/MariaDB's
// lock-wait clause, WAIT [+]n or NOWAIT. A WAIT without a number after it is left
// where it stands, an action start the caller does not recognise.
func (p *parser) afterAlterPrelude(end int) int {
	switch {
	case p.rw.numbered && p.punct(end, "*"):
		return end + 1
	case p.rw.syn != sqllex.MySQL:
		return end
	case p.kw(end, "NOWAIT"):
		return end + 1
	case p.kw(end, "WAIT"):
		k := end + 1
		if p.punct(k, "+") {
			k++
		}
		if k < len(p.sig) && p.sig[k].Kind == sqllex.KindNumber {
			return k + 1
		}
	}
	return end
}

// alterTableAt returns the sig index of TABLE in the ALTER statement sig[first:to] —
// ALTER [ONLINE|OFFLINE] [IGNORE] TABLE (MySQL/MariaDB), ALTER [FOREIGN] TABLE
// (PostgreSQL) — or -1 when it is not an ALTER TABLE.
func (p *parser) alterTableAt(first, to int) int {
	tbl := first + 1
	for tbl < to && tbl < first+3 && p.kwIn(tbl, "ONLINE", "OFFLINE", "IGNORE", "FOREIGN") {
		tbl++
	}
	if !p.kw(tbl, "TABLE") {
		return -1
	}
	return tbl
}
