package postgres

import (
	"database/sql/driver"
	"math/rand/v2"
	"strings"
	"testing"

	"github.com/jackc/pgx/v5"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestSendPgxParams: the re-implementation of pgx's sanitizer lexer (pgxParams) on the
// cases where it differs from PostgreSQL, and on ordinary text.
func TestSendPgxParams(t *testing.T) {
	for _, c := range []struct {
		q        string
		want     []pgxParam
		complete bool
	}{
		{"SELECT $1, $2", []pgxParam{{7, 1}, {11, 2}}, true},
		{"SELECT '$1', \"$2\", $3", []pgxParam{{19, 3}}, true},
		{"SELECT E'\\' $1 ', $2", []pgxParam{{18, 2}}, true},
		{"SELECT name'\\' $1 '", nil, true},                      // pgx: an E-string to the end
		{"SELECT E'x'\n'\\' $1 \\''", []pgxParam{{16, 1}}, true}, // no continuation
		{"SELECT a$$ $1 $$ $2", []pgxParam{{17, 2}}, true},       // a$$ opens a dollar quote
		{"SELECT a$1", []pgxParam{{8, 1}}, true},                 // a placeholder glued to a name
		{"SELECT $tag$ $1 $tag$, $2", []pgxParam{{23, 2}}, true},
		{"SELECT $$ $1", nil, true}, // unterminated: kept as it is
		{"SELECT 1 -- $1\n, $2 /* $3 /* $4 */ $5 */ $6", []pgxParam{{17, 2}, {41, 6}}, true},
		{"SELECT 1 --\r$1", []pgxParam{{12, 1}}, true},
		{"SELECT $1 \xff $2", []pgxParam{{7, 1}}, false}, // stops at invalid UTF-8
		{"SELECT $1 \uFFFD $2", []pgxParam{{7, 1}, {14, 2}}, true},
		{"SELECT E'\\\xff' $1", []pgxParam{{13, 1}}, true}, // an escaped invalid byte is skipped
		{"SELECT $99999999999", []pgxParam{{7, 2147483647}}, true},
		{"", nil, true},
	} {
		got, complete := pgxParams(c.q, nil)
		if complete != c.complete || len(got) != len(c.want) {
			t.Errorf("%q: got %v complete=%v, want %v complete=%v", c.q, got, complete, c.want, c.complete)
			continue
		}
		for i := range got {
			if got[i] != c.want[i] {
				t.Errorf("%q: got %v, want %v", c.q, got, c.want)
				break
			}
		}
	}
}

// TestSendCheckText: CheckSend on fenced texts: the red-team texts are refused, ordinary
// texts pass.
func TestSendCheckText(t *testing.T) {
	refused := []string{
		"UPDATE accounts SET balance = length(E'x'\n'\\' $1 \\'') + 0 * length($1::text), fence_token = $2",
		`UPDATE accounts SET balance = length(name'\' || ' $1 ' || E'\'') + 0 * length($1::text), fence_token = $2`,
		`UPDATE accounts SET balance = 0 * $2::bigint + length(name'\' || ' $1 '), fence_token = $3`,
		`UPDATE accounts AS a$$ SET balance = length('$$ $1 ') /*'*/ + 0 * length($1::text), fence_token = $2`,
		`UPDATE accounts AS a$1 SET balance = $1, fence_token = $2`,
		"UPDATE accounts SET balance = 1 /* \xff */, fence_token = $1",
	}
	for _, q := range refused {
		if err := Dialect.(dialect.SendChecker).CheckSend(q, []driver.NamedValue{{Ordinal: 1, Value: "x"}}, true, false); err == nil {
			t.Errorf("not refused: %q", q)
		}
	}
	ok := []string{
		`UPDATE accounts SET balance = balance + 1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`,
		`UPDATE accounts SET note = E'it\'s $1', balance = $1 WHERE name = 'a''b $2' AND id = $2`,
		`UPDATE accounts SET note = $$ $1 $$ || $tag$ $$ $tag$, balance = $1 -- $2` + "\n" + `WHERE id = $2`,
		`UPDATE accounts SET note = E'x'` + "\n" + `'y', balance = $1`,
		`UPDATE accounts SET note = 'café', "naïve$" = $1 /* nested /* $2 */ */`,
		`UPDATE accounts SET note = name 'x', b = 'x'::name, c = $1`,
	}
	for _, q := range ok {
		if err := Dialect.(dialect.SendChecker).CheckSend(q, []driver.NamedValue{{Ordinal: 1, Value: "x"}}, true, false); err != nil {
			t.Errorf("refused: %q: %v", q, err)
		}
	}
}

// TestSendCheckArgs: pgx's option arguments are refused in a fenced statement, wherever
// they stand, and in a statement that runs dynamic SQL or is DDL, and left alone in
// another pass-through one.
func TestSendCheckArgs(t *testing.T) {
	const q = "UPDATE accounts SET a = $1, fence_token = $2"
	k := Dialect.(dialect.SendChecker)
	for _, v := range []any{pgx.NamedArgs{"a": 1}, pgx.StrictNamedArgs{"a": 1}, pgx.QueryExecModeSimpleProtocol,
		pgx.QueryResultFormats{1}, pgx.QueryResultFormatsByOID{1: 1}} {
		args := []driver.NamedValue{{Ordinal: 1, Value: 1}, {Ordinal: 2, Value: v}}
		if err := k.CheckSend(q, args, true, false); err == nil {
			t.Errorf("%T not refused", v)
		}
		if err := k.CheckSend("SELECT @a", args, false, false); err != nil {
			t.Errorf("%T refused in a pass-through: %v", v, err)
		}
		// A statement that runs dynamic SQL or is DDL refuses them too (rt55e F2).
		if err := k.CheckSend("DO $1", args, false, true); err == nil {
			t.Errorf("%T not refused in a dynamic statement", v)
		}
	}
	if err := k.CheckSend(q, []driver.NamedValue{{Ordinal: 1, Value: pgx.NamedArgs{"a": 1}}}, true, false); err == nil ||
		!strings.Contains(err.Error(), "fencedpgx") {
		t.Errorf("NamedArgs: %v, want a refusal pointing to fencedpgx", err)
	}
	if err := k.CheckSend(q, []driver.NamedValue{{Ordinal: 1, Value: "x"}, {Ordinal: 2, Value: int64(7)}}, true, false); err != nil {
		t.Errorf("plain values refused: %v", err)
	}
}

// TestSendPassThroughPrefilter: a pass-through text is scanned only when it holds a
// byte pgx can leave PostgreSQL's reading at, and refused only when the readings differ.
func TestSendPassThroughPrefilter(t *testing.T) {
	args := []driver.NamedValue{{Ordinal: 1, Value: "x"}}
	k := Dialect.(dialect.SendChecker)
	for q, scan := range map[string]bool{
		"SELECT * FROM t WHERE a = $1 AND b = 'x'":      false,
		"SELECT * FROM t WHERE a = $1 AND b = E'x'":     false,
		"SELECT * FROM t WHERE a = $1 AND b = 'active'": false,
		"SELECT * FROM t WHERE a = $1 AND b = E'\\x'":   true,
		"SELECT $$x$$, $1":                              true,
		"SELECT a$1":                                    true,
		"SELECT 'café', $1":                             false,
	} {
		if got := mayDesync(q); got != scan {
			t.Errorf("mayDesync(%q) = %v, want %v", q, got, scan)
		}
		if err := k.CheckSend(q, args, false, false); err != nil && q != "SELECT a$1" {
			t.Errorf("refused: %q: %v", q, err)
		}
	}
	if err := k.CheckSend(`SELECT length(name'\' || ' $1 ' || E'\'')`, args, false, false); err == nil {
		t.Errorf("pass-through desync not refused")
	}
}

// TestSendScannerProperty: random texts over a small alphabet of quotes, comments,
// dollars, letters and placeholders. The scanner never panics, and whenever both
// lexers read a text and agree, every placeholder pgx substitutes is one PostgreSQL
// reads (the property CheckSend relies on).
func TestSendScannerProperty(t *testing.T) {
	alphabet := []string{"'", "''", "\"", "E'", "e'", "name'", "\\", "\\'", "$", "$$", "$a$", "$1", "$2", "a", " ", "\n", "\r",
		"--", "/*", "*/", "-", "/", "*", "U&'", "B'", "x", "\xff", "é", "\uFFFD", "(", ")"}
	r := rand.New(rand.NewPCG(1, 2))
	k := Dialect.(dialect.SendChecker)
	agreed := 0
	for range 50000 {
		var b strings.Builder
		for n := r.IntN(12); n >= 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		q := b.String()
		ours, complete := pgxParams(q, nil)
		_ = k.CheckSend(q, nil, true, false)
		_ = k.CheckSend(q, []driver.NamedValue{{Value: "x"}}, false, false)
		theirs, err := dialect.Placeholders(q, dialect.PostgresSyntax)
		if err != nil || !complete {
			continue
		}
		if pgxAgrees(q) {
			agreed++
			for i := range ours {
				if ours[i].pos != theirs[i].Start || ours[i].num != theirs[i].Num {
					t.Fatalf("%q: agreed but %v vs %v", q, ours, theirs)
				}
			}
		}
		// The pre-filter never lets a disagreement through.
		if !pgxAgrees(q) && !mayDesync(q) {
			t.Fatalf("%q: pgx and PostgreSQL disagree but the pre-filter skips it", q)
		}
	}
	if agreed == 0 {
		t.Fatal("no text agreed: the generator is useless")
	}
}

// BenchmarkCheckSend: the pre-filter a pass-through statement with arguments costs, and
// the full check of a fenced text.
func BenchmarkCheckSend(b *testing.B) {
	k := Dialect.(dialect.SendChecker)
	args := []driver.NamedValue{{Ordinal: 1, Value: 1}, {Ordinal: 2, Value: "a%"}}
	b.Run("passthrough", func(b *testing.B) {
		q := `SELECT id, name FROM customers WHERE id = $1 AND status = 'active' AND name LIKE $2`
		b.ReportAllocs()
		for b.Loop() {
			if err := k.CheckSend(q, args, false, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fenced", func(b *testing.B) {
		q := `UPDATE accounts SET balance = balance + 1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END WHERE id = $1`
		b.ReportAllocs()
		for b.Loop() {
			if err := k.CheckSend(q, args, true, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
