package plan

import (
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// builder assembles rewritten SQL from slices of the source and inserted text, and the
// argument list in placeholder order.
type builder struct {
	p       *parser
	sb      strings.Builder
	refs    []ArgRef
	nUser   int
	tokN    string // "$n" for the token (numbered), "?" otherwise
	verN    string
	usedVer bool
	// numbered only: every placeholder written, in output order, so that finish can
	// renumber them when items dropped from the statement took user placeholders along.
	nums    []placeholder
	dropped [][2]int // byte ranges of the source left out (see plan.dropped)
	compact bool     // the output uses only some of the user's placeholders: renumber them
	// INSERT only, for the parameter limit (finishInsert): the VALUES rows written (1
	// for MySQL's SET form), the caller's placeholders they carry in all, and in the
	// widest one.
	rows, inRows, maxRow int
	// paramIndex's position: placeholders among sig[:posAt] are posN.
	posAt, posN int
	keys        []int // output offsets of row key slots (keySlot)
	recording   bool  // assignments: the version's expression records the row key
	// listAt, listArg: a listed DELETE's key list slot (Plan.ListAt, Plan.ListArg).
	listAt, listArg int
}

func (p *parser) newBuilder(nUser int) *builder {
	b := &builder{p: p, nUser: nUser}
	b.sb.Grow(len(p.src) + 160)
	if p.rw.numbered {
		b.tokN = "$" + strconv.Itoa(nUser+1)
		b.verN = "$" + strconv.Itoa(nUser+2)
	} else {
		b.tokN, b.verN = "?", "?"
	}
	return b
}

// placeholder is one $n written to the output: its byte offset and length there, and
// what it stands for.
type placeholder struct {
	at, n int
	ref   ArgRef
}

// copy appends src[from:to] and the user placeholders inside it. It visits only the
// tokens inside the range (found by binary search), so building a statement costs time
// linear in its length however many pieces it is copied in (a VALUES batch: one per row).
func (b *builder) copy(from, to int) {
	if from < to {
		b.join(b.p.src[from])
	}
	base := b.sb.Len()
	b.sb.WriteString(b.p.src[from:to])
	sig := b.p.sig
	for i := b.sigFrom(from); i < len(sig) && sig[i].Start < to; i++ {
		t := sig[i]
		if t.Kind != sqllex.KindParam || t.End > to {
			continue
		}
		if b.p.rw.numbered {
			b.nums = append(b.nums, placeholder{at: base + t.Start - from, n: t.End - t.Start, ref: ArgRef(t.Num - 1)})
		} else {
			b.refs = append(b.refs, ArgRef(b.paramIndex(i)))
		}
	}
}

// sigFrom returns the index of the first significant token starting at byte offset off
// or later (len(sig) for none).
func (b *builder) sigFrom(off int) int {
	lo, hi := 0, len(b.p.sig)
	for lo < hi {
		m := int(uint(lo+hi) >> 1)
		if b.p.sig[m].Start < off {
			lo = m + 1
		} else {
			hi = m
		}
	}
	return lo
}

// copyExcept appends src[from:to] without the byte ranges of e.
func (b *builder) copyExcept(from, to int, e listEdit) {
	for _, s := range e.skips {
		if s[1] <= from || s[0] >= to {
			continue
		}
		b.copy(from, s[0])
		b.dropped = append(b.dropped, s)
		from = s[1]
		// What was before and after the dropped text must not glue into one token
		// (SET"fence_token",$1 without its first item is SET $1, not SET$1).
		if out := b.sb.String(); len(out) > 0 && from < to && Glues(out[len(out)-1], b.p.src[from]) {
			b.write(" ")
		}
	}
	b.copy(from, to)
}

// paramIndex returns the user argument index of the positional placeholder sig[i]: the
// placeholders before it. The count is kept between calls (posAt, posN), so copies in
// statement order count each token once.
func (b *builder) paramIndex(i int) int {
	if i < b.posAt {
		b.posAt, b.posN = 0, 0
	}
	for ; b.posAt < i; b.posAt++ {
		if b.p.sig[b.posAt].Kind == sqllex.KindParam {
			b.posN++
		}
	}
	return b.posN
}

// write appends inserted text.
func (b *builder) write(s string) {
	if s != "" {
		b.join(s[0])
	}
	b.sb.WriteString(s)
}

// join keeps the output's last bytes and the next byte from opening a comment that was
// not in the source: MySQL reads "--" followed by anything but a blank or control byte
// as two minus signs, so "1--" then " WHERE …" would turn the inserted text into a
// comment (and "-" then "-" would make "--" anywhere). An empty comment between them
// keeps every token what it was.
func (b *builder) join(next byte) {
	out := b.sb.String()
	n := len(out)
	if n > 0 && out[n-1] == '-' && (next == '-' || next <= ' ' && n > 1 && out[n-2] == '-') {
		b.sb.WriteString("/**/")
	}
}

// params returns the number of placeholders written so far (the caller's and the
// wrapper's).
func (b *builder) params() int {
	if b.p.rw.numbered {
		return len(b.nums)
	}
	return len(b.refs)
}

// countRow records one INSERT row that carries n of the caller's placeholders.
func (b *builder) countRow(n int) {
	b.rows++
	b.inRows += n
	b.maxRow = max(b.maxRow, n)
}

// gap writes a blank if the source text resuming at offset at does not start with
// one, so inserted text never glues onto the next keyword ("… END WHERE", not "ENDWHERE").
func (b *builder) gap(at int) {
	if at < len(b.p.src) {
		switch b.p.src[at] {
		case ' ', '\t', '\n', '\r', '\f', ';', ')', ',':
		default:
			b.write(" ")
		}
	}
}
func (b *builder) token() { b.placeholder(b.tokN, ArgToken) }

// tokenSlot stands for the token in a dialect's SQL fragment (dialect.TokenSlot).
const tokenSlot = "\x00"

// slots writes a dialect's SQL fragment with a token placeholder for each tokenSlot.
func (b *builder) slots(fragment string) {
	for i, part := range strings.Split(fragment, tokenSlot) {
		if i > 0 {
			b.token()
		}
		b.write(part)
	}
}
func (b *builder) version() {
	b.placeholder(b.verN, ArgVersion)
	b.usedVer = true
}

// placeholder writes one of the wrapper's own placeholders.
func (b *builder) placeholder(text string, r ArgRef) {
	if b.p.rw.numbered {
		b.nums = append(b.nums, placeholder{at: b.sb.Len(), n: len(text), ref: r})
	} else {
		b.refs = append(b.refs, r)
	}
	b.sb.WriteString(text)
}

func (b *builder) finish(kind Kind, g *Table) *Plan {
	pl := &Plan{Kind: kind, Guard: g, SQL: b.sb.String(), NUser: b.nUser, Dropped: b.dropped}
	if !b.p.rw.numbered {
		pl.Args = b.refs
		return pl
	}
	pl.Args = make([]ArgRef, 0, b.nUser+2)
	renumber := len(b.dropped) > 0 || b.compact
	if !renumber {
		for i := range b.nUser {
			pl.Args = append(pl.Args, ArgRef(i))
		}
	} else {
		// Some user placeholders may have left with the dropped items: bind only those
		// still referenced, renumbered in order.
		used := make([]bool, b.nUser)
		for _, ph := range b.nums {
			if ph.ref >= 0 && int(ph.ref) < b.nUser {
				used[ph.ref] = true
			}
		}
		for i, u := range used {
			if u {
				pl.Args = append(pl.Args, ArgRef(i))
			}
		}
	}
	pl.Args = append(pl.Args, ArgToken)
	if b.usedVer {
		pl.Args = append(pl.Args, ArgVersion)
	}
	if renumber {
		pl.SQL = b.renumber(pl.Args)
	}
	return pl
}

// renumber rewrites the output's $n placeholders to their position in args: some user
// placeholders were dropped with the items that held them, and PostgreSQL refuses a
// parameter that the statement never references.
func (b *builder) renumber(args []ArgRef) string {
	pos := make(map[ArgRef]int, len(args))
	for i, r := range args {
		pos[r] = i + 1
	}
	out := b.sb.String()
	var sb strings.Builder
	sb.Grow(len(out))
	last := 0
	for _, ph := range b.nums {
		sb.WriteString(out[last:ph.at])
		sb.WriteString("$" + strconv.Itoa(pos[ph.ref]))
		last = ph.at + ph.n
	}
	sb.WriteString(out[last:])
	return sb.String()
}

// assignments writes the fencing SET items: version first, then the token, because
// MySQL evaluates single-table assignments left to right and the version expression
// reads the old token. q qualifies column references ("" for none).
func (b *builder) assignments(g *Table, q string, versioned bool) {
	rw := b.p.rw
	ref := func(col string) string {
		if q == "" {
			return col
		}
		return q + "." + col
	}
	cmp := " <= "
	if rw.strict {
		cmp = " < "
	}
	b.write(g.QVer + " = ")
	if versioned {
		// Mismatched version with a valid token: NULL → NOT NULL violation on the version
		// column (ErrVersionConflict). A stale token is left to the token column.
		b.write("CASE WHEN " + ref(g.QVer) + " = ")
		b.version()
		b.write(" THEN " + ref(g.QVer) + " + 1 WHEN " + ref(g.QTok) + cmp)
		b.token()
		b.write(" THEN NULL ELSE " + ref(g.QVer) + " END")
	} else {
		b.write(ref(g.QVer) + " + 1")
	}
	if b.recording {
		b.recordKeys()
	}
	b.write(", " + g.QTok + " = CASE WHEN " + ref(g.QTok) + cmp)
	b.token()
	b.write(" THEN ")
	b.token()
	if b.p.rw.numbered {
		// Typed, so that the CASE is BIGINT in every pgx query exec mode: the simple
		// protocol sends the token as a quoted literal, and a CASE whose branches are
		// an untyped literal and NULL would be TEXT.
		b.write("::bigint")
	}
	b.write(" ELSE NULL END")
}

// spliceAssignments copies the source from byte offset from up to at (the end of a SET
// list) without the items e drops, appends the fencing assignments (qualified by q, ""
// for none), and copies the rest of the statement.
func (b *builder) spliceAssignments(from, at int, e listEdit, g *Table, q string, versioned bool) {
	b.setListAt(from, at, e, g, q, versioned)
	b.copy(at, len(b.p.src))
}

// setListAt is spliceAssignments without the rest: the caller continues copying at at.
func (b *builder) setListAt(from, at int, e listEdit, g *Table, q string, versioned bool) {
	b.copyExcept(from, at, e)
	if e.kept > 0 {
		b.write(", ")
	}
	b.assignments(g, q, versioned)
	b.gap(at)
}

// Glues reports whether bytes a and b, side by side, could read as one token: two word
// bytes (SET$1, xWHERE) or the start of a comment (--, /*).
func Glues(a, b byte) bool {
	word := func(c byte) bool {
		return c == '_' || c == '$' || c >= '0' && c <= '9' || c|0x20 >= 'a' && c|0x20 <= 'z' || c >= 0x80
	}
	return word(a) && word(b) || a == '-' && b == '-' || a == '/' && b == '*'
}
