package postgres

import (
	"database/sql/driver"
	"errors"
	"fmt"
	"math"
	"strings"
	"unicode/utf8"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// pgx's own reading of a statement (docs/design.md, "The drivers' own lexers").
//
// pgx reads two things the server does not see: option arguments and, under the
// simple protocol, the text itself.
//
//   - Options. pgx's Exec and Query (and pgx's database/sql driver, which passes the
//     values through) take leading arguments of the types pgx.QueryRewriter
//     (pgx.NamedArgs, pgx.StrictNamedArgs, …), pgx.QueryExecMode,
//     pgx.QueryResultFormats and pgx.QueryResultFormatsByOID as options: a rewriter
//     renumbers the text's @names and replaces the whole argument list, the others are
//     removed from it. Either moves or drops the token the wrapper placed after the
//     caller's arguments. A statement that carries the token refuses any argument of
//     these types, wherever it stands; so does a statement that runs dynamic SQL or is DDL
//     (textClass), whose bound text the wrapper judges by its arguments' ordinals and
//     whose text it reads for placeholders (red-team rt55e F2). fencedpgx reads them off before planning (it
//     applies a rewriter, and keeps the exec mode for sending), so its final arguments
//     never hold one.
//   - Text. Under the simple protocol (the DSN's default_query_exec_mode=
//     simple_protocol, or a pgx.QueryExecModeSimpleProtocol argument) pgx substitutes
//     the arguments into the text with its own lexer (internal/sanitize), which
//     differs from PostgreSQL's: it opens an E-string at any e' (name'\' too), does not
//     know the continuation of an E-string over a newline, opens a dollar quote at a $
//     inside an identifier (a$$) and takes a $1 glued to a name for a placeholder, and
//     stops at the first invalid UTF-8 byte, dropping the rest of the text. Where it
//     sees a $n the server reads inside a literal or comment, the argument's quote ends
//     the server's literal and its value is SQL. pgxParams re-implements that lexer
//     (pgx v5.12.0) and CheckSend refuses a text whose $n, at their offsets and with
//     their numbers, are not exactly the placeholders the planner's lexer finds —
//     whatever the exec mode: such texts are pathological, and the check is a scan. A
//     byte pre-filter (mayDesync) clears the texts that cannot differ first.

// optionArg reports whether v is an argument pgx takes as an option, and which.
func optionArg(v any) (string, bool) {
	switch v.(type) {
	case pgx.QueryRewriter:
		return fmt.Sprintf("%T (a pgx.QueryRewriter)", v), true
	case pgx.QueryExecMode:
		return "pgx.QueryExecMode", true
	case pgx.QueryResultFormats:
		return "pgx.QueryResultFormats", true
	case pgx.QueryResultFormatsByOID:
		return "pgx.QueryResultFormatsByOID", true
	}
	return "", false
}

// namedArgsReason is the refusal of pgx's named arguments in a fenced statement.
const namedArgsReason = "pgx named arguments (%s) in a write to a guarded table, or a statement that runs dynamic SQL or is DDL, through database/sql: pgx would rewrite the text and replace the arguments after the wrapper placed the fencing token or judged them; use fencedpgx, which applies pgx.NamedArgs before it fences the statement, or $n placeholders"

// optionReason is the refusal of pgx's other option arguments in a fenced statement.
const optionReason = "a pgx option argument (%s) in a write to a guarded table, or a statement that runs dynamic SQL or is DDL, through database/sql: pgx removes it from the arguments, which moves the fencing token's; set the exec mode or result formats in the DSN or the pgx config, or use fencedpgx, which takes these options per call"

// desyncReason is the refusal of a text pgx's lexer reads otherwise than PostgreSQL.
const desyncReason = "a statement text whose $n placeholders pgx's own lexer (the one it substitutes arguments with under the simple protocol) reads otherwise than PostgreSQL: an e' or E' after a name (name'…'), an E'…' string continued over a newline, a $ inside a name (a$$, a$1) or an invalid UTF-8 byte; write the literal with a blank or a cast (name '…', '…'::name), in one piece, and names without $"

// CheckSend implements dialect.SendChecker for pgx (see above).
func (dialectImpl) CheckSend(query string, args []driver.NamedValue, fenced, textClass bool) error {
	if fenced || textClass {
		for _, a := range args {
			what, ok := optionArg(a.Value)
			if !ok {
				continue
			}
			if _, rw := a.Value.(pgx.QueryRewriter); rw {
				return fmt.Errorf(namedArgsReason, what)
			}
			return fmt.Errorf(optionReason, what)
		}
	}
	// The pre-filter answers most texts; a fenced one must also be valid UTF-8 (pgx
	// drops what follows an invalid byte, the fencing with it).
	if !mayDesync(query) && (!fenced || utf8.ValidString(query)) {
		return nil
	}
	if !pgxAgrees(query) {
		return errors.New(desyncReason)
	}
	return nil
}

// mayDesync is the pre-filter: pgx's lexer can leave
// PostgreSQL's reading only at a $ that does not start a placeholder of both (a dollar
// quote one of them does not open, a $1 glued to a name), or at an e' or E' in a text
// with a backslash (an E-string PostgreSQL does not open, or whose continuation pgx
// does not know: E-strings and standard strings end at the same quote unless a
// backslash escapes one). A text without these is read alike by both up to where pgx
// may stop (an invalid UTF-8 byte: pgx then drops the rest of the text, which ends it
// early but puts no argument elsewhere), so most texts cost one pass over their bytes.
func mayDesync(q string) bool {
	for i := 0; ; i++ {
		k := strings.IndexByte(q[i:], '$')
		if k < 0 {
			break
		}
		i += k
		if i+1 >= len(q) || q[i+1] < '0' || q[i+1] > '9' || i > 0 && identByte(q[i-1]) {
			return true // a dollar quote, or a$1: a name to PostgreSQL, a placeholder to pgx
		}
	}
	if strings.IndexByte(q, '\\') < 0 {
		return false
	}
	for i := 0; ; i++ {
		k := strings.IndexByte(q[i:], '\'')
		if k < 0 {
			return false
		}
		if i += k; i > 0 && q[i-1]|0x20 == 'e' {
			return true
		}
	}
}

func identByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
}

// pgxAgrees reports whether pgx's lexer finds exactly the placeholders PostgreSQL's
// (the planner's) does in q: the same offsets and numbers, and the whole text read. A
// text the planner's lexer cannot read does not agree.
func pgxAgrees(q string) bool {
	ours, complete := pgxParams(q, nil)
	if !complete {
		return false
	}
	theirs, err := dialect.Placeholders(q, dialect.PostgresSyntax)
	if err != nil {
		return false // nothing to compare with: refused
	}
	if len(ours) != len(theirs) {
		return false
	}
	for i, p := range ours {
		if p.pos != theirs[i].Start || p.num != theirs[i].Num {
			return false
		}
	}
	return true
}

// pgxParam is one placeholder pgx's sanitizer substitutes: the offset of its $ and its
// number.
type pgxParam struct{ pos, num int }

// pgxParams re-implements the state machine of pgx v5.12.0's internal/sanitize lexer
// (sqlLexer: rawState, singleQuoteState, doubleQuoteState, escapeStringState,
// oneLineCommentState, multilineCommentState, placeholderState, dollarQuoteState),
// returning the placeholders it substitutes, appended to dst, and whether it read the
// whole text (false: it stopped at an invalid UTF-8 byte and drops what follows).
func pgxParams(q string, dst []pgxParam) (params []pgxParam, complete bool) {
	const (
		raw = iota
		single
		double
		escape
		line
		block
		dollar
	)
	state, pos, nested, tag := raw, 0, 0, ""
	// stop is pgx's utf8.RuneError case: the end of the text (width 0), or an invalid
	// byte (width 1), where pgx stops; U+FFFD itself (width 3) is a character.
	stop := func(w int) bool { return w != 3 }
	for {
		if state == dollar {
			// pgx finds the closing tag with strings.Index, bytes and all; unterminated,
			// it keeps the rest of the text as it is.
			k := strings.Index(q[pos:], "$"+tag+"$")
			if k < 0 {
				return dst, true
			}
			pos += k + len(tag) + 2
			state = raw
			continue
		}
		r, w := utf8.DecodeRuneInString(q[pos:])
		pos += w
		if r == utf8.RuneError && stop(w) {
			return dst, w == 0
		}
		switch state {
		case raw:
			switch r {
			case 'e', 'E':
				if next, w2 := utf8.DecodeRuneInString(q[pos:]); next == '\'' {
					pos += w2
					state = escape
				}
			case '\'':
				state = single
			case '"':
				state = double
			case '$':
				next, _ := utf8.DecodeRuneInString(q[pos:])
				if '0' <= next && next <= '9' {
					start, num := pos-w, 0
					for pos < len(q) && '0' <= q[pos] && q[pos] <= '9' {
						if num > (math.MaxInt32-9)/10 {
							num = math.MaxInt32
						} else {
							num = num*10 + int(q[pos]-'0')
						}
						pos++
					}
					dst = append(dst, pgxParam{pos: start, num: num})
				} else if n, ok := pgxDollarTag(q[pos:]); ok {
					tag = q[pos : pos+n]
					pos += n + 1
					state = dollar
				}
			case '-':
				if next, w2 := utf8.DecodeRuneInString(q[pos:]); next == '-' {
					pos += w2
					state = line
				}
			case '/':
				if next, w2 := utf8.DecodeRuneInString(q[pos:]); next == '*' {
					pos += w2
					state = block
				}
			}
		case single, double:
			quote := '\''
			if state == double {
				quote = '"'
			}
			if r == quote {
				if next, w2 := utf8.DecodeRuneInString(q[pos:]); next == quote {
					pos += w2
				} else {
					state = raw
				}
			}
		case escape:
			switch r {
			case '\\':
				_, w2 := utf8.DecodeRuneInString(q[pos:])
				pos += w2
			case '\'':
				if next, w2 := utf8.DecodeRuneInString(q[pos:]); next == '\'' {
					pos += w2
				} else {
					state = raw
				}
			}
		case line:
			if r == '\n' || r == '\r' {
				state = raw
			}
		case block:
			switch r {
			case '/':
				if next, w2 := utf8.DecodeRuneInString(q[pos:]); next == '*' {
					pos += w2
					nested++
				}
			case '*':
				if next, w2 := utf8.DecodeRuneInString(q[pos:]); next == '/' {
					pos += w2
					if nested == 0 {
						state = raw
					} else {
						nested--
					}
				}
			}
		}
	}
}

// pgxDollarTag is pgx's scanDollarQuoteTag: whether src (just past a $) starts with
// an optional tag and a closing $, and the tag's length. Tags follow PostgreSQL's
// dolq_start [A-Za-z_\x80-\xff] and dolq_cont [A-Za-z0-9_\x80-\xff], by rune, a
// non-ASCII rune counting only when it is valid UTF-8.
func pgxDollarTag(src string) (int, bool) {
	first := true
	for i := 0; i < len(src); {
		r, w := utf8.DecodeRuneInString(src[i:])
		if r == '$' {
			return i, true
		}
		ok := r == '_' || 'a' <= r && r <= 'z' || 'A' <= r && r <= 'Z' ||
			!first && '0' <= r && r <= '9' || r >= 0x80 && r != utf8.RuneError
		if !ok {
			return 0, false
		}
		first = false
		i += w
	}
	return 0, false
}

var _ dialect.SendChecker = dialectImpl{}
