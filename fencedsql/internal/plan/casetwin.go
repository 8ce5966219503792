package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// caseTwin refuses a fenced write or claim (a plan other than KindPass) that names a
// case twin of a guarded table: a name the guards map would take for the guarded one
// but the server reads as another table. The statement would be rewritten with the
// guarded table's fencing columns while the lazy schema check verified only the
// guarded table's — a twin whose token column is nullable would store the fencing
// NULL. The wrapper cannot guard a mixed-case table name (docs/design.md, "Fail
// closed, but an availability cost"), so such a statement is refused, nothing sent.
// The twins:
//
//   - PostgreSQL: a guarded name in a quoted identifier whose letters differ in case
//     from the guard's as the server reads it ("Accounts" next to accounts, also when
//     the guard was listed as Accounts or ACCOUNTS, which PostgreSQL folds to
//     accounts): PostgreSQL reads a quoted name exactly. An unquoted name is folded
//     (ASCII letters) by the server and is the guarded table itself.
//   - PostgreSQL: a quoted qualifier with upper-case ASCII letters before a guarded
//     name ("S".accounts next to s.accounts): Lookup does not see the quotes and
//     folds qualifiers, so it is refused here.
//   - PostgreSQL and SQLite: a name equal to a guarded one under Unicode case folding
//     but not under the server's ASCII-only folding (CAFÉ next to café), quoted or
//     not (Lookup gives it a derived guard so that its writes are planned).
//
// Identifier tokens are judged except those in an alias's place (notTableRef: after
// AS, after ")" or a quoted identifier, or before "."), where no table is named: a
// quoted alias spelled like a twin (UPDATE accounts AS "Accounts") is no twin. A
// twin alias written after an unquoted word (FROM other "Accounts") is still refused
// (the word may be a keyword such as JOIN): an over-refusal. MySQL/MariaDB (whose case
// rule is a server setting) keeps the written spelling of the name and database in
// its derived guards and is left to the lazy schema check.
func (p *parser) caseTwin() error {
	rw := p.rw
	if rw.syn == sqllex.MySQL {
		return nil
	}
	for i, t := range p.sig {
		if t.Kind != sqllex.KindQuotedIdent && t.Kind != sqllex.KindWord {
			continue
		}
		n, quoted, ok := sqllex.Ident(p.src, t)
		if !ok {
			continue
		}
		gs := rw.guards[rw.Key(n)]
		alias := p.notTableRef(i)
		if len(gs) == 0 && !alias {
			if ts := rw.twins[strings.ToLower(rw.Key(n))]; len(ts) > 0 {
				return unsupported(ts[0].String(), "the statement names %q, which the server reads as another table than the guarded %s (a name differing only in the case of a non-ASCII letter, which the server does not fold); the wrapper cannot guard it", n, ts[0].String())
			}
		}
		if rw.syn != sqllex.Postgres || !quoted {
			continue
		}
		if sqllex.LowerASCII(n) != n && i+2 < len(p.sig) && p.punct(i+1, ".") {
			if m, ok := p.identAt(i + 2); ok && (rw.guards[rw.Key(m)] != nil || rw.twins[strings.ToLower(rw.Key(m))] != nil) {
				return unsupported(m, "the statement qualifies the guarded name %q with the quoted %q, which PostgreSQL reads as another schema than %q (a quoted name differing only in letter case); the wrapper cannot guard it", m, n, sqllex.LowerASCII(n))
			}
		}
		if len(gs) == 0 || alias {
			continue
		}
		twin := sqllex.LowerASCII(n) != n
		for _, g := range gs {
			// A guard's name is configured unquoted (fenced_tables, Guard,
			// RegisterTables): PostgreSQL reads it with its ASCII letters folded, so a
			// listing of ACCOUNTS guards accounts, and the quoted "ACCOUNTS" is its
			// twin, not the guarded table (red-team rt51f F1).
			if n == sqllex.LowerASCII(g.Name) {
				twin = false
			}
		}
		if twin {
			return unsupported(gs[0].String(), "the statement names %q, which PostgreSQL reads as another table than the guarded %s (a quoted name differing only in letter case); the wrapper cannot guard it", n, gs[0].String())
		}
	}
	return nil
}

// notTableRef reports whether the identifier at sig[i] stands where no table
// reference can: after AS (a table, subquery or column alias; a CTE's name comes before
// its AS), after ")" (a subquery's alias) or a quoted identifier (an alias written
// without AS), or before "." (a qualifier: of a column, or a schema, which the
// qualifier rule of caseTwin judges).
func (p *parser) notTableRef(i int) bool {
	if p.punct(i+1, ".") {
		return true
	}
	if i == 0 {
		return false
	}
	return p.kw(i-1, "AS") || p.punct(i-1, ")") || p.sig[i-1].Kind == sqllex.KindQuotedIdent
}

// identAt returns the identifier (quoted or not) of significant token i.
func (p *parser) identAt(i int) (string, bool) {
	t := p.sig[i]
	if t.Kind != sqllex.KindQuotedIdent && t.Kind != sqllex.KindWord {
		return "", false
	}
	n, _, ok := sqllex.Ident(p.src, t)
	return n, ok
}
