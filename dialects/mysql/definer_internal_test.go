package mysql

import (
	"testing"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestDefinerAccountAndClassify: a DEFINER as information_schema spells it splits at
// its last '@' (role@ and a bare name are roles), and error 1449 classifies as a
// definer gone (red-team rt57b F4), a server's answer.
func TestDefinerAccountAndClassify(t *testing.T) {
	for _, c := range []struct {
		def, user, host string
		account         bool
	}{
		{"app@localhost", "app", "localhost", true},
		{"a@b@10.0.0.%", "a@b", "10.0.0.%", true},
		{"dba_role@", "dba_role", "", false},
		{"dba_role", "dba_role", "", false},
	} {
		if u, h, a := definerAccount(c.def); u != c.user || h != c.host || a != c.account {
			t.Errorf("definerAccount(%q) = %q, %q, %v; want %q, %q, %v", c.def, u, h, a, c.user, c.host, c.account)
		}
	}
	info := dialectImpl{}.Classify(&gomysql.MySQLError{Number: 1449, SQLState: [5]byte{'H', 'Y', '0', '0', '0'}, Message: "The user specified as a definer ('gone'@'localhost') does not exist"})
	if info.Kind != dialect.ErrorDefinerGone || !info.Server {
		t.Errorf("Classify(1449) = %+v, want ErrorDefinerGone from the server", info)
	}
}

// TestRoleGrants: SHOW GRANTS FOR name counts as the role's answer only when its
// global line grants to the role itself (either quoting), not to an account of its
// name (red-team rt58a F3).
func TestRoleGrants(t *testing.T) {
	for _, c := range []struct {
		rows [][]string
		role string
		want bool
	}{
		{[][]string{{"GRANT USAGE ON *.* TO `r`"}, {"GRANT SELECT ON `db`.* TO `r`"}}, "r", true},
		{[][]string{{"GRANT ALL PRIVILEGES ON *.* TO `r` WITH GRANT OPTION"}}, "r", true},
		{[][]string{{`GRANT USAGE ON *.* TO "r"`}}, "r", true},
		{[][]string{{"GRANT USAGE ON *.* TO `q```"}}, "q`", true},
		{[][]string{{"GRANT USAGE ON *.* TO `r`@`%`"}}, "r", false},
		{[][]string{{`GRANT USAGE ON *.* TO "r"@"%"`}}, "r", false},
		{[][]string{{"GRANT USAGE ON *.* TO `r`@`%` IDENTIFIED BY PASSWORD '*AB'"}, {"GRANT `r` TO `r`@`%`"}}, "r", false},
		{[][]string{{"GRANT USAGE ON *.* TO `rr`"}}, "r", false},
		{nil, "r", false},
	} {
		if got := roleGrants(c.rows, c.role); got != c.want {
			t.Errorf("roleGrants(%q, %q) = %v, want %v", c.rows, c.role, got, c.want)
		}
	}
}
