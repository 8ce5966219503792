package mysql_test

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/mysql"
)

func TestTombstoneDDLShape(t *testing.T) {
	ts := mysql.Dialect.(dialect.Tombstoner)
	key := []dialect.KeyColumn{{Name: "a", Type: "bigint(20)"}, {Name: "b", Type: "varchar(20)", Collation: "utf8mb4_general_ci"}, {Name: "c", Type: "timestamp(3)"}}
	ddl := ts.TombstoneDDL(dialect.TableName{Schema: "shop", Name: "pairs"}, key, "tok")
	if len(ddl) != 27 { // the install's check (ownedCheck: a case twin's recorder) of four statements, the tombstone table, four triggers of five statements each (replaceTrigger), the absence recorder's DROP and CREATE
		t.Fatalf("TombstoneDDL = %q", ddl)
	}
	all := strings.Join(ddl, "\n")
	for _, want := range []string{
		"CREATE TABLE IF NOT EXISTS `shop`.`fencedsql_tomb_pairs` (`a` bigint(20) NOT NULL, `b` varchar(20) COLLATE utf8mb4_general_ci NOT NULL, `c` timestamp(3) NOT NULL DEFAULT CURRENT_TIMESTAMP(3), fence_token BIGINT NOT NULL, deleted_at DATETIME(6) NOT NULL, PRIMARY KEY (`a`, `b`, `c`)) ENGINE=InnoDB",
		"CREATE TRIGGER `shop`.`fencedsql_tombrep_pairs` BEFORE INSERT ON `shop`.`pairs` FOR EACH ROW\n  SET @fencedsql_replace_mark_544438a7391e1e26 := CONVERT(CONCAT(CAST(NEW.`tok` AS SIGNED), '/', CONVERT(CONCAT(@@timestamp, ':', HEX(DATABASE())) USING ascii)) USING ascii)",
		"CREATE TRIGGER `shop`.`fencedsql_tombdel_pairs` AFTER DELETE ON `shop`.`pairs` FOR EACH ROW",
		"VALUES (OLD.`a`, OLD.`b`, OLD.`c`, GREATEST(COALESCE(OLD.`tok`, 0), IF(SUBSTRING_INDEX(@fencedsql_delete_mark, '/', -1) <=> CONCAT(@@timestamp), CAST(SUBSTRING_INDEX(@fencedsql_delete_mark, '/', 1) AS SIGNED), COALESCE(@fencedsql_delete_mark := NULL, 0)), " +
			"IF(SUBSTRING(@fencedsql_replace_mark_544438a7391e1e26, LOCATE('/', @fencedsql_replace_mark_544438a7391e1e26) + 1) <=> CONVERT(CONCAT(@@timestamp, ':', HEX(DATABASE())) USING ascii), CAST(SUBSTRING_INDEX(@fencedsql_replace_mark_544438a7391e1e26, '/', 1) AS SIGNED), COALESCE(@fencedsql_replace_mark_544438a7391e1e26 := NULL, 0))), CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00'))",
		"  ELSEIF @fencedsql_replace_mark_544438a7391e1e26 IS NULL THEN\n    SIGNAL SQLSTATE 'FNCD1' SET MESSAGE_TEXT = 'fencedsql: guard on pairs: a row this write displaced lost its token (a trigger set timestamp)';\n  END IF",
		"FOR EACH ROW\nIF CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00') IS NULL THEN\n  SIGNAL SQLSTATE 'FNCD1' SET MESSAGE_TEXT = 'fencedsql: guard on pairs: no server clock to date the tombstone (CONVERT_TZ gave NULL)';\nELSE\n  INSERT INTO",
		"GREATEST(COALESCE(OLD.`tok`, 0), COALESCE(NEW.`tok`, 0)), CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00'))",
		"ON DUPLICATE KEY UPDATE fence_token = GREATEST(fence_token, VALUES(fence_token))",
		"CREATE TRIGGER `shop`.`fencedsql_tombins_pairs` AFTER INSERT ON `shop`.`pairs` FOR EACH ROW",
		"CREATE TRIGGER `shop`.`fencedsql_tombkey_pairs` AFTER UPDATE ON `shop`.`pairs` FOR EACH ROW",
		"IF NOT (OLD.`a` <=> NEW.`a` AND OLD.`b` <=> NEW.`b` AND OLD.`c` <=> NEW.`c`) THEN",
		"GREATEST(COALESCE(OLD.`tok`, 0), COALESCE(NEW.`tok`, 0))",
		"IF EXISTS (SELECT 1 FROM `shop`.`fencedsql_tomb_pairs` t WHERE t.`a` = NEW.`a` AND t.`b` = NEW.`b` AND t.`c` = NEW.`c` AND (NEW.`tok` IS NULL OR t.fence_token > NEW.`tok`) LOCK IN SHARE MODE) THEN",
		"SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''tok'' cannot be null';",
		// The absence recorder (absence.go): text for the string and integer key
		// columns, only in a strict mode, nothing for a NULL, a newer tombstone
		// fences the claim (rt44e F2: NULL refused, re-signalled on the token column).
		"DROP PROCEDURE IF EXISTS `shop`.`fencedsql_tombclaim_pairs`",
		// rt45a: the string key's parameter in its column's collation (general_ci:
		// an over-long value records nothing), the key looked up after the record.
		"CREATE PROCEDURE `shop`.`fencedsql_tombclaim_pairs`(fencedsql_k1 LONGTEXT CHARACTER SET utf8mb4, fencedsql_k2 LONGTEXT CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci, fencedsql_k3 LONGTEXT CHARACTER SET utf8mb4, fencedsql_tok BIGINT) MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT 'fencedsql absence recorder v3'\nBEGIN\n  DECLARE EXIT HANDLER FOR 1264 BEGIN END;\n  DECLARE EXIT HANDLER FOR 1406 BEGIN END;",
		"      IF EXISTS (SELECT 1 FROM `shop`.`pairs` x WHERE x.`a` = fencedsql_k1 AND x.`b` = fencedsql_k2 AND x.`c` = fencedsql_k3 AND (x.`tok` IS NULL OR x.`tok` < fencedsql_tok) FOR UPDATE) THEN\n        SIGNAL SQLSTATE 'FNCD4'",
		"  IF FIND_IN_SET('STRICT_TRANS_TABLES', @@SESSION.sql_mode) = 0 AND FIND_IN_SET('STRICT_ALL_TABLES', @@SESSION.sql_mode) = 0 THEN\n    SIGNAL SQLSTATE 'FNCD1'",
		"  IF fencedsql_k1 IS NOT NULL AND fencedsql_k2 IS NOT NULL AND fencedsql_k3 IS NOT NULL AND fencedsql_tok IS NOT NULL THEN\n    BEGIN\n      DECLARE EXIT HANDLER FOR 1048 SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''tok'' cannot be null';\n" +
			"      INSERT INTO `shop`.`fencedsql_tomb_pairs` (`a`, `b`, `c`, fence_token, deleted_at) VALUES (fencedsql_k1, fencedsql_k2, fencedsql_k3, fencedsql_tok, CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00'))\n        ON DUPLICATE KEY UPDATE fence_token = IF(fence_token > VALUES(fence_token), NULL, VALUES(fence_token)), deleted_at = GREATEST(deleted_at, VALUES(deleted_at));\n    END;",
	} {
		if !strings.Contains(all, want) {
			t.Errorf("TombstoneDDL lacks %q:\n%s", want, all)
		}
	}
	if bin := strings.Join(ts.TombstoneDDL(dialect.TableName{Name: "u"}, []dialect.KeyColumn{{Name: "id", Type: "binary(16)"}}, "tok"), "\n"); !strings.Contains(bin, "(fencedsql_k1 LONGBLOB, fencedsql_tok BIGINT)") {
		t.Errorf("recorder of a binary key: %s", bin)
	}
	if un := ts.UntombstoneDDL(dialect.TableName{Name: "pairs"}); len(un) != 6 || un[0] != "DROP TRIGGER IF EXISTS `fencedsql_tombdel_pairs`" || un[3] != "DROP TRIGGER IF EXISTS `fencedsql_tombrep_pairs`" || un[4] != "DROP PROCEDURE IF EXISTS `fencedsql_tombclaim_pairs`" {
		t.Errorf("UntombstoneDDL = %q", un)
	}
	long := strings.Repeat("é", 60)
	a, b := ts.UntombstoneDDL(dialect.TableName{Name: long + "1"}), ts.UntombstoneDDL(dialect.TableName{Name: long + "2"})
	if a[0] == b[0] || a[1] == b[1] || a[4] == b[4] || len([]rune(a[0])) > len("DROP TRIGGER IF EXISTS ``")+64 || len([]rune(a[4])) > len("DROP PROCEDURE IF EXISTS ``")+64 {
		t.Errorf("long names: %q, %q", a, b)
	}
}
