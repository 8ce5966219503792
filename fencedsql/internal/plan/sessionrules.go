package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// sessionWords are the words whose presence in a statement's text (anywhere, strings
// and comments included, any case) makes mayChangeSession look closer.
// "pragma": SQLite's PRAGMA journal_mode and synchronous change what its session check
// reads (red-team rt43b F2).
var sessionWords = []string{"set", "execute", "call", "do", "prepare", "reset", "discard", "names", "charset", "character", "sql_mode", "pragma"}

// MayChangeSession reports whether a statement sent as written may change the
// session settings the session check reads, so that the check must run again before
// the next guarded write (the rule for dialects without a dialect.SessionTracker: MySQL and
// MariaDB).
//
// On MySQL and MariaDB only a SET statement changes sql_mode or character_set_client
// for the rest of the session (SET, SET SESSION/LOCAL/@@…, SET NAMES, SET CHARACTER
// SET, SET STATEMENT … FOR), run directly, in a multi-statement string, in a compound
// statement (BEGIN NOT ATOMIC … END), in an executable comment, or through dynamic SQL
// (PREPARE … FROM / EXECUTE, EXECUTE IMMEDIATE); a stored function, procedure or
// trigger runs with the sql_mode and character set it was created with and the server
// restores the caller's afterwards, and a system variable cannot be assigned in an
// expression.
//
// That holds for those two only. The other protected settings the session check reads
// are session variables that a stored function, or a trigger of a table the statement
// writes, may set for good: a read or a write not flagged here can change them unseen
// (red-team rt10f F3; MariaDB 10.11, server-checked). Per setting, inside a function
// or trigger: sql_log_bin, skip_replication, gtid_domain_id, gtid_seq_no and
// autocommit are refused by the server; timestamp is kept but no longer dates
// anything the fence relies on (MySQL tombstones are dated by SYSDATE, and the
// one-statement DELETE's mark compares @@timestamp within one statement);
// max_join_size and sql_big_selects fail closed; sql_select_limit is refused by the
// connection's next session check (red-team rt40b F3); completion_type and
// server_id are an open finding (docs/design.md, "Known open findings"). A routine
// call cannot be told from the text (a user function in a SELECT, any write firing a
// trigger) without flagging every write, which would cost a session query after each.
//
// So a statement may change sql_mode and the character set unless either
//
//   - its text contains none of sessionWords as a whole word (a cheap scan, no
//     lexing: most reads), or
//   - it lexes, is a single statement without executable comments, and starts
//     (after opening parentheses) with SELECT, WITH, VALUES, TABLE, INSERT, REPLACE,
//     UPDATE or DELETE (the SET of UPDATE … SET is a clause, not a statement).
//
// CALL is counted as a change although the server restores the settings after a
// procedure: it costs one check after a rare statement. On PostgreSQL (whose pgx
// connections report most checked settings themselves, dialect.SessionTracker) the
// same rule tells the dialect to read again what it keeps (synchronous_commit): SET
// and SET LOCAL, RESET ALL and DISCARD ALL (which bring back the connection's
// defaults) are counted, and so are the transactions they ran in, whose end reverts
// them (conn.sessionReverted). The cost of the rule: one
// session query before the next guarded write after each statement it flags; plans
// are cached by text, so the rule runs once per distinct statement.
func MayChangeSession(sql string, syn sqllex.Syntax) bool {
	return mayChangeWith(sql, syn, sessionWords, nil)
}

// mayChangeWith is the rule of mayChangeSession with other words: a statement may
// change the setting unless its text holds none of words, or it is a single readable
// statement (no executable comments) whose first word is a read or a write, or, when
// harmless is given, harmless says its first word cannot change it.
func mayChangeWith(sql string, syn sqllex.Syntax, words []string, harmless func(head, sql string) bool) bool {
	// An executable comment's content runs ("/*!40101SET …*/": the word glued to the
	// version is not a whole word): the lexer below judges it.
	found := syn.ExecComments && strings.Contains(sql, "/*")
	for _, w := range words {
		if ContainsWord(sql, w) {
			found = true
			break
		}
	}
	if !found {
		return false
	}
	toks, err := sqllex.Lex(sql, syn)
	if err != nil {
		return true
	}
	sig := significant(sql, toks) // a hint (/*+ … */) changes nothing after the statement
	if len(sig) == 0 {
		return false
	}
	for i, t := range sig {
		switch {
		case t.Kind == sqllex.KindExecComment:
			return true
		case t.Kind == sqllex.KindPunct && t.Text(sql) == ";" && i+1 < len(sig):
			return true
		}
	}
	first := 0
	for first < len(sig)-1 && sig[first].Kind == sqllex.KindPunct && sig[first].Text(sql) == "(" {
		first++
	}
	if sig[first].Kind != sqllex.KindWord {
		return true
	}
	head := strings.ToUpper(sig[first].Text(sql))
	switch head {
	case "SELECT", "WITH", "VALUES", "TABLE", "INSERT", "REPLACE", "UPDATE", "DELETE":
		return false
	}
	return harmless == nil || !harmless(head, sql)
}

// Name resolution (docs/design.md G13). An unqualified table name resolves through the
// session — PostgreSQL's search_path (and "$user", so the role), MySQL's default
// database (USE), SQLite's attached databases (and an ATTACH alias qualifies one) — so
// the lazy schema check of a name is cached per pool only on connections whose
// resolution was never touched; a statement after which it may differ (resolvesNames)
// re-arms the check on its connection, which from then on caches per connection
// (conn.rearmNames). The words, per dialect, make the rule look closer; as for the
// session check, a statement that lexes as one read or write does not re-arm it, a SET
// or RESET on PostgreSQL only when it names the path, a schema, a role or ALL, and any
// statement mentioning search_path or set_config always does.
var (
	pgNamesWords     = []string{"set", "reset", "discard", "do", "execute", "call", "prepare"}
	mysqlNamesWords  = []string{"use"}
	sqliteNamesWords = []string{"attach", "detach"}
)

// pgHarmlessSet: a PostgreSQL SET or RESET that names neither the path (SET SCHEMA), a
// role (SET ROLE, SET SESSION AUTHORIZATION: "$user") nor ALL leaves resolution alone.
func pgHarmlessSet(head, sql string) bool {
	if head != "SET" && head != "RESET" {
		return false
	}
	for _, w := range []string{"schema", "role", "authorization", "all"} {
		if ContainsWord(sql, w) {
			return false
		}
	}
	return true
}

// ContainsWord reports whether s contains w (ASCII lower case) as a whole word,
// ignoring ASCII case: not preceded or followed by a letter, digit, _, $ or a
// non-ASCII byte.
func ContainsWord(s, w string) bool {
	for off := 0; off+len(w) <= len(s); {
		i := indexFold(s[off:], w)
		if i < 0 {
			return false
		}
		i += off
		end := i + len(w)
		if (i == 0 || !wordByte(s[i-1])) && (end == len(s) || !wordByte(s[end])) {
			return true
		}
		off = i + 1
	}
	return false
}

// indexFold is strings.Index ignoring ASCII case; sub is ASCII lower case.
func indexFold(s, sub string) int {
	for i := 0; i+len(sub) <= len(s); i++ {
		if ContainsFold(s[i:i+len(sub)], sub) {
			return i
		}
	}
	return -1
}

func wordByte(c byte) bool {
	return c == '_' || c == '$' || c >= 0x80 || '0' <= c && c <= '9' || 'a' <= c|0x20 && c|0x20 <= 'z'
}

// ResolvesNames reports whether a statement sent as written may change how the
// session resolves table names, so that the schema checks of this connection run
// again (see pgNamesWords).
func (rw *Planner) ResolvesNames(sql string) bool {
	if len(rw.names) == 0 {
		return false
	}
	if rw.syn == sqllex.Postgres {
		if ContainsWord(sql, "search_path") || ContainsWord(sql, "set_config") {
			return true
		}
		return mayChangeWith(sql, rw.syn, rw.namesWords, pgHarmlessSet)
	}
	return mayChangeWith(sql, rw.syn, rw.namesWords, nil)
}

// SessionPlan is the pass-through plan of a statement that may change the session
// settings or name resolution (ResolvesNames), create, rename or drop a relation a
// guarded name may resolve to (ShadowsNames), or drop the session's prepared
// statements (DropsStatements): a plan that re-arms the checks, or nil.
func (rw *Planner) SessionPlan(sql string) *Plan {
	s, n, d := rw.SetsSession(sql), rw.ResolvesNames(sql), rw.DropsStatements(sql)
	pool, session := rw.ShadowsNames(sql)
	n = n || session
	if !s && !n && !pool && !d {
		return nil
	}
	return &Plan{Kind: KindPass, NUser: -1, ResetsSession: s, ResetsNames: n, ResetsPoolNames: pool, DropsStatements: d}
}
