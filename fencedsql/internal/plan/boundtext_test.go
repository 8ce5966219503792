package plan

import (
	"slices"
	"testing"
)

// TestBoundTextArgs (red-team rt55b F2): a statement that runs dynamic SQL lists the
// placeholders whose value the server may read as statement text (Plan.TextArgs, by
// argument number), leaving out the values an EXECUTE … USING binds; other statements
// list none.
func TestBoundTextArgs(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDynamicSQL(true))
	for in, want := range map[string][]int{
		"EXECUTE IMMEDIATE ?":                                          {1},
		"PREPARE s FROM ?":                                             {1},
		"EXECUTE IMMEDIATE CONCAT(?, ?) USING ?":                       {1, 2},
		"EXECUTE IMMEDIATE 'SELECT ?' USING ?":                         nil,
		"EXECUTE s USING ?, ?":                                         nil,
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
