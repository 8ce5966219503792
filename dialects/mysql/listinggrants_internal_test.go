package mysql

import (
	"strings"
	"testing"
)

// TestMissingListingGrants: the global privileges unlistedCode requires, read from
// SHOW GRANTS lines as MariaDB 10.11 prints them (an account's, its active role's and
// the roles granted to that role), and what does not count: a privilege on one
// database or table, a column-level SELECT on mysql.proc, a line that is not a grant.
func TestMissingListingGrants(t *testing.T) {
	const all = "TRIGGER, EVENT, SELECT (or SELECT on mysql.proc, SHOW_ROUTINE)"
	for _, c := range []struct {
		name  string
		lines []string
		want  string
	}{
		{"all privileges", []string{"GRANT ALL PRIVILEGES ON *.* TO `fenced`@`127.0.0.1` IDENTIFIED BY PASSWORD '*C1D0' WITH GRANT OPTION"}, ""},
		{"database only", []string{"GRANT USAGE ON *.* TO `a`@`%`", "GRANT ALL PRIVILEGES ON `shop`.* TO `a`@`%`"}, all},
		{"through roles", []string{"GRANT `r` TO `a`@`h`", "GRANT USAGE ON *.* TO `a`@`h`", "GRANT `inner` TO `r`", "GRANT EVENT, TRIGGER ON *.* TO `r`", "GRANT SELECT ON `mysql`.`proc` TO `r`", "SET DEFAULT ROLE `r` FOR `a`@`h`"}, ""},
		{"global select", []string{"GRANT SELECT, TRIGGER, EVENT ON *.* TO `a`@`%`"}, ""},
		{"show routine", []string{"GRANT TRIGGER, EVENT ON *.* TO `a`@`%`", "GRANT SHOW_ROUTINE ON *.* TO `a`@`%`"}, ""},
		{"mysql database", []string{"GRANT TRIGGER, EVENT ON *.* TO `a`@`%`", "GRANT SELECT ON `mysql`.* TO `a`@`%`"}, ""},
		{"column select on proc", []string{"GRANT TRIGGER, EVENT ON *.* TO `a`@`%`", "GRANT SELECT (`body`, `db`) ON `mysql`.`proc` TO `a`@`%`"}, "SELECT (or SELECT on mysql.proc, SHOW_ROUTINE)"},
		{"trigger on a table", []string{"GRANT TRIGGER ON `shop`.`feed` TO `a`@`%`", "GRANT EVENT ON `shop`.* TO `a`@`%`", "GRANT SELECT ON *.* TO `a`@`%`"}, "TRIGGER, EVENT"},
		{"no event", []string{"GRANT SELECT, TRIGGER, SHOW VIEW ON *.* TO `a`@`%`"}, "EVENT"},
		{"column name spelling a grant", []string{"GRANT TRIGGER, SELECT (`x ON *.* TO y`) ON `shop`.`t` TO `a`@`%`"}, all},
		{"denied or nothing", nil, all},
	} {
		var rows [][]string
		for _, l := range c.lines {
			rows = append(rows, []string{l})
		}
		if got := strings.Join(missingListingGrants(rows), ", "); got != c.want {
			t.Errorf("%s: missing %q, want %q", c.name, got, c.want)
		}
	}
}
