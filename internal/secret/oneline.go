package secret

import (
	"errors"
	"strconv"
	"strings"
	"unicode"
)

// ErrNotOneLine is the error (errors.Is) of a value holding a secret — a DSN, a
// redis:// address — that is not one line (ControlAt finds a character in it).
var ErrNotOneLine = errors.New("the value is not one line: it holds a line break or another control character")

// ControlAt returns the byte offset of the first control character of s — a line break
// (\n, \r, U+0085, U+2028, U+2029), NUL, any other C0 or C1 control, DEL — or -1 when
// it has none. A tab is not one: pgx's keyword/value form separates its pairs with
// blanks, tabs included.
//
// A DSN is one line: no driver's form needs a control character, and a DSN that holds
// one was read with text that is not the DSN — the other lines of an env file
// (PGPASSWORD=…, REDIS_URL=redis://:pw@…), which a driver's parse error quotes whole
// and whose secrets Passwords does not find, since the DSN does not name them as its
// passwords (red-team rt45e F3). Callers refuse such a value, never quoting it
// (NotOneLine).
func ControlAt(s string) int {
	return strings.IndexFunc(s, func(r rune) bool {
		return r != '\t' && (unicode.IsControl(r) || r == '\u2028' || r == '\u2029')
	})
}

// NotOneLine returns an error (ErrNotOneLine) saying that what, a name for the value in
// words ("-dsn-file: /etc/app/dsn", "the DSN"), is not one line, when ControlAt finds a
// control character in v; nil when it finds none. The error says how many lines v has,
// never what they hold.
func NotOneLine(what, v string) error {
	if ControlAt(v) < 0 {
		return nil
	}
	if lines := len(strings.FieldsFunc(v, func(r rune) bool { return r == '\n' || r == '\r' })); lines > 1 {
		return &notOneLineError{what: what, detail: "has " + strconv.Itoa(lines) + " lines"}
	}
	return &notOneLineError{what: what, detail: "holds a line break or another control character"}
}

type notOneLineError struct{ what, detail string }

func (e *notOneLineError) Error() string {
	return e.what + " " + e.detail + ": a DSN or address is one line — give it alone (not an env file's other lines), without control characters; its text is not shown, it may hold a password"
}

func (e *notOneLineError) Is(target error) bool { return target == ErrNotOneLine }
