package plan

import (
	"slices"
	"strings"
	"testing"
)

// TestBoundTextArgs (red-team rt55b F2, rt56d F2): a statement that runs dynamic SQL
// lists the placeholders whose value the server may read as statement text
// (Plan.TextArgs, by argument number), leaving out only the values the USING list of
// EXECUTE IMMEDIATE '<text>' binds (when that text runs none of them as SQL) and
// PostgreSQL's EXECUTE name(…) arguments; other statements list none.
func TestBoundTextArgs(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDynamicSQL(true))
	for in, want := range map[string][]int{
		"EXECUTE IMMEDIATE ?":                    {1},
		"PREPARE s FROM ?":                       {1},
		"EXECUTE IMMEDIATE CONCAT(?, ?) USING ?": {1, 2, 3},
		"EXECUTE IMMEDIATE 'SELECT ?' USING ?":   nil,
		"EXECUTE IMMEDIATE 'SELECT ?, ?' USING CONVERT(? USING utf8mb4), CHAR(32 USING ascii), ?": nil,
		"EXECUTE IMMEDIATE 'IF 1 THEN EXECUTE IMMEDIATE ?; END IF' USING ?":                       {1},
		"EXECUTE IMMEDIATE 'SEL' 'ECT ?' USING ?":                                                 {1},
		"EXECUTE s USING ?, ?":                                         {1, 2},
		"BEGIN NOT ATOMIC EXECUTE IMMEDIATE ?; END":                    {1},
		"SET STATEMENT max_statement_time = 1 FOR EXECUTE IMMEDIATE ?": {1},
		"CALL p(?)":                           {1},
		"SELECT ? FROM other":                 nil,
		"UPDATE other SET v = ? WHERE id = ?": nil,
	} {
		p, err := rw.Rewrite(in, false)
		if err != nil {
			t.Errorf("rewrite(%q): %v", in, err)
			continue
		}
		var got []int
		for _, a := range p.TextArgs {
			if in[a.Start:a.End] != "?" {
				t.Errorf("rewrite(%q): text argument at %d:%d is %q", in, a.Start, a.End, in[a.Start:a.End])
			}
			got = append(got, a.Arg)
		}
		if !slices.Equal(got, want) {
			t.Errorf("rewrite(%q): TextArgs %v, want %v", in, got, want)
		}
	}
}

// TestBoundTextAfterUsingSpellings (red-team rt56d F2, generator): a USING that is not
// the USING list of EXECUTE IMMEDIATE '<text>' — CONVERT(… USING cs), CHAR(n USING
// cs), a join's USING (col) in a subquery, a USING in a comment or a string literal —
// before a placeholder that becomes the statement text of EXECUTE IMMEDIATE, PREPARE …
// FROM, or a compound statement's variable, nested or not, never makes the
// placeholder data: it is listed in TextArgs, and judged.
func TestBoundTextAfterUsingSpellings(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDynamicSQL(true))
	usings := []string{
		"CONVERT('' USING utf8mb4)", "CHAR(32 USING ascii)", "CONVERT(CHAR(32) USING latin1)",
		"CONVERT(CONVERT('' USING latin1) USING utf8mb4)",
		"(SELECT '' FROM ledger a JOIN ledger b USING (id) LIMIT 1)",
		"IF(EXISTS(SELECT 1 FROM ledger x JOIN ledger y USING (id, account_id)), '', '')",
		"/* USING */ ''", "'USING'", "'x USING y'", "-- USING\n''", "# USING\n''",
	}
	heads := []string{
		"EXECUTE IMMEDIATE CONCAT(%s, ?)",
		"EXECUTE IMMEDIATE CONCAT(%s, ?) USING 1",
		"PREPARE s FROM CONCAT(%s, ?)",
		"BEGIN NOT ATOMIC DECLARE q TEXT DEFAULT CONCAT(%s, ?); EXECUTE IMMEDIATE q; END",
		"BEGIN NOT ATOMIC DECLARE q TEXT; SET q = CONCAT(%s, ?); EXECUTE IMMEDIATE q; END",
		"BEGIN NOT ATOMIC DECLARE q TEXT; BEGIN NOT ATOMIC SET q = CONCAT(%s, ?); END; EXECUTE IMMEDIATE q USING 1; END",
		"BEGIN NOT ATOMIC IF 1 THEN EXECUTE IMMEDIATE CONCAT(%s, ?); END IF; END",
		"BEGIN NOT ATOMIC EXECUTE IMMEDIATE 'SELECT ?' USING %s; EXECUTE IMMEDIATE ?; END",
	}
	for _, h := range heads {
		for _, u := range usings {
			in := strings.Replace(h, "%s", u, 1)
			p, err := rw.Rewrite(in, false)
			if err != nil {
				continue // refused whatever the value: closed
			}
			last := strings.LastIndexByte(in, '?')
			found := false
			for _, a := range p.TextArgs {
				found = found || a.Start == last
			}
			if !found {
				t.Errorf("rewrite(%q): the placeholder that becomes statement text is not judged (TextArgs %v)", in, p.TextArgs)
			}
		}
	}
}
