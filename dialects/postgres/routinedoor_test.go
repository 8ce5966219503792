package postgres

import "testing"

// TestDynamicSQLWrites: a body with EXECUTE counts when it names the table anywhere
// (a DECLAREd string, another statement) or holds an E'…' string with a backslash or a
// U& literal or identifier; a body without EXECUTE, or with EXECUTE of text that names
// neither the table nor holds an undecoded escape, does not (red-team rt36b F2).
func TestDynamicSQLWrites(t *testing.T) {
	for _, c := range []struct {
		body string
		want bool
	}{
		{"DECLARE q text := 'UPDATE accounts SET b = 1'; BEGIN EXECUTE q; RETURN 1; END", true},
		{`BEGIN EXECUTE E'UPDATE \x61ccounts SET b = 2'; RETURN 1; END`, true},
		{`BEGIN EXECUTE U&'UPDATE \0061ccounts SET b = 3'; RETURN 1; END`, true},
		{`BEGIN EXECUTE U&'UPDATE !0061ccounts' UESCAPE '!'; RETURN 1; END`, true},
		{`BEGIN EXECUTE 'UPDATE ' || U&"\0061ccounts"::text; RETURN 1; END`, true},
		{"BEGIN EXECUTE 'UPDATE ledger SET note = ''x'''; RETURN 1; END", false},
		{`BEGIN EXECUTE E'UPDATE ledger SET note = ''x'''; RETURN 1; END`, false},
		{"DECLARE n bigint; BEGIN SELECT count(*) INTO n FROM accounts; RETURN n; END", false},
		{`BEGIN PERFORM E'\x61ccounts'; RETURN 1; END`, false},
	} {
		if got := dynamicSQLWrites(c.body, "accounts"); got != c.want {
			t.Errorf("dynamicSQLWrites(%q) = %v, want %v", c.body, got, c.want)
		}
	}
}
