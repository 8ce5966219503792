package fencedsql

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// The re-arm rule of the session check (mayChangeSession): every way of changing a
// MySQL/MariaDB session's sql_mode or character_set_client re-arms it; plain reads and
// DML (whose SET is a clause) do not.
func TestMayChangeSession(t *testing.T) {
	arm := []string{
		"SET sql_mode = ''", "set names gbk", "SET CHARACTER SET sjis", "SET @@SESSION.sql_mode = 'ANSI_QUOTES'",
		"SET LOCAL sql_mode = ''", "  /* x */ SET character_set_client = big5", "/*!40101 SET NAMES big5 */",
		"SELECT 1 /*!40101 , (SELECT 1) */ SET", "SELECT 1; SET sql_mode = ''", "EXECUTE s", "EXECUTE IMMEDIATE 'SET sql_mode = '''''",
		"PREPARE s FROM 'SET NAMES gbk'", "CALL p()", "DO f()", "BEGIN NOT ATOMIC SET sql_mode = ''; END",
		"SET STATEMENT sql_mode = '' FOR SELECT 1", "RESET QUERY CACHE", "SELECT 'unterminated SET",
		"/*!40101SET character_set_client=latin1*/", "/*M!100100SET sql_mode=''*/",
	}
	keep := []string{
		"SELECT 1", "SELECT @@SESSION.sql_mode", "SELECT * FROM settings", "SELECT offset, charset_name FROM t",
		"UPDATE other SET x = 1", "INSERT INTO t SET a = 1", "INSERT INTO t (a) VALUES (1) ON DUPLICATE KEY UPDATE a = 2",
		"(SELECT 'SET sql_mode' FROM t)", "WITH x AS (SELECT 1) SELECT * FROM x", "DELETE FROM t WHERE name = 'set'",
		"SELECT f() -- SET NAMES gbk", "/* a plain comment */ SELECT 1",
	}
	for _, q := range arm {
		if !plan.MayChangeSession(q, sqllex.MySQL) {
			t.Errorf("%q does not re-arm the session check", q)
		}
	}
	for _, q := range keep {
		if plan.MayChangeSession(q, sqllex.MySQL) {
			t.Errorf("%q re-arms the session check", q)
		}
	}
}

func TestContainsWord(t *testing.T) {
	for _, c := range []struct {
		s, w string
		want bool
	}{{"SET x", "set", true}, {"x,SET", "set", true}, {"OFFSET", "set", false}, {"set_x", "set", false}, {"a SETb", "set", false}, {"é set", "set", true}, {"éset", "set", false}} {
		if got := plan.ContainsWord(c.s, c.w); got != c.want {
			t.Errorf("containsWord(%q, %q) = %v", c.s, c.w, got)
		}
	}
}
