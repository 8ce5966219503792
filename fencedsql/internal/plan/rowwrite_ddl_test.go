package plan

import (
	"testing"
)

// TestMayWriteRowsRowWritingDDL (red-team rt36a F2-F4, F6, F7, fail-open of the
// missing-table guard; the server-side forms are dialects/mysql and dialects/postgres
// TestMissingListedTable*): MayWriteRows decides what a pool with fenced_allow=ddl
// refuses while a listed table is missing. It answers false for statements that do
// write rows:
//   - DDL heads are never judged writing, but the partition and row-rewrite clauses
//     rowmove.go refuses "like TRUNCATE" remove, move or rewrite rows (MySQL/MariaDB
//     TRUNCATE/DROP/EXCHANGE PARTITION, PostgreSQL DETACH PARTITION, ALTER COLUMN …
//     TYPE … USING), while TRUNCATE itself is judged writing;
//   - PostgreSQL CREATE TABLE … AS WITH d AS (DELETE … RETURNING *) runs the DELETE
//     (the guarded-table path refuses it: "DDL whose query writes a guarded table");
//   - a MariaDB compound statement `BEGIN NOT ATOMIC …; END` is split at its inner ";"
//     and its first piece judged as the quiet statement BEGIN: TRUNCATE, CALL and
//     EXECUTE IMMEDIATE inside it are missed;
//   - MariaDB SET STATEMENT … FOR <statement> is judged as a quiet SET, and an UPDATE
//     right after FOR is skipped as a locking clause: the plain UPDATE is missed;
//   - MariaDB ALTER IGNORE TABLE deletes duplicate / unpartitionable rows.
//
// Right behaviour: each returns true.
func TestMayWriteRowsRowWritingDDL(t *testing.T) {
	for d, stmts := range map[testDialect][]string{
		mysqlTest: {
			"ALTER TABLE accounts TRUNCATE PARTITION p0",
			"ALTER TABLE accounts DROP PARTITION p0",
			"ALTER TABLE accounts EXCHANGE PARTITION p0 WITH TABLE swap",
			"BEGIN NOT ATOMIC TRUNCATE accounts; END",
			"BEGIN NOT ATOMIC CALL p(); END",
			"BEGIN NOT ATOMIC EXECUTE IMMEDIATE 'DELETE FROM accounts'; END",
			// F7: SET STATEMENT … FOR <statement> runs the statement
			"SET STATEMENT max_statement_time=100 FOR UPDATE accounts SET balance = 1",
			"SET STATEMENT max_statement_time=100 FOR TRUNCATE accounts",
			"SET STATEMENT max_statement_time=100 FOR LOAD DATA INFILE 'x' INTO TABLE accounts",
			"SET STATEMENT max_statement_time=100 FOR CALL p()",
			// F6: ALTER IGNORE deletes rows
			"ALTER IGNORE TABLE accounts ADD UNIQUE (balance)",
		},
		pgTest: {
			"ALTER TABLE accounts DETACH PARTITION accounts_p1",
			"ALTER TABLE accounts ALTER COLUMN balance TYPE bigint USING 0",
			"CREATE TABLE x AS WITH d AS (DELETE FROM accounts RETURNING *) SELECT * FROM d",
		},
	} {
		rw := newTestRewriter(t, d, Guard("acounts"))
		for _, sql := range stmts {
			if !rw.MayWriteRows(sql) {
				t.Errorf("%s: MayWriteRows(%q) = false; want true (it writes rows)", d.name, sql)
			}
		}
	}
}

// TestAlterColumnTypeRewriteRefused (red-team rt36a F1, fail-open under
// WithDDL; server forms: dialects/postgres TestAlterColumnTypeRefusedThroughPool,
// dialects/mysql TestModifyFenceColumnTypeRefused): the USING form of a
// column type change is refused whatever WithDDL says because it rewrites every row
// without the row triggers, but the same rewrite by the type's assignment cast is not:
// PostgreSQL ALTER COLUMN … TYPE numeric(19,-6) rounds every value, and MariaDB's
// MODIFY/CHANGE of the fencing column to FLOAT rounds every token (MariaDB, unlike
// PostgreSQL, lets a column the guard triggers use be retyped).
//
// Right behaviour: refused like the USING form (at least for the fencing columns).
func TestAlterColumnTypeRewriteRefused(t *testing.T) {
	for d, stmts := range map[testDialect][]string{
		pgTest: {
			"ALTER TABLE accounts ALTER COLUMN balance TYPE numeric(19,-6)",
		},
		mysqlTest: {
			"ALTER TABLE accounts MODIFY fence_token FLOAT NOT NULL",
			"ALTER TABLE accounts CHANGE fence_token fence_token FLOAT NOT NULL",
			"ALTER TABLE accounts MODIFY COLUMN version FLOAT NOT NULL",
		},
	} {
		rw := newTestRewriter(t, d, Guard("accounts"), WithDDL(true))
		for _, sql := range stmts {
			if _, err := rw.Rewrite(sql, false); !isRefusal(err) {
				t.Errorf("%s, WithDDL(true): %s passed (err %v); want refused like ALTER COLUMN … TYPE … USING", d.name, sql, err)
			}
		}
	}
}

// TestAlterIgnoreRefused (red-team rt36a F6, fail-open under WithDDL; server
// form: dialects/mysql TestAlterIgnoreRefusedThroughPool): MariaDB's ALTER IGNORE
// TABLE deletes the rows that duplicate a new unique key or fit no partition of a new
// partitioning, without the DELETE trigger (no tombstones), like TRUNCATE.
//
// Right behaviour: refused whatever WithDDL says.
func TestAlterIgnoreRefused(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDDL(true))
	for _, sql := range []string{
		"ALTER IGNORE TABLE accounts ADD UNIQUE (balance)",
		"ALTER IGNORE TABLE accounts PARTITION BY LIST (id) (PARTITION p0 VALUES IN (1))",
		"ALTER IGNORE TABLE accounts MODIFY balance BIGINT NOT NULL UNIQUE",
	} {
		if _, err := rw.Rewrite(sql, false); !isRefusal(err) {
			t.Errorf("WithDDL(true): %s passed (err %v); want refused like TRUNCATE (it deletes rows without the DELETE trigger)", sql, err)
		}
	}
}
