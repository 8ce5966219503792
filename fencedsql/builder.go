package fencedsql

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
	refs    []argRef
	nUser   int
	tokN    string // "$n" for the token (numbered), "?" otherwise
	verN    string
	usedVer bool
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

// copy appends src[from:to] and the user placeholders inside it.
func (b *builder) copy(from, to int) {
	b.sb.WriteString(b.p.src[from:to])
	if b.p.rw.numbered {
		return
	}
	for _, t := range b.p.sig {
		if t.Kind == sqllex.KindParam && t.Start >= from && t.End <= to {
			b.refs = append(b.refs, argRef(b.indexOf(t)))
		}
	}
}

// indexOf returns the user argument index of a positional placeholder token.
func (b *builder) indexOf(t sqllex.Token) int {
	i := 0
	for _, u := range b.p.sig {
		if u.Kind == sqllex.KindParam {
			if u.Start == t.Start {
				return i
			}
			i++
		}
	}
	return -1
}

func (b *builder) write(s string) { b.sb.WriteString(s) }

// gap writes a blank if the source text resuming at offset at does not start with
// one, so inserted text never glues onto the next keyword ("… END WHERE", not "ENDWHERE").
func (b *builder) gap(at int) {
	if at < len(b.p.src) {
		switch b.p.src[at] {
		case ' ', '\t', '\n', '\r', '\f', ';', ')', ',':
		default:
			b.sb.WriteByte(' ')
		}
	}
}
func (b *builder) token() { b.sb.WriteString(b.tokN); b.ref(argToken) }
func (b *builder) version() {
	b.sb.WriteString(b.verN)
	b.ref(argVersion)
	b.usedVer = true
}
func (b *builder) ref(r argRef) {
	if !b.p.rw.numbered {
		b.refs = append(b.refs, r)
	}
}

func (b *builder) finish(kind stmtKind, g *guard) *plan {
	pl := &plan{kind: kind, guard: g, sql: b.sb.String(), nUser: b.nUser}
	if b.p.rw.numbered {
		pl.args = make([]argRef, 0, b.nUser+2)
		for i := range b.nUser {
			pl.args = append(pl.args, argRef(i))
		}
		pl.args = append(pl.args, argToken)
		if b.usedVer {
			pl.args = append(pl.args, argVersion)
		}
	} else {
		pl.args = b.refs
	}
	return pl
}

// assignments writes the fencing SET items: version first, then the token, because
// MySQL evaluates single-table assignments left to right and the version expression
// reads the old token. q qualifies column references ("" for none).
func (b *builder) assignments(g *guard, q string, versioned bool) {
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
	b.write(g.qVer + " = ")
	if versioned {
		// Mismatched version with a valid token: NULL → NOT NULL violation on the version
		// column (ErrVersionConflict). A stale token is left to the token column.
		b.write("CASE WHEN " + ref(g.qVer) + " = ")
		b.version()
		b.write(" THEN " + ref(g.qVer) + " + 1 WHEN " + ref(g.qTok) + cmp)
		b.token()
		b.write(" THEN NULL ELSE " + ref(g.qVer) + " END")
	} else {
		b.write(ref(g.qVer) + " + 1")
	}
	b.write(", " + g.qTok + " = CASE WHEN " + ref(g.qTok) + cmp)
	b.token()
	b.write(" THEN ")
	b.token()
	b.write(" ELSE NULL END")
}

// spliceAssignments copies the source from byte offset from up to at (the end of a SET
// list), appends the fencing assignments (qualified by q, "" for none), and copies the
// rest of the statement.
func (b *builder) spliceAssignments(from, at int, g *guard, q string, versioned bool) {
	b.copy(from, at)
	b.write(", ")
	b.assignments(g, q, versioned)
	b.gap(at)
	b.copy(at, len(b.p.src))
}
