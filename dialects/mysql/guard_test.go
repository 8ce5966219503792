package mysql_test

import (
	"strings"
	"testing"
	"unicode/utf8"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

func TestGuards(t *testing.T) {
	fencetest.RunGuards(t, fencetest.MySQL(), mysql.Dialect, mysql.IsGuardError)
}

// BenchmarkGuard reports what the guard trigger costs a fenced UPDATE (guard-cost).
func BenchmarkGuard(b *testing.B) { fencetest.BenchGuard(b, fencetest.MySQL(), mysql.Dialect) }

func TestGuardDDLShape(t *testing.T) {
	g := mysql.Dialect.(dialect.Guarder)
	ddl := g.GuardDDL(dialect.TableName{Schema: "shop", Name: "acc`ounts"}, "fence_token", "ver'sion")
	// A qualified table's floor is seeded from the connection database's floor, whose
	// table the first two statements create when missing (red-team rt42c F1).
	if len(ddl) != 16 || !strings.HasPrefix(ddl[0], "CREATE TABLE IF NOT EXISTS `fencedsql_floor` (") || !strings.HasPrefix(ddl[1], "INSERT IGNORE INTO `fencedsql_floor` (id, floor) SELECT 1, 0 FROM DUAL") {
		t.Fatalf("GuardDDL = %q", ddl)
	}
	ddl = ddl[2:]
	if len(ddl) != 14 { // the floor table and its row, the UPDATE guard and the INSERT floor trigger (five statements each: replaceTrigger), the fence function
		t.Fatalf("GuardDDL = %q", ddl)
	}
	if ddl[12] != "DROP FUNCTION IF EXISTS `shop`.`fencedsql_fence_acc``ounts`" ||
		!strings.HasPrefix(ddl[13], "CREATE FUNCTION `shop`.`fencedsql_fence_acc``ounts`(cur BIGINT, tok BIGINT, fl BIGINT) RETURNS INT NOT DETERMINISTIC NO SQL SQL SECURITY INVOKER COMMENT 'fencedsql one-statement delete v4'") ||
		!strings.Contains(ddl[13], "IF cur IS NULL OR cur > tok THEN\n    SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''fence_token'' cannot be null';") ||
		!strings.Contains(ddl[13], "IF fl IS NULL OR tok < fl THEN\n    SIGNAL SQLSTATE 'FNCD2'") ||
		!strings.Contains(ddl[13], "IF NOT (SUBSTRING_INDEX(@fencedsql_delete_mark, '/', -1) <=> CONCAT(@@timestamp)) THEN\n    SIGNAL SQLSTATE 'FNCD3'") {
		t.Errorf("fence function DDL = %q", ddl[12:])
	}
	if ddl[0] != "CREATE TABLE IF NOT EXISTS `shop`.`fencedsql_floor` (id INT NOT NULL PRIMARY KEY, floor BIGINT NOT NULL, CONSTRAINT fencedsql_floor_one_row CHECK (id = 1), CONSTRAINT fencedsql_floor_not_negative CHECK (floor >= 0)) ENGINE=InnoDB" ||
		!strings.HasPrefix(ddl[1], "INSERT IGNORE INTO `shop`.`fencedsql_floor` (id, floor) SELECT 1, COALESCE((SELECT MAX(h.floor) FROM `fencedsql_floor` h), 0) FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = 'shop' AND ") {
		t.Errorf("floor DDL = %q", ddl[:2])
	}
	// Each trigger replaces the one of its name through a shadow copy, so that the
	// table is never without it (red-team rt34a F1).
	for i, want := range []string{
		"DROP TRIGGER IF EXISTS `shop`.`fencedsql_next_fencedsql_guard_acc``ounts`",
		"CREATE TRIGGER `shop`.`fencedsql_next_fencedsql_guard_acc``ounts` BEFORE UPDATE ON `shop`.`acc``ounts` FOR EACH ROW\n",
		"DROP TRIGGER IF EXISTS `shop`.`fencedsql_guard_acc``ounts`",
		"CREATE TRIGGER `shop`.`fencedsql_guard_acc``ounts` BEFORE UPDATE ON `shop`.`acc``ounts` FOR EACH ROW\n",
		"DROP TRIGGER IF EXISTS `shop`.`fencedsql_next_fencedsql_guard_acc``ounts`",
	} {
		if !strings.HasPrefix(ddl[2+i], want) {
			t.Errorf("ddl[%d] = %q, want %q", 2+i, ddl[2+i], want)
		}
	}
	if ddl[3][strings.Index(ddl[3], " BEFORE"):] != ddl[5][strings.Index(ddl[5], " BEFORE"):] {
		t.Errorf("the shadow's definition is not the trigger's:\n%s\n%s", ddl[3], ddl[5])
	}
	if want := "CREATE TRIGGER `shop`.`fencedsql_floor_acc``ounts` BEFORE INSERT ON `shop`.`acc``ounts` FOR EACH ROW\n" +
		"  IF NEW.`fence_token` IS NULL OR NEW.`ver'sion` IS NULL OR NOT COALESCE(NEW.`fence_token` >= (SELECT f.floor FROM fencedsql_floor f WHERE f.id = 1 LOCK IN SHARE MODE), FALSE) THEN\n" +
		"    IF NEW.`fence_token` IS NULL THEN SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''fence_token'' cannot be null';\n" +
		"    ELSEIF NEW.`ver'sion` IS NULL THEN SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''ver''sion'' cannot be null';\n" +
		"    ELSE SIGNAL SQLSTATE 'FNCD2' SET MESSAGE_TEXT = 'fencedsql: token floor on acc`ounts: token below the floor';\n" +
		"    END IF;\n  END IF"; ddl[10] != want {
		t.Errorf("floor trigger = %q, want %q", ddl[10], want)
	}
	for _, want := range []string{
		"CREATE TRIGGER `shop`.`fencedsql_guard_acc``ounts` BEFORE UPDATE ON `shop`.`acc``ounts` FOR EACH ROW\nBEGIN\n  /* fencedsql guard v2 */\n",
		"  IF NEW.`fence_token` IS NULL OR NEW.`ver'sion` IS NULL OR CAST(NEW.`fence_token` AS SIGNED) < CAST(OLD.`fence_token` AS SIGNED) OR CAST(NEW.`ver'sion` AS SIGNED) <= CAST(OLD.`ver'sion` AS SIGNED) OR NOT COALESCE(NEW.`fence_token` >= (SELECT f.floor FROM fencedsql_floor f WHERE f.id = 1 LOCK IN SHARE MODE), FALSE) THEN\n",
		"    IF NEW.`fence_token` IS NULL THEN\n      SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''fence_token'' cannot be null';",
		"MESSAGE_TEXT = 'Column ''ver''sion'' cannot be null'",
		"    ELSEIF CAST(NEW.`fence_token` AS SIGNED) < CAST(OLD.`fence_token` AS SIGNED) THEN\n      SIGNAL SQLSTATE 'FNCD1'",
		"    ELSEIF CAST(NEW.`ver'sion` AS SIGNED) <= CAST(OLD.`ver'sion` AS SIGNED) THEN\n      SIGNAL SQLSTATE 'FNCD1' SET MESSAGE_TEXT = 'fencedsql: guard on acc`ounts: UPDATE does not advance the version';",
		"    ELSE\n      SIGNAL SQLSTATE 'FNCD2' SET MESSAGE_TEXT = 'fencedsql: token floor on acc`ounts: token below the floor';",
	} {
		if !strings.Contains(ddl[5], want) {
			t.Errorf("CREATE TRIGGER lacks %q:\n%s", want, ddl[5])
		}
	}
	// Long names: trigger names within 64 characters and distinct; messages within 128.
	long := strings.Repeat("é", 60)
	a, b := g.UnguardDDL(dialect.TableName{Name: long + "1"})[0], g.UnguardDDL(dialect.TableName{Name: long + "2"})[0]
	name := func(s string) string { return s[strings.Index(s, "`")+1 : strings.LastIndex(s, "`")] }
	if a == b || utf8.RuneCountInString(name(a)) > 64 {
		t.Errorf("long names: %q, %q", a, b)
	}
	longDDL := g.GuardDDL(dialect.TableName{Name: long}, "fence_token", "version")
	if shadow := name(longDDL[2]); utf8.RuneCountInString(shadow) > 64 || shadow == name(longDDL[4]) || shadow == name(longDDL[7]) {
		t.Errorf("long names: shadow %q (guard %q, floor shadow %q)", shadow, name(longDDL[4]), name(longDDL[7]))
	}
	for _, line := range strings.Split(longDDL[5]+"\n"+longDDL[10], "\n") {
		if i := strings.Index(line, "MESSAGE_TEXT = '"); i >= 0 {
			msg := strings.TrimSuffix(line[i+len("MESSAGE_TEXT = '"):], "';")
			if utf8.RuneCountInString(msg) > 128 {
				t.Errorf("message longer than 128 characters: %q", msg)
			}
		}
	}
	if un := g.UnguardDDL(dialect.TableName{Name: "accounts"}); len(un) != 3 || un[2] != "DROP FUNCTION IF EXISTS `fencedsql_fence_accounts`" || un[0] != "DROP TRIGGER IF EXISTS `fencedsql_guard_accounts`" || un[1] != "DROP TRIGGER IF EXISTS `fencedsql_floor_accounts`" {
		t.Errorf("UnguardDDL = %q", un)
	}
}
