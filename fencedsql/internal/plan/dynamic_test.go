package plan

import "testing"

// TestDynamicFlag: under WithDynamicSQL(true) every statement that runs dynamic SQL is
// marked Dynamic (the wrapper then asks whether the transaction survived it), and no
// other statement is; without the option they are refused.
func TestDynamicFlag(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDynamicSQL(true))
	for _, in := range []string{
		"CALL bump(2)", "call note_it()", "EXECUTE IMMEDIATE 'SELECT 1'", "EXECUTE IMMEDIATE CONCAT('COM', 'MIT')",
		"EXECUTE stmt", "PREPARE stmt FROM 'COMMIT'", "BEGIN NOT ATOMIC COMMIT; END",
		"SELECT 1; CALL p()", "/*!50000 CALL p() */",
	} {
		p, err := rw.Rewrite(in, false)
		if err != nil {
			t.Errorf("rewrite(%q): %v", in, err)
			continue
		}
		if !p.Dynamic {
			t.Errorf("rewrite(%q): not marked Dynamic", in)
		}
	}
	for _, in := range []string{"SELECT 1", "UPDATE other SET v = 1", "UPDATE accounts SET balance = 1 WHERE id = 1", "SET @x = 1", "SAVEPOINT a"} {
		p, err := rw.Rewrite(in, false)
		if err != nil {
			t.Errorf("rewrite(%q): %v", in, err)
			continue
		}
		if p.Dynamic {
			t.Errorf("rewrite(%q): marked Dynamic", in)
		}
	}
	strict := newTestRewriter(t, mysqlTest, Guard("accounts"))
	if _, err := strict.Rewrite("CALL bump(2)", false); !isRefusal(err) {
		t.Errorf("CALL without WithDynamicSQL: %v, want refused", err)
	}
}

// TestPrepareTransactionRefused: PostgreSQL's PREPARE TRANSACTION ends the session's
// transaction; it is refused on a pool with guarded tables even when dynamic SQL is
// allowed (a PREPARE of a statement is not).
func TestPrepareTransactionRefused(t *testing.T) {
	rw := newTestRewriter(t, pgTest, Guard("accounts"), WithDynamicSQL(true))
	for _, in := range []string{"PREPARE TRANSACTION 'x'", "prepare transaction 'gid-1'", "SELECT 1; PREPARE TRANSACTION 'x'"} {
		if _, err := rw.Rewrite(in, false); !isRefusal(err) {
			t.Errorf("rewrite(%q): %v, want refused", in, err)
		}
	}
	if p, err := rw.Rewrite("PREPARE q AS SELECT 1", false); err != nil || !p.Dynamic {
		t.Errorf("PREPARE q AS SELECT 1 under WithDynamicSQL: %v, %v; want passed, marked Dynamic", p, err)
	}
}

// TestExecuteImmediateLiteralJudged: the statement an EXECUTE IMMEDIATE runs from a
// string literal is judged as if sent alone: transaction control is refused, a
// statement that commits implicitly is marked ImplicitCommit (refused inside a
// transaction).
func TestExecuteImmediateLiteralJudged(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDynamicSQL(true))
	for _, in := range []string{"EXECUTE IMMEDIATE 'COMMIT'", "execute immediate 'commit work'", "EXECUTE IMMEDIATE 'ROLLBACK'",
		"EXECUTE IMMEDIATE 'START TRANSACTION'", "EXECUTE IMMEDIATE \"BEGIN\"", "EXECUTE IMMEDIATE 'XA START 1'"} {
		if _, err := rw.Rewrite(in, false); !isRefusal(err) {
			t.Errorf("rewrite(%q): %v, want refused", in, err)
		}
	}
	for _, in := range []string{"EXECUTE IMMEDIATE 'CREATE TABLE zz (a INT)'", "EXECUTE IMMEDIATE 'DROP TABLE other'", "EXECUTE IMMEDIATE 'FLUSH TABLES'"} {
		p, err := rw.Rewrite(in, false)
		if err != nil || p.ImplicitCommit == nil || !p.Dynamic {
			t.Errorf("rewrite(%q): %+v, %v; want passed, marked ImplicitCommit and Dynamic", in, p, err)
		}
	}
	for _, in := range []string{"EXECUTE IMMEDIATE 'ROLLBACK TO SAVEPOINT a'", "EXECUTE IMMEDIATE 'CREATE TEMPORARY TABLE zz (a INT)'", "EXECUTE IMMEDIATE 'SELECT 1'"} {
		p, err := rw.Rewrite(in, false)
		if err != nil || p.ImplicitCommit != nil {
			t.Errorf("rewrite(%q): %+v, %v; want passed unmarked", in, p, err)
		}
	}
}

// TestExecuteNamingGuardedTableRefused: an EXECUTE [IMMEDIATE] whose text names a
// guarded table — a literal, a double-quoted literal, a CONCAT of literals, with USING —
// is refused (a *Refusal: ErrUnsupported) even when dynamic SQL is allowed, as PREPARE … FROM and DO of the same text
// are (red-team rt33a F9: it wrote the table unfenced in a token-0 transaction). One
// naming none still passes, marked Dynamic.
func TestExecuteNamingGuardedTableRefused(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDynamicSQL(true))
	for _, in := range []string{
		"EXECUTE IMMEDIATE 'UPDATE accounts SET balance = 9 WHERE id = 2'",
		"EXECUTE IMMEDIATE 'UPDATE accounts SET balance = ? WHERE id = 3' USING 8",
		`EXECUTE IMMEDIATE "DELETE FROM accounts WHERE id = 1"`,
		"EXECUTE IMMEDIATE CONCAT('UPDATE accounts ', 'SET balance = 9')",
		"EXECUTE IMMEDIATE 'SELECT * FROM accounts FOR UPDATE'",
		"PREPARE s FROM 'UPDATE accounts SET balance = 1'",
	} {
		if _, err := rw.Rewrite(in, false); !isRefusal(err) {
			t.Errorf("rewrite(%q): %v, want refused", in, err)
		}
	}
	for _, in := range []string{"EXECUTE IMMEDIATE 'UPDATE other SET v = 1'", "EXECUTE s USING @a", "EXECUTE IMMEDIATE @q"} {
		if p, err := rw.Rewrite(in, false); err != nil || !p.Dynamic {
			t.Errorf("rewrite(%q): %+v, %v; want passed, marked Dynamic", in, p, err)
		}
	}
}

// TestCompoundCommitMarked: a MariaDB compound statement whose statements commit or
// end the transaction (as far as its text shows) is marked ImplicitCommit: refused
// inside a transaction.
func TestCompoundCommitMarked(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDynamicSQL(true))
	for _, in := range []string{"BEGIN NOT ATOMIC COMMIT; END", "BEGIN NOT ATOMIC UPDATE other SET v = 1; COMMIT; END",
		"BEGIN NOT ATOMIC IF 1 THEN ROLLBACK; END IF; END", "BEGIN NOT ATOMIC START TRANSACTION; END",
		"BEGIN NOT ATOMIC BEGIN CREATE TABLE zz (a INT); END; END"} {
		p, err := rw.Rewrite(in, false)
		if err != nil || p.ImplicitCommit == nil || !p.Dynamic {
			t.Errorf("rewrite(%q): %+v, %v; want passed, marked ImplicitCommit and Dynamic", in, p, err)
		}
	}
	for _, in := range []string{"BEGIN NOT ATOMIC UPDATE other SET v = 1; END", "BEGIN NOT ATOMIC SELECT 1; ROLLBACK TO SAVEPOINT a; END",
		"BEGIN NOT ATOMIC DECLARE x INT DEFAULT 1; SELECT x; END"} {
		p, err := rw.Rewrite(in, false)
		if err != nil || p.ImplicitCommit != nil || !p.Dynamic {
			t.Errorf("rewrite(%q): %+v, %v; want passed, Dynamic, not ImplicitCommit", in, p, err)
		}
	}
}
