package plan

import "github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"

// A dialect may make its one-statement DELETE's fence a condition of the DELETE (a
// dialect.DeleteFencer with a mark and no check): the database then evaluates the fence
// beside the caller's condition, cheapest part first by declared cost. That is exact —
// the fence judges only the rows the DELETE deletes — when the caller's condition is
// plain, and the wrapper sends the two statements otherwise:
//
//   - no subquery (a semi-join can have the table's own conditions pushed below it:
//     the fence would judge every row of the table) and no window;
//   - no call but of operator keywords, type modifiers and built-in scalar functions
//     (scalarCall): a user's function may be declared more expensive than the fence;
//   - operators of the built-in spellings only (plainOperators), no two operator
//     characters glued into a longer one (=== is a user's operator, and so its
//     function), and casts to built-in types only (builtinTypes): a user's cast calls a
//     user's function;
//   - no ANY, SOME or ALL: an array's elements multiply its comparison's declared cost,
//     and an array is one token (a literal, a bound parameter the database plans with);
//   - at most maxPlainTokens tokens: a condition's declared cost grows with its
//     operators, and past the fence's (1000 operators' worth on PostgreSQL) the
//     database would evaluate the fence first.
//
// The rule reads spellings; the database resolves them, and may resolve one to a
// user's object (a function of a built-in's name with an exact signature, a user's
// operator of a built-in spelling on its argument types). Its cost then decides the
// order, and a fence evaluated first can only refuse the statement (a newer row the
// rest of the condition would not select), never let a write through. Code it runs
// inside the statement is the dialect's row guard's to judge (PostgreSQL: the
// mark).

// maxPlainTokens bounds a plain condition's size.
const maxPlainTokens = 256

// plainOperators are the operator tokens a plain condition may hold.
var plainOperators = map[string]bool{
	"(": true, ")": true, ",": true, ".": true, "=": true, "<": true, ">": true, "<=": true,
	">=": true, "<>": true, "!=": true, "+": true, "-": true, "*": true, "/": true, "%": true,
	"||": true, "::": true, "[": true, "]": true,
}

// brackets are the plainOperators that are not operator characters.
var brackets = map[string]bool{"(": true, ")": true, ",": true, ".": true, "[": true, "]": true}

// builtinTypes are the type names a plain condition may cast to.
var builtinTypes = map[string]bool{
	"smallint": true, "integer": true, "int": true, "int2": true, "int4": true, "int8": true,
	"bigint": true, "real": true, "float4": true, "float8": true, "double": true,
	"numeric": true, "decimal": true, "text": true, "varchar": true, "char": true,
	"character": true, "bpchar": true, "boolean": true, "bool": true, "date": true,
	"time": true, "timestamp": true, "timestamptz": true, "timetz": true, "interval": true,
	"uuid": true, "bytea": true, "json": true, "jsonb": true, "inet": true, "cidr": true,
	"oid": true, "name": true, "bit": true, "varbit": true,
}

// plainCondition reports whether sig[from:to], a DELETE's condition, is plain (see
// above).
func (p *parser) plainCondition(from, to int) bool {
	if to-from > maxPlainTokens {
		return false
	}
	for k := from; k < to; k++ {
		t := p.sig[k]
		switch t.Kind {
		case sqllex.KindPunct:
			op := p.text(t)
			if !plainOperators[op] {
				return false
			}
			if next := k + 1; next < to && p.sig[next].Kind == sqllex.KindPunct && p.sig[next].Start == t.End &&
				!brackets[op] && !brackets[p.text(p.sig[next])] {
				return false // glued operator characters: a longer operator
			}
			continue
		case sqllex.KindWord, sqllex.KindQuotedIdent:
		default:
			continue
		}
		name := p.foldedAt(k)
		if name == "" {
			return false
		}
		quoted := t.Kind != sqllex.KindWord
		switch {
		case !quoted && (oneQueryWords[name] || name == "exists" || name == "operator" || name == "any" || name == "some" || name == "all"):
			return false
		case p.punct(k+1, "(") && (quoted || !p.scalarCall(k, name)):
			return false
		case (p.punct(k-1, "::") || p.kw(k-1, "AS")) && !builtinTypes[name]:
			return false // a cast to a type that is not built in
		}
	}
	return true
}
