package mysql

import (
	"database/sql/driver"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestSendInterpolationParams: the re-implementation of go-sql-driver/mysql's
// interpolation lexer (interpolationParams) on the cases where it differs from the
// server, and on ordinary text.
func TestSendInterpolationParams(t *testing.T) {
	for _, c := range []struct {
		q    string
		nobs bool
		want []int
	}{
		{"SELECT ?, ?", false, []int{7, 10}},
		{"SELECT '?', \"?\", `?`, ?", false, []int{22}},
		{"SELECT 'it\\'s ?', ?", false, []int{18}},
		{"SELECT 'it\\'s ?', ?", true, []int{14}}, // NO_BACKSLASH_ESCAPES: '\' ends at the second quote
		{"SELECT \"a\\\"?\", ?", false, []int{15}},
		{"SELECT 1 -- ?\n, ?", false, []int{16}},
		{"SELECT 1 --\v?", false, []int{12}}, // not a comment to the driver
		{"SELECT 1 --?", false, []int{11}},
		{"SELECT 1 --", false, nil},
		{"SELECT 1 # ?\n, ?", false, []int{15}},
		{"SELECT 1 /* ? */ ?", false, []int{17}},
		{"SELECT 1 /*/ ? */ ?", false, []int{13, 18}}, // /*/ is a whole comment to the driver
		{"SELECT 1 /*! ? */ ?", false, []int{18}},
		{"SELECT 1 */*? */", false, nil}, // * then a comment, to both
		{"SELECT '\\", false, nil},
	} {
		if got := interpolationParams(c.q, c.nobs, nil); !slices.Equal(got, c.want) {
			t.Errorf("%q (nobs=%v): got %v, want %v", c.q, c.nobs, got, c.want)
		}
	}
}

// TestSendCheckText: CheckSend refuses the red-team texts and passes ordinary ones.
func TestSendCheckText(t *testing.T) {
	k := Dialect.(dialect.SendChecker)
	args := []driver.NamedValue{{Ordinal: 1, Value: "x"}}
	refused := []string{
		"UPDATE accounts SET balance = length(CONCAT(--\v '\n'x ? ', ? /*'*/)), fence_token = ?",
		"UPDATE accounts SET balance = length(CONCAT(--\x01 '\n'x ? ', ? /*'*/)), fence_token = ?",
		"UPDATE accounts SET balance = 1 /*/ ' */ ?, fence_token = ?",
	}
	for _, q := range refused {
		if err := k.CheckSend(q, args, true, false); err == nil {
			t.Errorf("not refused: %q", q)
		}
	}
	ok := []string{
		"UPDATE accounts SET balance = balance + 1, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?",
		"UPDATE accounts SET note = 'it\\'s ?', b = \"?\\\"\", c = ? -- ?\n WHERE d = ? # ?",
		"UPDATE accounts SET note = 'café', c = ? /* ? */, `a?` = ?",
		"UPDATE accounts SET a = 1--1\n, b = ?",
	}
	for _, q := range ok {
		if err := k.CheckSend(q, args, true, false); err != nil {
			t.Errorf("refused: %q: %v", q, err)
		}
	}
	// Pass-through: the pre-filter skips ordinary text; desyncs are refused.
	if mayDesync("SELECT * FROM t WHERE a = ? AND b = 'x' -- c") {
		t.Error("ordinary text scanned")
	}
	if err := k.CheckSend("SELECT length(CONCAT(--\v '\n'x ? ', ? /*'*/))", args, false, false); err == nil {
		t.Error("pass-through desync not refused")
	}
	if err := k.CheckSend("SELECT 'a\\'b', ? --\v", args, false, false); err != nil {
		t.Errorf("pass-through refused: %v", err)
	}
}

// TestSendScannerProperty: random texts over a small alphabet of quotes, comments and
// placeholders. The scanner never panics, and a text both lexers read alike is one whose
// ? are the server's placeholders; the pre-filter never skips a disagreement.
func TestSendScannerProperty(t *testing.T) {
	alphabet := []string{"'", "\"", "`", "\\", "?", "a", " ", "\n", "\v", "\x01", "--", "-", "#", "/*", "*/", "/", "*", "/*!", "$", "(", "é"}
	r := rand.New(rand.NewPCG(3, 4))
	k := Dialect.(dialect.SendChecker)
	agreed := 0
	for range 50000 {
		var b strings.Builder
		for n := r.IntN(12); n >= 0; n-- {
			b.WriteString(alphabet[r.IntN(len(alphabet))])
		}
		q := b.String()
		for _, nobs := range []bool{false, true} {
			_ = interpolationParams(q, nobs, nil)
		}
		_ = k.CheckSend(q, nil, true, false)
		_ = k.CheckSend(q, []driver.NamedValue{{Value: "x"}}, false, false)
		theirs, err := dialect.Placeholders(q, dialect.MySQLSyntax)
		if err != nil {
			continue
		}
		ours := interpolationParams(q, false, nil)
		same := len(ours) == len(theirs)
		for i := 0; same && i < len(ours); i++ {
			same = ours[i] == theirs[i].Start
		}
		if same != interpolationAgrees(q, false, dialect.MySQLSyntax, true) {
			t.Fatalf("%q: interpolationAgrees disagrees with the comparison", q)
		}
		if same {
			agreed++
		} else if !mayDesync(q) {
			t.Fatalf("%q: the driver and the server disagree (%v vs %v) but the pre-filter skips it", q, ours, theirs)
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
		q := `SELECT id, name FROM customers WHERE id = ? AND status = 'active' AND name LIKE ?`
		b.ReportAllocs()
		for b.Loop() {
			if err := k.CheckSend(q, args, false, false); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("fenced", func(b *testing.B) {
		q := "UPDATE accounts SET balance = balance + 1, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END WHERE id = ?"
		b.ReportAllocs()
		for b.Loop() {
			if err := k.CheckSend(q, args, true, false); err != nil {
				b.Fatal(err)
			}
		}
	})
}
