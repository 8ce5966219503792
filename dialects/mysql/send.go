package mysql

import (
	"database/sql/driver"
	"errors"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// go-sql-driver/mysql's own reading of a statement (docs/design.md, "The drivers' own
// lexers").
//
// With interpolateParams=true the driver substitutes the arguments into the text
// itself (mysqlConn.interpolateParams), with its own byte lexer, when the number of ?
// it finds equals the number of arguments (otherwise it prepares the statement on the
// server). That lexer differs from the server's: it starts a -- comment only before a
// blank, tab, CR or LF (the server, and MariaDB more so, also before the other control
// bytes), it closes /*/ as a whole comment (the server looks for */ after the /*), and
// it reads /*!…*/ and /*M!…*/ as comments (the server as code). Where it finds a ? the
// server reads inside a comment or literal, the argument's quote ends the server's
// literal and its value is SQL. interpolationParams re-implements that lexer
// (go-sql-driver/mysql v1.10.1) and CheckSend refuses a text whose ? are not exactly,
// by offset, the placeholders the planner's lexer finds — whatever interpolateParams
// is: such texts are pathological, and the check is a scan. A byte pre-filter
// (mayDesync) clears the texts that cannot differ first.
//
// The driver reads backslashes by the server's NO_BACKSLASH_ESCAPES status. A fenced
// statement runs only on a session the session check accepted (no
// NO_BACKSLASH_ESCAPES, no ANSI_QUOTES), so its text is compared in that reading; a
// pass-through text with a backslash is compared in both.

// desyncReason is the refusal of a text the driver's lexer reads otherwise than the
// server.
const desyncReason = "a statement text whose ? placeholders go-sql-driver/mysql's own lexer (the one it substitutes arguments with under interpolateParams=true) reads otherwise than the server: a -- followed by a control byte other than a blank, tab, CR or LF, a /*/, or an executable comment (/*!…*/, /*M!…*/) around quotes; end a -- comment with a blank and write /* */ comments in full"

// noBackslash is the server's reading under NO_BACKSLASH_ESCAPES.
var noBackslash = func() dialect.Syntax {
	s := dialect.MySQLSyntax
	s.BackslashEscapes = false
	return s
}()

// CheckSend implements dialect.SendChecker for go-sql-driver/mysql (see above). The
// driver takes no argument as an option, so only the text is judged.
func (dialectImpl) CheckSend(query string, _ []driver.NamedValue, fenced, _ bool) error {
	if !mayDesync(query) {
		return nil // the pre-filter answers most texts
	}
	if !interpolationAgrees(query, false, dialect.MySQLSyntax, true) {
		return errors.New(desyncReason)
	}
	if !fenced && hasBackslash(query) && !interpolationAgrees(query, true, noBackslash, false) {
		return errors.New(desyncReason)
	}
	return nil
}

// mayDesync is the pre-filter: the driver's lexer can leave the
// server's reading only at a -- followed by a control byte it does not take for a
// comment's start, at a /*/, /*!, /*M! or /*+, or at a $ (MySQL 9's $$ quoting, which
// the driver does not know). Most texts cost one pass over their bytes.
func mayDesync(q string) bool {
	if strings.IndexByte(q, '$') >= 0 {
		return true
	}
	for i := 0; ; i++ {
		k := strings.Index(q[i:], "--")
		if k < 0 {
			break
		}
		if i += k; i+2 < len(q) {
			if b := q[i+2]; b < ' ' && b != '\t' && b != '\n' && b != '\r' || b == 0x7f {
				return true
			}
		}
	}
	for i := 0; ; i++ {
		k := strings.Index(q[i:], "/*")
		if k < 0 {
			return false
		}
		if i += k; i+2 < len(q) {
			switch q[i+2] {
			case '/', '!', 'M', '+':
				return true
			}
		}
	}
}

func hasBackslash(q string) bool { return strings.IndexByte(q, '\\') >= 0 }

// interpolationAgrees reports whether the driver's lexer (with noBackslashEscapes)
// finds a ? exactly where the planner's lexer, with syn, finds its placeholders. strict
// says what a text syn cannot read is: refused (true), or not judged (false: the reading
// of a session the wrapper does not see, where the server would refuse it too).
func interpolationAgrees(q string, noBackslashEscapes bool, syn dialect.Syntax, strict bool) bool {
	theirs, err := dialect.Placeholders(q, syn)
	if err != nil {
		return !strict
	}
	ours := interpolationParams(q, noBackslashEscapes, nil)
	if len(ours) != len(theirs) {
		return false
	}
	for i, p := range ours {
		if p != theirs[i].Start {
			return false
		}
	}
	return true
}

// interpolationParams re-implements the state machine of go-sql-driver/mysql v1.10.1's
// mysqlConn.interpolateParams, returning the offsets of the ? it substitutes, appended
// to dst. It reads every ? (the driver stops at the first one past its arguments and
// prepares the statement instead).
func interpolationParams(q string, noBackslashEscapes bool, dst []int) []int {
	const (
		normal = iota
		str
		escape
		eolComment
		slashStarComment
		backtick
	)
	state := normal
	singleQuotes := false
	lastChar := byte(0)
	for i := 0; i < len(q); i++ {
		c := q[i]
		if state == escape && !(c == '\'' && singleQuotes || c == '"' && !singleQuotes) {
			state = str
			lastChar = c
			continue
		}
		switch c {
		case '*':
			if state == normal && lastChar == '/' {
				state = slashStarComment
			}
		case '/':
			if state == slashStarComment && lastChar == '*' {
				state = normal
				lastChar = 0
				continue
			}
		case '#':
			if state == normal {
				state = eolComment
			}
		case '-':
			if state == normal && lastChar == '-' {
				if i+1 < len(q) {
					if n := q[i+1]; n == ' ' || n == '\t' || n == '\n' || n == '\r' {
						state = eolComment
					}
				} else {
					state = eolComment
				}
			}
		case '\n':
			if state == eolComment {
				state = normal
			}
		case '"':
			switch {
			case state == normal:
				state = str
				singleQuotes = false
			case state == str && !singleQuotes:
				state = normal
			case state == escape:
				state = str
			}
		case '\'':
			switch {
			case state == normal:
				state = str
				singleQuotes = true
			case state == str && singleQuotes:
				state = normal
			case state == escape:
				state = str
			}
		case '\\':
			if state == str && !noBackslashEscapes {
				state = escape
			}
		case '?':
			if state == normal {
				dst = append(dst, i)
			}
		case '`':
			if state == backtick {
				state = normal
			} else if state == normal {
				state = backtick
			}
		}
		lastChar = c
	}
	return dst
}

var _ dialect.SendChecker = dialectImpl{}
