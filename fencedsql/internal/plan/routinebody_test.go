package plan

import (
	"strings"
	"testing"
)

// A CREATE of a trigger or routine whose block body ends in "…; END" (every SQLite
// trigger, a MySQL/MariaDB BEGIN … END body, a PostgreSQL BEGIN ATOMIC body) is one
// statement through a WithDDL pool: on tables that are not guarded it passes, instead
// of its END being refused as transaction control (red-team rt50d F2).
func TestRoutineBodyThroughDDLPool(t *testing.T) {
	pass := map[string][]string{
		"sqlite": {
			"CREATE TRIGGER other_ai AFTER INSERT ON other BEGIN INSERT INTO other_log (id) VALUES (NEW.id); END",
			"CREATE TEMP TRIGGER IF NOT EXISTS other_au AFTER UPDATE ON other WHEN NEW.n > 0 BEGIN UPDATE other SET at = CASE WHEN NEW.n > 1 THEN 'x' ELSE 'y' END WHERE id = NEW.id; INSERT INTO other_log (id) VALUES (NEW.id); END;",
			"CREATE TRIGGER a AFTER INSERT ON other BEGIN SELECT 1; END; CREATE TRIGGER b AFTER DELETE ON other BEGIN SELECT 2; END",
		},
		"mysql": {
			"CREATE TRIGGER other_ai AFTER INSERT ON other FOR EACH ROW BEGIN INSERT INTO other_log (id) VALUES (NEW.id); END",
			"CREATE TRIGGER other_bi BEFORE INSERT ON other FOR EACH ROW FOLLOWS other_b0 BEGIN SET NEW.n = 1; END",
			"CREATE PROCEDURE log_one(i int) BEGIN INSERT INTO other_log VALUES (i); END",
			"CREATE DEFINER = CURRENT_USER PROCEDURE p(IN i int) COMMENT 'x' MODIFIES SQL DATA body: BEGIN DECLARE n INT DEFAULT 0; IF i > 0 THEN SET n = CASE WHEN i > 1 THEN 2 ELSE 1 END; END IF; BEGIN INSERT INTO other_log VALUES (n); END; START TRANSACTION; COMMIT; END body",
			"CREATE FUNCTION f(i int) RETURNS decimal(10,2) unsigned DETERMINISTIC BEGIN DECLARE r int; SET r = i + 1; RETURN r; END",
			"CREATE EVENT e ON SCHEDULE EVERY 1 DAY DO BEGIN DELETE FROM other_log WHERE id < 0; END",
		},
		"postgres": {
			"CREATE FUNCTION add_one(i int) RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT i + 1; END",
			"CREATE OR REPLACE PROCEDURE log_one(i int) LANGUAGE sql BEGIN ATOMIC INSERT INTO other_log VALUES (i); SELECT CASE WHEN i > 0 THEN 1 END; END;",
		},
	}
	// Still refused: a statement after the body, a body the span does not recognise
	// whose END is read as a statement, a body naming a guarded table.
	refused := map[string][]string{
		"sqlite": {
			"CREATE TRIGGER t AFTER INSERT ON other BEGIN SELECT 1; END; COMMIT",
			"CREATE TRIGGER t AFTER INSERT ON other BEGIN SELECT 1; END; END",
			"CREATE TRIGGER t AFTER INSERT ON other BEGIN SELECT 1; END; BEGIN",
			"CREATE TRIGGER t AFTER INSERT ON other BEGIN UPDATE accounts SET balance = 0; END",
			"CREATE TABLE x (a int); END",
		},
		"mysql": {
			"CREATE TRIGGER t AFTER INSERT ON other FOR EACH ROW BEGIN SET @a = 1; END; START TRANSACTION",
			// the table is named begin: the body is one statement, what follows is not
			"CREATE TRIGGER t BEFORE INSERT ON begin FOR EACH ROW SET NEW.x = 1; START TRANSACTION; END",
			// DO begin + 1 is no block
			"CREATE PROCEDURE p() BEGIN DO begin + 1; END; START TRANSACTION; END",
			"CREATE PROCEDURE p() BEGIN SELECT CASE WHEN end THEN begin + 1 ELSE 0 END FROM t; END; START TRANSACTION; END",
			"CREATE PROCEDURE p() BEGIN END; COMMIT",
			"CREATE PROCEDURE p() BEGIN SELECT 1; BEGIN; END; START TRANSACTION; END",
			// a block after THEN is not counted: the count closes early (stricter)
			"CREATE PROCEDURE p() BEGIN IF 1 THEN BEGIN SELECT 1; END; END IF; END",
			"CREATE FUNCTION f() RETURNS int RETURN begin + 1; START TRANSACTION; END",
			"CREATE PROCEDURE p() BEGIN UPDATE accounts SET balance = 0; END",
		},
		"postgres": {
			"CREATE FUNCTION f() RETURNS void LANGUAGE sql BEGIN ATOMIC END; COMMIT; END",
			"CREATE FUNCTION f(begin int) RETURNS int LANGUAGE sql RETURN begin; COMMIT; END",
			"CREATE FUNCTION f() RETURNS int LANGUAGE sql AS $$ SELECT 1 $$; END",
			"CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END; COMMIT",
			"CREATE FUNCTION f() RETURNS int LANGUAGE sql BEGIN ATOMIC SELECT 1; END x; COMMIT; END",
			"CREATE PROCEDURE p() LANGUAGE sql BEGIN ATOMIC UPDATE accounts SET balance = 0; END",
		},
	}
	for _, d := range protectDialects {
		rw := newTestRewriter(t, d, Guard("accounts"), WithDDL(true))
		for _, q := range pass[d.name] {
			if _, err := rw.Rewrite(q, false); err != nil {
				t.Errorf("%s, WithDDL: %q refused: %v", d.name, q, err)
			}
		}
		for _, q := range refused[d.name] {
			if _, err := rw.Rewrite(q, false); !isRefusal(err) {
				t.Errorf("%s, WithDDL: %q = %v; want ErrUnsupported", d.name, q, err)
			}
		}
		// without WithDDL, routine DDL stays refused as such
		plain := newTestRewriter(t, d, Guard("accounts"))
		for _, q := range pass[d.name] {
			if _, err := plain.Rewrite(q, false); !isRefusal(err) || strings.Contains(err.Error(), "transaction control") {
				t.Errorf("%s, no WithDDL: %q = %v; want the routine DDL refusal", d.name, q, err)
			}
		}
	}
}
