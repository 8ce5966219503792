package plan

// Statements that commit implicitly (MySQL/MariaDB). The servers run some statements
// only after committing the open transaction — the MySQL manual's "Statements That
// Cause an Implicit Commit", MariaDB's "SQL statements That Cause an Implicit Commit":
// DDL, ANALYZE/CHECK/OPTIMIZE/REPAIR TABLE, CACHE INDEX, LOAD INDEX INTO CACHE, FLUSH,
// RESET, account management (CREATE/ALTER/DROP/RENAME USER, roles, GRANT, REVOKE,
// SET PASSWORD), replication control (CHANGE MASTER|REPLICATION SOURCE, START/STOP
// SLAVE|REPLICA), plugins, SHUTDOWN, and the transaction control and LOCK TABLES the
// wrapper already refuses as text everywhere (route.go, textTx). Inside a transaction
// the wrapper began, such a statement commits the fenced writes before it at once,
// without the lease check, and leaves the session in autocommit: every later statement
// of "the transaction" commits on its own, a later refusal rolls nothing back, the
// claims' row locks are released, and Commit after a lost lease reports NotCommitted
// for writes that are committed. So on a pool with guarded tables they are refused
// inside a transaction (nothing sent) and pass outside one, where they commit nothing
// of the caller's. The planner does not know whether a transaction is open: it marks
// the plan (Plan.ImplicitCommit) and the wrapper refuses it when the connection has one.
//
// The class is judged by head keyword and fails closed: every CREATE, ALTER and DROP
// is in it, except CREATE [OR REPLACE] TEMPORARY TABLE and DROP TEMPORARY TABLE (the
// manuals also exempt TEMPORARY SEQUENCE, which commits on MariaDB 10.11) and DROP
// PREPARE (DEALLOCATE PREPARE); MariaDB's BACKUP statements are in it. A CREATE FUNCTION … SONAME (a loadable function, which the manuals exempt)
// is refused with the stored functions: DROP FUNCTION cannot tell them apart by text.
// PostgreSQL and SQLite run DDL inside the transaction: nothing is marked there.

// commitHeads are the heads, besides protectHeads and reachHeads, of statements that
// may commit implicitly on MySQL/MariaDB: controlHead gives them the full analysis.
var commitHeads = map[string]bool{
	"RENAME": true, "GRANT": true, "REVOKE": true, "FLUSH": true, "RESET": true, "OPTIMIZE": true,
	"REPAIR": true, "CHECK": true, "CACHE": true, "CHANGE": true, "STOP": true, "SHUTDOWN": true,
	"RESTART": true, "UNLOCK": true, "BACKUP": true,
}

// commitsImplicitly reports whether the statement whose head keyword (upper-cased) is
// at sig[first] commits the open transaction on MySQL/MariaDB, on a pool with guarded
// tables.
func (p *parser) commitsImplicitly(head string, first int) bool {
	if !p.rw.syn.ExecComments || len(p.rw.names) == 0 {
		return false
	}
	next := first + 1
	switch head {
	case "CREATE", "DROP":
		if head == "CREATE" && p.kw(next, "OR") && p.kw(next+1, "REPLACE") {
			next += 2
		}
		// CREATE [OR REPLACE] TEMPORARY TABLE, DROP TEMPORARY TABLE; DROP PREPARE is
		// DEALLOCATE PREPARE. MariaDB's CREATE TEMPORARY SEQUENCE commits (checked on
		// 10.11), whatever the manuals' list says: only TABLE is exempt.
		return !(p.kw(next, "TEMPORARY") && p.kw(next+1, "TABLE")) && !(head == "DROP" && p.kw(next, "PREPARE"))
	case "ALTER", "RENAME", "TRUNCATE", "GRANT", "REVOKE", "FLUSH", "OPTIMIZE", "REPAIR",
		"CACHE", "CHANGE", "INSTALL", "UNINSTALL", "SHUTDOWN", "RESTART",
		// MariaDB's BACKUP STAGE|LOCK|UNLOCK (checked on 10.11: each commits)
		"BACKUP",
		// transaction control and table locks: refused as text everywhere already
		// (textTx); UNLOCK TABLES commits when LOCK TABLES (refused) holds locks.
		"BEGIN", "LOCK", "UNLOCK", "XA", "COMMIT":
		return true
	case "ANALYZE", "CHECK":
		// ANALYZE|CHECK [NO_WRITE_TO_BINLOG|LOCAL] TABLE …, CHECK VIEW; not MariaDB's
		// ANALYZE <statement> (EXPLAIN that runs it) nor CHECKSUM TABLE.
		if p.kwIn(next, "NO_WRITE_TO_BINLOG", "LOCAL") {
			next++
		}
		return p.kwIn(next, "TABLE", "TABLES", "VIEW")
	case "LOAD":
		// LOAD INDEX INTO CACHE; LOAD DATA|XML commit only NDB tables.
		return p.kw(next, "INDEX")
	case "RESET":
		return !p.kw(next, "PERSIST") // MySQL's RESET PERSIST does not commit
	case "START", "STOP":
		// START|STOP SLAVE|REPLICA|ALL SLAVES|GROUP_REPLICATION; START TRANSACTION.
		return p.kwIn(next, "SLAVE", "REPLICA", "ALL", "GROUP_REPLICATION", "TRANSACTION")
	case "SET":
		// SET PASSWORD, SET DEFAULT ROLE (account management); SET autocommit is textTx.
		return p.kw(next, "PASSWORD") || p.kw(next, "DEFAULT") && p.kw(next+1, "ROLE") || p.hasWord("AUTOCOMMIT")
	}
	return false
}

// inTxRefused returns pl marked with the implicit-commit refusal when the statement (or
// one of its statements, or a reading of its executable comments, or the statement a
// SET STATEMENT … FOR runs) commits implicitly; pl unchanged otherwise. Shared plans
// are copied, never changed.
func (p *parser) inTxRefused(pl *Plan) *Plan {
	if !p.implicitCommit || pl == nil {
		return pl
	}
	cp := *pl
	cp.ImplicitCommit = unsupported(p.firstGuard(), "a statement that commits the open transaction implicitly on MySQL/MariaDB "+
		"(DDL, ANALYZE/CHECK/OPTIMIZE/REPAIR TABLE, CACHE INDEX, LOAD INDEX, FLUSH, RESET, account management, replication control) "+
		"inside a transaction on a pool with guarded tables: the server would commit the transaction's writes at once, without the lease check, "+
		"and run its later statements in autocommit; send it outside the transaction (CREATE TEMPORARY TABLE and DROP TEMPORARY TABLE pass)")
	return &cp
}
