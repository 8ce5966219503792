// The guards' copy of the token floor: calls that could set a sequence.

package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// protectSequenceCall judges PostgreSQL's setval(seq, …) or nextval(seq) whose
// arguments start at i: the guards keep a copy of the token floor in a sequence with
// the reserved prefix, which setval could lower (and nextval raise). The sequence must
// be a string literal that does not mention the prefix (nor the SQL lock backend's
// token source, lockTokenSource) and is not an OID (digits), or
// pg_get_serial_sequence of such literals (the form frameworks reset sequences with); a
// name computed any other way, or passed as a parameter, could be the guards'.
func (p *parser) protectSequenceCall(fn string, i int) error {
	refuse := func(why string) error {
		return unsupported("", "%s whose sequence %s on a pool with guarded tables: the guards keep the token floor's copy in the sequence %s…, which only fencedsql-schema changes", strings.ToLower(fn), why, guardPrefix)
	}
	// literal: sig[k] is a whole argument, a plain string without the prefix,
	// optionally cast (::regclass, ::text).
	literal := func(k int) bool {
		if k >= len(p.sig) || p.sig[k].Kind != sqllex.KindString {
			return false
		}
		name, ok := plainString(p.text(p.sig[k]))
		if !ok || stringMentions(p.text(p.sig[k]), guardPrefix) != "" || mentionsLockTokenSource(name) {
			return false
		}
		// regclass reads an all-digit string as an OID ('36205'): any relation.
		if t := strings.TrimLeft(name, " \t\n\r\f\v"); t == "" || t[0] >= '0' && t[0] <= '9' {
			return false
		}
		if p.punct(k+1, "::") && p.isIdent(k+2) {
			k += 2
		}
		return p.punct(k+1, ",") || p.punct(k+1, ")")
	}
	if literal(i) {
		return nil
	}
	k := i
	if p.isIdent(k) && p.punct(k+1, ".") {
		if n, ok := p.ident(k); !ok || !strings.EqualFold(n, "pg_catalog") {
			return refuse("is not a string literal without the reserved prefix")
		}
		k += 2
	}
	if n, ok := p.ident(k); ok && p.isIdent(k) && strings.EqualFold(n, "pg_get_serial_sequence") && p.punct(k+1, "(") &&
		literal(k+2) && p.punct(k+3, ",") && literal(k+4) && p.punct(k+5, ")") {
		return nil
	}
	return refuse("is not a string literal without the reserved prefix")
}

// mentionsLockTokenSource reports whether a sequence name as a string ('s', 'sch.s',
// '"s"') names the SQL lock backend's token source in its last part.
func mentionsLockTokenSource(name string) bool {
	if i := strings.LastIndexByte(name, '.'); i >= 0 {
		name = name[i+1:]
	}
	return lockTokenSource(strings.Trim(strings.TrimSpace(name), `"`))
}
