package plan

import (
	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Routine bodies in a multi-statement text. A CREATE of a trigger or routine whose body
// is a block holds ';' that do not end the statement: SQLite's CREATE [TEMP] TRIGGER …
// BEGIN stmt; … END, PostgreSQL's CREATE [OR REPLACE] FUNCTION/PROCEDURE … BEGIN ATOMIC
// stmt; … END, MySQL/MariaDB's CREATE … TRIGGER/FUNCTION/PROCEDURE/EVENT whose body is
// BEGIN … END (with nested BEGIN … END blocks). controlEach judges such a statement
// once, by its CREATE (DDL: WithDDL decides, and every rule on the whole text still
// applies), instead of taking the body's END for transaction control (red-team rt50d
// F2). The CREATE does not run its body.
//
// The span must never reach past the statement's end as the server reads it: the
// pieces after it would then escape controlEach (a COMMIT, a BEGIN, dynamic SQL). So
// the span is recognised only where the server's grammar fixes where it ends, and
// anything else is left to the piece-by-piece judgement (stricter: the body's END is
// refused as before):
//   - SQLite and PostgreSQL: the body closes at the first END that starts a statement
//     (a trigger's or BEGIN ATOMIC body's statements cannot start with END, and do not
//     nest blocks); that piece must be END alone.
//   - MySQL/MariaDB: the body's BEGIN is found where the header ends (after FOR EACH
//     ROW [FOLLOWS|PRECEDES t], an event's DO, or a routine's parameter list, RETURNS
//     type and characteristics), optionally labelled; nested blocks are counted only
//     where a statement starts (a piece's first word, or a label at it), and a bare END
//     (not END IF/LOOP/WHILE/REPEAT/CASE/FOR) starting a piece closes one. A block the
//     count misses (after THEN, ELSE, DO, a handler's FOR …) only closes the span
//     early, which leaves the rest to the stricter judgement.

// routineBodyEnd returns, for the statement starting at sig[from], the sig index just
// past it (its final ';' or len(sig)) when it is a CREATE whose block body spans
// several ';'-separated pieces (see above), or -1.
func (p *parser) routineBodyEnd(from int) int {
	if !p.kw(from, "CREATE") {
		return -1
	}
	kind, at := p.routineKindAt(from + 1)
	if kind == "" {
		return -1
	}
	pieces := p.pieces()
	k := 0
	for k < len(pieces) && pieces[k][0] < from {
		k++
	}
	if k == len(pieces) || pieces[k][0] != from {
		return -1 // the CREATE is not at a top-level statement start
	}
	end := pieces[k][1]
	var j int
	switch {
	case p.rw.syn == sqllex.SQLite && kind == "TRIGGER":
		open := p.firstTopLevel(at, end, func(i int) bool { return p.kw(i, "BEGIN") })
		if open < 0 || open+1 >= end || p.kw(open+1, "END") {
			return -1
		}
		j = p.firstEndPiece(pieces, k)
	case p.rw.syn == sqllex.Postgres && (kind == "FUNCTION" || kind == "PROCEDURE"):
		open := p.firstTopLevel(at, end, func(i int) bool { return p.kw(i, "BEGIN") && p.kw(i+1, "ATOMIC") })
		if open < 0 || open+2 >= end || p.kw(open+2, "END") {
			return -1
		}
		j = p.firstEndPiece(pieces, k)
	case p.rw.syn.ExecComments && kind != "RULE" && kind != "PACKAGE":
		open := p.mysqlBodyOpener(kind, at, end)
		if open < 0 || open+1 >= end || p.kw(open+1, "END") {
			return -1
		}
		j = p.mysqlBlockEnd(pieces, k)
	default:
		return -1
	}
	if j <= k {
		return -1
	}
	return pieces[j][1]
}

// routineKindAt is routineKindAfter that also returns the kind word's index (-1 and ""
// for none).
func (p *parser) routineKindAt(i int) (string, int) {
	kind := p.routineKindAfter(i)
	if kind == "" {
		return "", -1
	}
	for ; i < len(p.sig); i++ {
		if p.kw(i, kind) {
			return kind, i
		}
	}
	return "", -1
}

// firstTopLevel returns the first index in [from, to) outside parentheses for which ok
// holds, or -1.
func (p *parser) firstTopLevel(from, to int, ok func(int) bool) int {
	for _, i := range p.topLevel(from, to) {
		if ok(i) {
			return i
		}
	}
	return -1
}

// firstEndPiece returns the index of the first piece after pieces[k] that starts with
// END, when that piece is END alone; else k.
func (p *parser) firstEndPiece(pieces [][2]int, k int) int {
	for j := k + 1; j < len(pieces); j++ {
		if p.kw(pieces[j][0], "END") {
			if pieces[j][1]-pieces[j][0] == 1 {
				return j
			}
			return k
		}
	}
	return k
}

// mysqlBodyOpener returns the index of the BEGIN that opens the body of the MySQL/
// MariaDB stored program of the given kind created by sig[at:end) (at: the kind word),
// or -1 when the body does not start with a (labelled) BEGIN where the header ends.
func (p *parser) mysqlBodyOpener(kind string, at, end int) int {
	b := -1
	switch kind {
	case "TRIGGER":
		i := p.firstTopLevel(at, end, func(i int) bool { return p.kw(i, "FOR") && p.kw(i+1, "EACH") && p.kw(i+2, "ROW") })
		if i < 0 {
			return -1
		}
		b = i + 3
		if p.kwIn(b, "FOLLOWS", "PRECEDES") && p.isIdent(b+1) {
			b += 2
		}
	case "EVENT":
		i := p.firstTopLevel(at, end, func(i int) bool { return p.kw(i, "DO") })
		if i < 0 {
			return -1
		}
		b = i + 1
	case "FUNCTION", "PROCEDURE":
		open := -1
		for i := at + 1; i < end; i++ {
			if p.punct(i, "(") {
				open = i
				break
			}
		}
		if open < 0 {
			return -1
		}
		if b = p.closingParen(open, end) + 1; b <= 0 {
			return -1
		}
		if kind == "FUNCTION" {
			if b = p.skipReturnType(b, end); b < 0 {
				return -1
			}
		}
		b = p.skipCharacteristics(b)
	default:
		return -1
	}
	switch {
	case p.kw(b, "BEGIN"):
		return b
	case p.isIdent(b) && p.punct(b+1, ":") && p.kw(b+2, "BEGIN"):
		return b + 2
	}
	return -1
}

// closingParen returns the index of the ')' that closes the '(' at sig[open], before
// end, or -1.
func (p *parser) closingParen(open, end int) int {
	if k := p.matching(open); k >= 0 && k < end {
		return k
	}
	return -1
}

// skipReturnType returns the index after a MySQL function's RETURNS type at sig[b]
// (RETURNS name [(…)] and the type's modifiers), or -1 when it is not of that form.
func (p *parser) skipReturnType(b, end int) int {
	if !p.kw(b, "RETURNS") || !p.isIdent(b+1) {
		return -1
	}
	b += 2
	if p.punct(b, "(") {
		if b = p.closingParen(b, end) + 1; b <= 0 {
			return -1
		}
	}
	for {
		switch {
		case p.kwIn(b, "UNSIGNED", "SIGNED", "ZEROFILL", "PRECISION", "VARYING", "BINARY", "ASCII", "UNICODE", "BYTE"):
			b++
		case p.kwIn(b, "CHARSET", "COLLATE") && p.isIdent(b+1):
			b += 2
		case p.kwIn(b, "CHARACTER", "CHAR") && p.kw(b+1, "SET") && p.isIdent(b+2):
			b += 3
		default:
			return b
		}
	}
}

// skipCharacteristics returns the index after the MySQL routine characteristics at
// sig[b] (COMMENT '…', LANGUAGE SQL, [NOT] DETERMINISTIC, CONTAINS SQL, NO SQL, READS
// SQL DATA, MODIFIES SQL DATA, SQL SECURITY DEFINER|INVOKER).
func (p *parser) skipCharacteristics(b int) int {
	for {
		switch {
		case p.kw(b, "COMMENT") && b+1 < len(p.sig) && p.sig[b+1].Kind == sqllex.KindString:
			b += 2
		case p.kw(b, "LANGUAGE") && p.kw(b+1, "SQL"), p.kw(b, "NOT") && p.kw(b+1, "DETERMINISTIC"),
			p.kwIn(b, "CONTAINS", "NO") && p.kw(b+1, "SQL"):
			b += 2
		case p.kw(b, "DETERMINISTIC"):
			b++
		case p.kwIn(b, "READS", "MODIFIES") && p.kw(b+1, "SQL") && p.kw(b+2, "DATA"),
			p.kw(b, "SQL") && p.kw(b+1, "SECURITY") && p.kwIn(b+2, "DEFINER", "INVOKER"):
			b += 3
		default:
			return b
		}
	}
}

// mysqlBlockEnd returns the index of the piece whose END closes the body block opened
// in pieces[k], counting blocks only where a statement starts (see the top of the
// file); k when the count does not close, or the closing piece holds more than END
// [label].
func (p *parser) mysqlBlockEnd(pieces [][2]int, k int) int {
	depth := 1
	for j := k + 1; j < len(pieces); j++ {
		h, n := pieces[j][0], pieces[j][1]-pieces[j][0]
		open := h
		if p.isIdent(h) && p.punct(h+1, ":") {
			open = h + 2
		}
		switch {
		case p.kw(open, "BEGIN") && open+1 < pieces[j][1] && !p.punct(open+1, ":") && !p.kwIn(open+1, "WORK", "TRANSACTION"):
			if !p.kw(open+1, "END") { // BEGIN END [label]: opened and closed
				depth++
			}
		case p.kw(h, "END") && !p.kwIn(h+1, "IF", "LOOP", "WHILE", "REPEAT", "CASE", "FOR"):
			if depth--; depth == 0 {
				if n == 1 || n == 2 && p.isIdent(h+1) {
					return j
				}
				return k
			}
		}
	}
	return k
}
