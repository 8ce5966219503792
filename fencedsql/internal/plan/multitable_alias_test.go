package plan

import (
	"fmt"
	"strings"
	"testing"
)

// A MySQL/MariaDB multi-table UPDATE's SET qualifier and multi-table DELETE's target
// resolve through the aliases of the table list: an alias spelled like the guarded
// table stands for the table it aliases, and the guarded table under another alias is
// written only through that alias. Each statement passes exactly when what it writes
// is the unguarded table (`other`); a DELETE target qualified by a database is matched
// by the server against unaliased tables only, so it is judged by its name (red-team
// rt47f F2: `DELETE accounts FROM other AS accounts JOIN accounts AS x` was refused).
func TestMySQLMultiTableAliasResolvesToAliasedTable(t *testing.T) {
	for _, c := range []struct {
		tpl  string
		pass string // the qualifier, lower-cased and unquoted, for which it passes ("": none)
		del  bool   // a DELETE target: a database-qualified one never passes
	}{
		{"UPDATE other AS accounts, accounts AS ACCOUNTS SET %s.balance = 1", "", false},
		{"UPDATE other AS x, accounts AS X SET %s.balance = 1", "", false},
		{"UPDATE other AS accounts, accounts AS other SET %s.balance = 1", "accounts", false},
		{"UPDATE other accounts JOIN accounts other SET %s.a = 1", "accounts", false},
		{"UPDATE other, accounts AS x SET %s.a = 1", "other", false},
		{"DELETE %s FROM other AS accounts, accounts AS x", "accounts", true},
		{"DELETE %s FROM other AS accounts JOIN accounts AS other ON other.id = accounts.id", "accounts", true},
		{"DELETE %s FROM other AS x, accounts AS X", "", true},
		{"DELETE FROM %s USING other AS accounts, accounts AS x", "accounts", true},
		{"DELETE FROM %s USING other AS x, accounts AS X", "", true},
		{"DELETE %s.* FROM other AS accounts, accounts AS x", "accounts", true},
		{"DELETE %s FROM accounts AS other JOIN other AS accounts", "accounts", true},
	} {
		for _, q := range []string{"accounts", "ACCOUNTS", "`accounts`", "test.accounts", "`test`.`accounts`", "other", "OTHER", "x", "X"} {
			in := fmt.Sprintf(c.tpl, q)
			parts := strings.Split(strings.ToLower(strings.ReplaceAll(q, "`", "")), ".")
			want := parts[len(parts)-1] == c.pass && !(c.del && len(parts) > 1)
			p, err := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDeleteFence()).Rewrite(in, false)
			switch {
			case want && (err != nil || p.Kind != KindPass):
				t.Errorf("%s: err = %v; want it passed (it writes the unguarded table only)", in, err)
			case !want && !isRefusal(err):
				t.Errorf("%s: err = %v; want it refused", in, err)
			}
		}
	}
}
