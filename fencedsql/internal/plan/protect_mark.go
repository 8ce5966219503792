package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// The one-statement DELETE's mark (dialect.DeleteFencer) tells the guard and tombstone
// triggers which token the statement deletes under: on PostgreSQL a setting with the
// reserved prefix, on MySQL/MariaDB a user variable with it. A statement through the
// wrapper may not set either — it could let a plain DELETE past the row guard or lower
// the token a tombstone records — even inside a plain read (SELECT @v := …,
// SELECT set_config(…)), so protect refuses:
//
//   - set_config whose (literal) name has the reserved prefix (protectSetConfig);
//   - any mention of a user variable with the reserved prefix: @fencedsql_…, in any
//     quoting (@`…`, @'…', @"…"), read or written.

// protectMark refuses a user variable with the reserved prefix in sig[from:to]. Only
// MySQL/MariaDB have user variables: PostgreSQL's @ is an operator (absolute value, its
// mark is protectSetConfig's) and SQLite's @name a parameter.
func (p *parser) protectMark(from, to int) error {
	if p.rw.syn == sqllex.Postgres || p.rw.syn == sqllex.SQLite {
		return nil
	}
	for i := from; i+1 < to; i++ {
		if !p.punct(i, "@") || p.sig[i+1].Start != p.sig[i].End {
			continue
		}
		var name string
		ok := true
		if t := p.sig[i+1]; t.Kind != sqllex.KindWord && t.End-t.Start == 2 {
			continue // @`` @'' @"": an empty name is not the mark
		}
		switch t := p.sig[i+1]; t.Kind {
		case sqllex.KindString:
			if txt := p.text(t); txt[0] != '\'' && txt[0] != '"' {
				continue // @B'…', @X'…', @_utf8'…': the variable is the prefix word, not the mark
			}
			name, ok = plainString(p.text(t))
		case sqllex.KindWord, sqllex.KindQuotedIdent:
			name, ok = p.ident(i + 1)
		default:
			continue
		}
		if !ok || isGuardObject(name) {
			return unsupported("", "a user variable with the reserved prefix %s on a pool with guarded tables: it is the mark of the wrapper's one-statement DELETE", guardPrefix)
		}
	}
	return nil
}
