package sqllex

import (
	"errors"
	"math/rand"
	"strconv"
	"strings"
	"testing"
)

// multiOps are the only multi-byte KindPunct tokens the lexer may produce.
var multiOps = map[string]bool{
	"<=": true, ">=": true, "<>": true, "!=": true, "==": true, "=>": true,
	"<=>": true, "<<": true, ">>": true, "||": true, "&&": true, "::": true,
	":=": true, "->": true, "->>": true, "@>": true, "<@": true, "@@": true,
	"~*": true, "!~": true, "!~*": true, "?|": true, "?&": true, "#>": true,
	"#>>": true,
}

var knownMsgs = map[string]bool{
	msgNUL: true, msgBOM: true, msgString: true, msgQuotedIdent: true,
	msgDollarString: true, msgComment: true, msgExecComment: true,
	msgAmbiguousExec: true, msgAmbiguousDashes: true, msgDollar: true,
	msgQuestion: true, msgNamedParam: true, msgParamRange: true,
	msgNumberJunk: true,
}

// checkTokens verifies the lexer's invariants on a successful result and
// returns a description of the first violation, or "".
func checkTokens(src string, toks []Token, syn Syntax) string {
	pos := 0
	var sb strings.Builder
	for i, t := range toks {
		if t.Start != pos {
			return "token " + itoa(i) + " does not start where the previous ended"
		}
		if t.End <= t.Start || t.End > len(src) {
			return "token " + itoa(i) + " is empty or out of range"
		}
		if t.Kind != KindParam && t.Num != 0 {
			return "Num set on a non-param token"
		}
		sb.WriteString(src[t.Start:t.End])
		pos = t.End
		if msg := checkShape(src, t, syn); msg != "" {
			return "token " + itoa(i) + " " + t.Kind.String() + " " + msg
		}
		if t.Kind == KindSpace && i > 0 && toks[i-1].Kind == KindSpace {
			return "adjacent space tokens"
		}
		if msg := checkRelex(src, t, syn); msg != "" {
			return "token " + itoa(i) + " " + t.Kind.String() + " " + msg
		}
	}
	if pos != len(src) {
		return "tokens do not cover the input"
	}
	if sb.String() != src {
		return "re-concatenation differs from the input"
	}
	return ""
}

func itoa(i int) string { return strconv.Itoa(i) }

func checkShape(src string, t Token, syn Syntax) string {
	text := src[t.Start:t.End]
	next := byte(0)
	if t.End < len(src) {
		next = src[t.End]
	}
	switch t.Kind {
	case KindSpace:
		for j := 0; j < len(text); j++ {
			if charClass[text[j]]&ccSpace == 0 {
				return "contains a non-space byte"
			}
		}
	case KindComment:
		switch {
		case strings.HasPrefix(text, "/*"):
			if len(text) < 4 || !strings.HasSuffix(text, "*/") {
				return "block comment not closed"
			}
		case strings.HasPrefix(text, "--"), syn.HashComments && text[0] == '#':
			if strings.IndexByte(text, '\n') >= 0 || syn.CRLineEnd && strings.IndexByte(text, '\r') >= 0 {
				return "line comment spans a line end"
			}
			if next != 0 && next != '\n' && !(syn.CRLineEnd && next == '\r') {
				return "line comment ends before the end of line"
			}
		default:
			return "bad comment start"
		}
	case KindExecComment:
		if !syn.ExecComments || !(strings.HasPrefix(text, "/*!") || strings.HasPrefix(text, "/*+") ||
			strings.HasPrefix(text, "/*M!")) || !strings.HasSuffix(text, "*/") || len(text) < 5 {
			return "bad executable comment"
		}
		return checkExecBody(text, syn)
	case KindWord:
		if charClass[text[0]]&ccIdentStart == 0 {
			return "bad first byte"
		}
		for j := 1; j < len(text); j++ {
			if !isIdentCont(text[j]) {
				return "bad byte"
			}
		}
		if next != 0 && isIdentCont(next) {
			return "word split"
		}
	case KindQuotedIdent:
		ok := false
		switch {
		case text[0] == '"' && !syn.DoubleQuoteStrings, text[0] == '`' && syn.Backticks:
			ok = len(text) >= 2 && text[len(text)-1] == text[0]
		case text[0] == '[' && syn.Brackets:
			inner := text[1 : len(text)-1]
			if syn.BracketDoubling {
				inner = strings.ReplaceAll(inner, "]]", "")
			}
			ok = text[len(text)-1] == ']' && strings.IndexByte(inner, ']') < 0
		case syn.EStrings && len(text) >= 4 && (text[0]|0x20) == 'u' && text[1] == '&' && text[2] == '"':
			ok = text[len(text)-1] == '"'
		}
		if !ok {
			return "bad quoted identifier"
		}
	case KindString:
		body := text
		if len(text) >= 2 && text[1] == '\'' && strings.IndexByte("eEnNxXbB", text[0]) >= 0 {
			body = text[1:]
		} else if len(text) >= 3 && text[0]|0x20 == 'u' && text[1] == '&' && text[2] == '\'' {
			body = text[2:]
		}
		q := body[0]
		switch {
		case q == '\'', q == '"' && syn.DoubleQuoteStrings:
			if len(body) < 2 || body[len(body)-1] != q {
				return "bad string"
			}
		case q == '$' && syn.DollarQuotes:
			if len(body) < 4 || body[len(body)-1] != '$' {
				return "bad dollar string"
			}
		default:
			return "bad string start"
		}
	case KindNumber:
		if !isDigit(text[0]) && !(text[0] == '.' && len(text) > 1 && isDigit(text[1])) {
			return "bad number start"
		}
		if next != 0 && isIdentCont(next) {
			return "identifier byte after number"
		}
	case KindParam:
		switch text[0] {
		case '$':
			if !syn.DollarParams && !syn.NamedParams {
				return "unexpected $ param"
			}
		case '?':
			if !syn.QuestionParams && !syn.NamedParams {
				return "unexpected ? param"
			}
		case ':', '@', '#':
			if !syn.NamedParams {
				return "unexpected named param"
			}
		default:
			return "bad param start"
		}
		numbered := len(text) > 1 && isDigit(text[1]) && (text[0] == '?' || text[0] == '$' && syn.DollarParams)
		if (t.Num != 0) != numbered {
			return "bad Num"
		}
	case KindPunct:
		if len(text) > 1 && !multiOps[text] {
			return "unknown multi-byte operator " + text
		}
		if len(text) == 1 {
			c := text[0]
			if charClass[c]&(ccIdentStart|ccDigit|ccSpace) != 0 || c == '\'' || c == '"' ||
				c == '`' && syn.Backticks || c == '[' && syn.Brackets || c == '$' {
				return "byte that belongs to another kind"
			}
			if c == '.' && next != 0 && isDigit(next) {
				if !(t.Start > 0 && (isIdentCont(src[t.Start-1]) || src[t.Start-1] == '"' || src[t.Start-1] == '`' || src[t.Start-1] == ']')) {
					return "'.' before a digit not after a name"
				}
			}
		}
	default:
		return "unknown kind"
	}
	return ""
}

// checkExecBody is an independent check of an accepted executable comment:
// read as code (how MySQL reads an executed /*! */ body), the body must
// reach the first */ with every literal and comment closed before it, so
// that the code reading and the skip-to-first-*/ reading agree.
func checkExecBody(text string, syn Syntax) string {
	body := 3
	if text[2] == 'M' {
		body = 4
	}
	inner := text[body : len(text)-2]
	if strings.Contains(inner, "*/") {
		return "does not end at the first */"
	}
	code := syn
	code.ExecComments = false
	toks, err := Lex(inner+"*/", code)
	if err != nil {
		switch err.(*Error).Msg {
		case msgString, msgQuotedIdent, msgDollarString, msgComment:
			return "body read as code hides the closing */"
		}
		return "" // e.g. 50110KEY: a server syntax error, not an extent question
	}
	// The final '/' must be a token of its own and the '*' must be
	// punctuation (possibly the tail of an operator such as ~*).
	n := len(toks)
	if n < 2 || toks[n-1].Start != len(inner)+1 || toks[n-1].Kind != KindPunct ||
		toks[n-2].End != len(inner)+1 || toks[n-2].Kind != KindPunct {
		return "body read as code swallows the closing */"
	}
	for _, t := range toks {
		if t.Kind == KindComment && strings.HasPrefix(t.Text(inner+"*/"), "/*") {
			return "nested comment accepted"
		}
	}
	return ""
}

// checkRelex lexes the token's text alone and expects the same single
// token back (the lexer has almost no context). The exception is the
// continuation of a PostgreSQL E'...' string, which takes escapes only in
// context: it must lex as one string when prefixed with E.
func checkRelex(src string, t Token, syn Syntax) string {
	text := src[t.Start:t.End]
	toks, err := Lex(text, syn)
	if err == nil && len(toks) == 1 && toks[0].Kind == t.Kind && toks[0].Num == t.Num {
		return ""
	}
	if t.Kind == KindString && syn.EStrings && text[0] == '\'' {
		toks, err = Lex("E"+text, syn)
		if err == nil && len(toks) == 1 && toks[0].Kind == KindString {
			return ""
		}
	}
	return "does not lex back to itself alone"
}

// checkLex runs Lex and checks the invariants for success and failure.
func checkLex(t *testing.T, src string, syn Syntax, name string) error {
	t.Helper()
	toks, err := Lex(src, syn)
	if err != nil {
		var le *Error
		if !errors.As(err, &le) {
			t.Fatalf("%s %q: error %T is not *Error", name, src, err)
		}
		if toks != nil {
			t.Fatalf("%s %q: tokens returned with an error", name, src)
		}
		if le.Pos < 0 || le.Pos > len(src) || !knownMsgs[le.Msg] {
			t.Fatalf("%s %q: bad error %+v", name, src, le)
		}
		return err
	}
	if msg := checkTokens(src, toks, syn); msg != "" {
		t.Fatalf("%s %q: %s (tokens %v)", name, src, msg, toks)
	}
	// The helpers never panic on any token.
	for _, tok := range toks {
		IsKeyword(src, tok, "UPDATE")
		if name, _, ok := Ident(src, tok); ok && tok.Kind == KindWord && name != tok.Text(src) {
			t.Fatalf("Ident of a word changed it")
		}
	}
	sig := Significant(toks)
	for _, tok := range sig {
		if tok.Kind == KindSpace || tok.Kind == KindComment {
			t.Fatalf("Significant kept %v", tok.Kind)
		}
	}
	// LexAppend after existing tokens gives the same tokens.
	pre := []Token{{Kind: KindWord, Start: 0, End: 0}}
	more, err := LexAppend(pre, src, syn)
	if err != nil || len(more) != len(toks)+1 {
		t.Fatalf("%s %q: LexAppend differs: %v", name, src, err)
	}
	for i := range toks {
		if more[i+1] != toks[i] {
			t.Fatalf("%s %q: LexAppend token %d differs", name, src, i)
		}
	}
	return nil
}

// fragments are pieces random inputs are assembled from: every character
// and digraph with a lexical meaning in one of the dialects.
var fragments = []string{
	"'", "'", "\"", "`", "[", "]", "$", "$$", "$a$", "$1", "$0", "--", "-", "- ",
	"/*", "*/", "/", "*", "/*!", "/*+", "/*M!", "#", "\\", "\\'", "''", "\n", "\r",
	" ", "\t", "\v", "E", "e", "E'", "N", "x", "X'", "b'", "U&", "U&'", "U&\"", "u",
	"?", "?1", ":", "::", ":a", "@", "@a", "1", "12", ".", ".5", "0x", "0b", "e5",
	"update", "UPDATE", "set", "where", "é", "\xff", "\xef\xbb\xbf", "\x01", "!",
	"+", ";", "(", ")", ",", "=", "<", ">", "|", "&", "~", "a", "_", "\u00a0", "\x00",
}

func randomSQL(r *rand.Rand) string {
	var sb strings.Builder
	n := r.Intn(24)
	for i := 0; i < n; i++ {
		if r.Intn(8) == 0 {
			sb.WriteByte(byte(r.Intn(256)))
		} else {
			sb.WriteString(fragments[r.Intn(len(fragments))])
		}
	}
	return sb.String()
}

func TestPropertyRandom(t *testing.T) {
	r := rand.New(rand.NewSource(1))
	iters := 200000
	if testing.Short() {
		iters = 20000
	}
	ok := map[string]int{}
	for i := 0; i < iters; i++ {
		src := randomSQL(r)
		for _, d := range dialects {
			if checkLex(t, src, d.syn, d.name) == nil {
				ok[d.name]++
			}
		}
	}
	// Make sure the generator exercises the success path too.
	for _, d := range dialects {
		if ok[d.name] < iters/20 {
			t.Errorf("%s: only %d of %d random inputs lexed", d.name, ok[d.name], iters)
		}
	}
}

func TestPropertySeeds(t *testing.T) {
	for _, src := range seedCorpus {
		for _, d := range dialects {
			checkLex(t, src, d.syn, d.name)
			// Every prefix (a statement cut anywhere, also mid-string or
			// mid-UTF-8 sequence) keeps the invariants.
			for k := 0; k < len(src); k++ {
				checkLex(t, src[:k], d.syn, d.name)
			}
		}
	}
}

// TestAllSyntaxCombinations runs the seeds under every combination of
// flags: hand-built Syntax values must keep the invariants too.
func TestAllSyntaxCombinations(t *testing.T) {
	for bits := 0; bits < 1<<14; bits++ {
		syn := synFromBits(uint16(bits))
		for k := bits % 4; k < len(seedCorpus); k += 4 {
			checkLex(t, seedCorpus[k], syn, "combo")
		}
	}
}

func synFromBits(b uint16) Syntax {
	return Syntax{
		BackslashEscapes:   b&(1<<0) != 0,
		DoubleQuoteStrings: b&(1<<1) != 0,
		Backticks:          b&(1<<2) != 0,
		Brackets:           b&(1<<3) != 0,
		// not a bit of its own (that would double the run): with brackets and
		// backslash escapes, as MariaDB under sql_mode=MSSQL has them
		BracketDoubling:       b&(1<<3) != 0 && b&(1<<0) != 0,
		DollarQuotes:          b&(1<<4) != 0,
		EStrings:              b&(1<<5) != 0,
		HashComments:          b&(1<<6) != 0,
		NestedComments:        b&(1<<7) != 0,
		ExecComments:          b&(1<<8) != 0,
		DollarParams:          b&(1<<9) != 0,
		QuestionParams:        b&(1<<10) != 0,
		NamedParams:           b&(1<<11) != 0,
		DashCommentNeedsSpace: b&(1<<12) != 0,
		CRLineEnd:             b&(1<<13) != 0,
	}
}
