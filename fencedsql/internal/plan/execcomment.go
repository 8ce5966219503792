package plan

import (
	"errors"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// MySQL and MariaDB run the content of an executable comment as statement text:
// /*! … */ always, /*!NNNNN … */ and /*!NNNNNN … */ when the server's version is at
// least NNNNN(N), /*M! … */ and /*M!NNNNNN … */ on MariaDB only. An optimizer hint
// /*+ … */ is never statement text: its content goes to the hint parser, or nowhere.
// Which reading a server takes depends on its product and version, which the rewriter
// does not know, so on a pool with guarded tables a text holding executable comments
// passes only if every reading the server may take would pass on its own, with the
// same allowlist as any other text (rewrite, planners and all: dynamic SQL, text-level
// transaction control, routine DDL, guard objects, protected settings, writes), and
// every reading that writes or claims a guarded table is planned like the text itself
// (the same kind of plan for the same table). An executable comment the lexer cannot
// delimit, whose version prefix is not five or six digits, or so many conditional
// comments that their readings cannot all be judged, is refused.

// maxExecReadings bounds the readings judged for one text; more is refused.
const maxExecReadings = 64

// execVariants returns what the server may read in place of one executable comment
// (txt is the whole token, "/*" … "*/"): its content, written out between blanks, for
// every version-prefix split, and a blank when the server may skip it. ok is false for
// a version prefix that is neither five nor six digits.
func execVariants(txt string) (variants []string, ok bool) {
	body := strings.TrimSuffix(txt, "*/")
	conditional := false
	switch {
	case strings.HasPrefix(body, "/*+"):
		return []string{" "}, true // a hint: never statement text
	case strings.HasPrefix(body, "/*M!"):
		body, conditional = body[4:], true // MariaDB only
	case strings.HasPrefix(body, "/*!"):
		body = body[3:]
	default:
		return nil, false
	}
	n := 0
	for n < len(body) && body[n] >= '0' && body[n] <= '9' {
		n++
	}
	switch n {
	case 0:
		variants = []string{" " + body + " "}
	case 5:
		variants, conditional = []string{" " + body[5:] + " "}, true
	case 6:
		// MariaDB reads six digits of version, MySQL five and the sixth as content.
		variants, conditional = []string{" " + body[6:] + " ", " " + body[5:] + " "}, true
	default:
		return nil, false
	}
	if conditional {
		variants = append(variants, " ")
	}
	return variants, true
}

// execReadings returns every text the server may run for src (tokens toks), each
// executable comment replaced by one of its variants; ok is false when a comment
// cannot be classified or the readings exceed maxExecReadings. nil, true: src holds
// no executable comment.
func execReadings(src string, toks []sqllex.Token) (readings []string, ok bool) {
	type slot struct {
		tok      sqllex.Token
		variants []string
	}
	var slots []slot
	total := 1
	for _, t := range toks {
		if t.Kind != sqllex.KindExecComment {
			continue
		}
		v, ok := execVariants(src[t.Start:t.End])
		if !ok {
			return nil, false
		}
		if total *= len(v); total > maxExecReadings {
			return nil, false
		}
		slots = append(slots, slot{t, v})
	}
	if len(slots) == 0 {
		return nil, true
	}
	seen := make(map[string]bool, total)
	choice := make([]int, len(slots))
	for {
		var b strings.Builder
		last := 0
		for i, s := range slots {
			b.WriteString(src[last:s.tok.Start])
			b.WriteString(s.variants[choice[i]])
			last = s.tok.End
		}
		b.WriteString(src[last:])
		if r := b.String(); !seen[r] {
			seen[r] = true
			readings = append(readings, r)
		}
		// next combination
		i := 0
		for ; i < len(slots); i++ {
			if choice[i]++; choice[i] < len(slots[i].variants) {
				break
			}
			choice[i] = 0
		}
		if i == len(slots) {
			return readings, true
		}
	}
}

// checkExecReadings judges the readings of a text holding executable comments (see
// the top of this file), after the text itself was planned as pl: nil when every
// reading passes the rewriter and plans what pl plans; otherwise a *Refusal carrying the reading's refusal, or saying why the comments cannot
// be judged. Off a pool with guarded tables, and for text without executable
// comments, it does nothing and does not allocate.
func (p *parser) checkExecReadings(pl *Plan, versioned bool) error {
	if len(p.rw.names) == 0 || !p.rw.syn.ExecComments || !hasExecComment(p.all) {
		return nil
	}
	readings, ok := execReadings(p.src, p.all)
	if !ok {
		return unsupported("", "an executable comment (/*!…*/, /*M!…*/) whose reading cannot be classified (a version prefix other than five or six digits, or more than %d readings of conditional comments) on a pool with guarded tables", maxExecReadings)
	}
	for _, r := range readings {
		toks, err := sqllex.Lex(r, p.rw.syn)
		if err != nil || hasExecComment(toks) {
			return unsupported("", "an executable comment whose content, written out, cannot be read (or holds another executable comment) on a pool with guarded tables")
		}
		rp, err := p.rw.Rewrite(r, versioned)
		if err != nil {
			var ue *Refusal
			if errors.As(err, &ue) {
				return &Refusal{Table: ue.Table, Reason: "with its executable comments run as the server may run them: " + ue.Reason}
			}
			return err
		}
		p.savepoint = p.savepoint || rp.TxOnly != nil
		p.implicitCommit = p.implicitCommit || rp.ImplicitCommit != nil
		p.runsDynamic = p.runsDynamic || rp.Dynamic
		if rp.Kind != pl.Kind || rp.Kind != KindPass && rp.Guard.Base() != pl.Guard.Base() {
			return unsupported(pl.Guard.String(), "an executable comment changes what the statement does to a guarded table (read as the server may run it, it is a %v of %q; as written, a %v): the rewriter can fence only one", rp.Kind, rp.Guard.String(), pl.Kind)
		}
	}
	return nil
}

// hasExecComment reports whether toks hold an executable comment.
func hasExecComment(toks []sqllex.Token) bool {
	for _, t := range toks {
		if t.Kind == sqllex.KindExecComment {
			return true
		}
	}
	return false
}

// hasExecOpener reports whether sql holds the opening of an executable comment or
// hint anywhere (strings included): the test for text the lexer could not read.
func hasExecOpener(sql string) bool {
	return strings.Contains(sql, "/*!") || strings.Contains(sql, "/*M!") || strings.Contains(sql, "/*+")
}

// unreadable decides, on a pool with guarded tables, a text the lexer cannot read
// (lexErr): it is refused when it could hold an executable comment (MySQL/MariaDB) or
// create a routine, trigger, rule or event (mayCreateRoutine, unless WithDDL) — the
// server may run what the wrapper cannot see. nil leaves the decision to the caller's
// other rules.
func (rw *Planner) unreadable(sql string, lexErr error) error {
	if len(rw.names) == 0 {
		return nil
	}
	if rw.syn.ExecComments && hasExecOpener(sql) {
		return unsupported("", "an executable comment (/*!…*/, /*M!…*/, /*+…*/) the lexer cannot delimit on a pool with guarded tables (%v): the server could run its content, which the wrapper cannot read", lexErr)
	}
	if !rw.allowDDL && mayCreateRoutine(sql) {
		return unsupported("", "text that cannot be tokenized (%v) and may create a routine, trigger, rule or event, on a pool with guarded tables: create it on a plain connection, or allow it with fencedsql.WithDDL(true)", lexErr)
	}
	return nil
}
