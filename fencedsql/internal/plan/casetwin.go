package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// caseTwin refuses a fenced write or claim (a plan other than KindPass) on PostgreSQL that names a guarded table
// in a quoted identifier whose letters differ in case from the guard's ("Accounts"
// next to accounts). PostgreSQL reads a quoted name exactly: it is another table,
// which the guards map (keyed case-folded) would take for the guarded one, so the
// statement would be rewritten with the guarded table's fencing columns while the
// lazy schema check verified only the guarded table's — a twin whose token column is
// nullable would store the fencing NULL. The wrapper cannot guard a mixed-case
// table name (docs/design.md, "Fail closed, but an availability cost"), so such a
// statement is refused, nothing sent. An unquoted name is folded to lower case by
// the server and is the guarded table itself. MySQL/MariaDB (whose case rule is a
// server setting) and SQLite (case-insensitive) are left to the schema checks.
func (p *parser) caseTwin() error {
	if p.rw.syn != sqllex.Postgres {
		return nil
	}
	for _, t := range p.sig {
		if t.Kind != sqllex.KindQuotedIdent {
			continue
		}
		n, quoted, ok := sqllex.Ident(p.src, t)
		if !ok || !quoted {
			continue
		}
		gs := p.rw.guards[p.rw.Key(n)]
		if len(gs) == 0 {
			continue
		}
		twin := strings.ToLower(n) != n
		for _, g := range gs {
			if n == g.Name {
				twin = false
			}
		}
		if twin {
			return unsupported(gs[0].String(), "the statement names %q, which PostgreSQL reads as another table than the guarded %s (a quoted name differing only in letter case); the wrapper cannot guard it", n, gs[0].String())
		}
	}
	return nil
}
