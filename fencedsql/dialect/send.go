package dialect

import (
	"database/sql/driver"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// The client driver's own lexer (docs/design.md, "The drivers' own lexers").
//
// The planner reads a statement as the server does (sqllex) and places the token in
// it. Some client drivers read the text too, with their own small lexers, before the
// server sees it: pgx substitutes the arguments into the text under its simple
// protocol (internal/sanitize), go-sql-driver/mysql under interpolateParams=true. Where
// the driver's lexer splits the text otherwise than the server's, an argument lands
// inside what the server reads as a literal or comment, and the argument's own quote
// turns the rest of its value into SQL that can comment the fencing out. Some drivers
// also take some argument values as options instead of values (pgx.NamedArgs rewrites
// the text and replaces the argument list; pgx.QueryExecMode is removed from it), which
// moves the token's argument after the wrapper placed it.

// SendChecker is implemented by a dialect whose client driver may read a statement's
// text or arguments otherwise than the server and the planner do.
//
// CheckSend is called before the wrapper sends a statement, with the text and the
// arguments exactly as they go to the wrapped driver:
//
//   - fenced is true for every statement of a plan that is not sent as the caller
//     wrote it — a guarded write, the fencing UPDATE of a DELETE or a claim, a claimed
//     read, a one-statement DELETE or claim: every text that carries the token. A
//     non-nil error refuses the statement: the wrapper returns it as an
//     *fencedsql.UnsupportedError (errors.Is ErrUnsupported) with the error's text as
//     the reason, and sends nothing.
//   - fenced is false for a statement sent as the caller wrote it that has arguments
//     (a pass-through): the wrapper checks it too, since a desynchronized driver could
//     turn argument data into a write the planner never saw. The dialect must not
//     refuse an argument the driver accepts honestly there (pgx.NamedArgs on an
//     unguarded table).
//   - textClass is true for a statement whose text or bound arguments the wrapper
//     judges as SQL text (plan.Plan.TextClass: it runs dynamic SQL, or is DDL), fenced
//     or not: the dialect refuses there, as in a fenced statement, every argument the
//     driver takes as an option rather than a value, since it would move or replace
//     the arguments the wrapper judged (red-team rt55e F2). The text is checked as
//     fenced says.
//
// The dialect must answer ordinary text at next to no cost: a byte pre-filter that
// never passes a text the driver reads otherwise than the server (property-tested),
// and the full scan only for the texts it cannot clear.
//
// The check depends on the text and the arguments only, never on a connection's
// settings (the exec mode, interpolateParams): a text the driver's lexer reads
// otherwise than the server is refused whatever the mode, since such texts are
// pathological and the check costs a scan of the text. It must not panic on any input
// and must send nothing (go-sqlmock users see no extra statement).
type SendChecker interface {
	CheckSend(query string, args []driver.NamedValue, fenced, textClass bool) error
}

// Placeholder is one placeholder of a statement's text as the server reads it: the
// byte offsets of its first byte and one past its last, and its number ($n; 0 for ?).
type Placeholder struct {
	Start, End, Num int
}

// Placeholders returns the placeholders of query read with syn's lexical rules, the
// planner's lexer, which follows the server: the reading a driver's lexer must agree
// with. It fails when the lexer cannot read query.
func Placeholders(query string, syn Syntax) ([]Placeholder, error) {
	toks, err := sqllex.Lex(query, syn)
	if err != nil {
		return nil, err
	}
	var out []Placeholder
	for _, t := range toks {
		if t.Kind == sqllex.KindParam {
			out = append(out, Placeholder{Start: t.Start, End: t.End, Num: t.Num})
		}
	}
	return out, nil
}
