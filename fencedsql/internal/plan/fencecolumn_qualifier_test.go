package plan

import (
	"strings"
	"testing"
)

// On MySQL/MariaDB a SET target or INSERT column that names a fencing column qualified
// by the target itself (its alias when it has one, else its name, with a database only
// as the statement wrote the target) is the column: the item is dropped and the
// wrapper's own value takes its place. Any other qualifier (another table, an undeclared
// alias, the table's name once it has an alias, another database, a database before an
// unqualified target, a letter-case variant, a four-part name) makes the server reject
// the item (1054 Unknown column); dropping it would make the rest of the broken
// statement run, so it is refused before sending (red-team rt47f F1). Covered: UPDATE
// SET, INSERT column lists, INSERT … SET, ON DUPLICATE KEY UPDATE.
func TestMySQLFencingColumnQualifiedByOtherName(t *testing.T) {
	type target struct {
		ref       string   // the target as the statement writes it
		insert    bool     // an INSERT may name it (MySQL has no INSERT alias)
		own, auth []string // qualifiers that name it; that do not
	}
	targets := []target{
		{"accounts", true,
			[]string{"accounts", "`accounts`"},
			[]string{"other", "`other`", "a", "ACCOUNTS", "Accounts", "db.accounts", "x.y", "`db`.`accounts`", "x.db.accounts"}},
		{"accounts AS a", false,
			[]string{"a", "`a`"},
			[]string{"accounts", "A", "other", "db.a", "db.accounts"}},
		{"accounts a", false,
			[]string{"a"},
			[]string{"accounts", "`accounts`", "other"}},
		{"db.accounts", true,
			[]string{"accounts", "db.accounts", "`db`.`accounts`"},
			[]string{"otherdb.accounts", "DB.accounts", "db.ACCOUNTS", "other", "db.other", "x.db.accounts"}},
		{"`db`.`accounts` AS a", false,
			[]string{"a", "db.a", "`db`.a"},
			[]string{"accounts", "db.accounts", "otherdb.a", "x.db.a"}},
	}
	forms := []struct {
		tpl    string // %T the target, %Q.%C the item
		insert bool
	}{
		{"UPDATE %T SET balance = 1, %Q.%C = 99 WHERE id = 1", false},
		{"UPDATE %T SET %Q.%C = 99, balance = 1", false},
		{"INSERT INTO %T (id, %Q.%C) VALUES (1, 99)", true},
		{"INSERT INTO %T (%Q.%C, id) VALUES (99, 1), (99, 2)", true},
		{"INSERT INTO %T SET id = 1, %Q.%C = 99", true},
		{"INSERT INTO %T (id) VALUES (1) ON DUPLICATE KEY UPDATE balance = 2, %Q.%C = 99", true},
		{"INSERT INTO %T SET id = 1 ON DUPLICATE KEY UPDATE %Q.%C = 99", true},
	}
	cols := []string{"fence_token", "`fence_token`", "FENCE_TOKEN", "version"}
	for _, tg := range targets {
		for _, f := range forms {
			if f.insert && !tg.insert || !f.insert && strings.HasPrefix(f.tpl, "INSERT") {
				continue
			}
			for k, quals := range [][]string{tg.own, tg.auth} {
				for _, q := range quals {
					for _, c := range cols {
						in := strings.NewReplacer("%T", tg.ref, "%Q", q, "%C", c).Replace(f.tpl)
						p, err := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDeleteFence()).Rewrite(in, false)
						if k == 1 {
							if !isRefusal(err) {
								t.Errorf("%s: err = %v, want a refusal (the server rejects the item; dropped, the rest would run)", in, err)
							}
							continue
						}
						if err != nil || p.Kind == KindPass || strings.Contains(strings.Join(planSQL(p), "\n"), "99") {
							t.Errorf("%s: err = %v; want the item dropped and the statement fenced", in, err)
						}
					}
				}
			}
		}
	}
	// A qualified column that is not a fencing column is the server's to judge.
	for _, in := range []string{
		"UPDATE accounts SET other.balance = 1",
		"INSERT INTO accounts (id, other.balance) VALUES (1, 2)",
	} {
		if _, err := newTestRewriter(t, mysqlTest, Guard("accounts")).Rewrite(in, false); err != nil {
			t.Errorf("%s: %v, want it planned (the server rejects the foreign qualifier itself)", in, err)
		}
	}
}
