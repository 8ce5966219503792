package mysql_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
)

func TestTombstoneDDLShape(t *testing.T) {
	ts := mysql.Dialect.(fencedsql.Tombstoner)
	ddl := ts.TombstoneDDL(fencedsql.TableName{Schema: "shop", Name: "pairs"}, []string{"a", "b"}, "tok")
	if len(ddl) != 5 {
		t.Fatalf("TombstoneDDL = %q", ddl)
	}
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		"CREATE TABLE IF NOT EXISTS `shop`.`fencedsql_tombstones` (table_name VARCHAR(64) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin NOT NULL, pk VARCHAR(700)",
		"CREATE TRIGGER `shop`.`fencedsql_tombdel_pairs` AFTER DELETE ON `shop`.`pairs` FOR EACH ROW",
		"VALUES ('pairs', CAST(JSON_ARRAY(OLD.`a`, OLD.`b`) AS CHAR CHARACTER SET utf8mb4) COLLATE utf8mb4_bin, COALESCE(OLD.`tok`, 0), UTC_TIMESTAMP(6))",
		"ON DUPLICATE KEY UPDATE fence_token = GREATEST(fence_token, VALUES(fence_token))",
		"CREATE TRIGGER `shop`.`fencedsql_tombins_pairs` BEFORE INSERT ON `shop`.`pairs` FOR EACH ROW",
		"AND t.fence_token > NEW.`tok`",
		"SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''tok'' cannot be null';",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("TombstoneDDL lacks %q:\n%s", want, all)
		}
	}
	if un := ts.UntombstoneDDL(fencedsql.TableName{Name: "pairs"}); len(un) != 2 || un[0] != "DROP TRIGGER IF EXISTS `fencedsql_tombdel_pairs`" {
		t.Errorf("UntombstoneDDL = %q", un)
	}
	long := strings.Repeat("é", 60)
	a, b := ts.UntombstoneDDL(fencedsql.TableName{Name: long + "1"}), ts.UntombstoneDDL(fencedsql.TableName{Name: long + "2"})
	if a[0] == b[0] || a[1] == b[1] || len([]rune(a[0])) > len("DROP TRIGGER IF EXISTS ``")+64 {
		t.Errorf("long names: %q, %q", a, b)
	}
}
