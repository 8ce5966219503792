package plan

// A plan is what the rewriter decided for one statement text: pass it through, or send
// a fenced version with arguments drawn from the caller's, the token and the version.

// ArgRef says where one argument of a rewritten statement comes from: a user argument
// (its index, ≥ 0), the transaction's fencing token, or the expected version.
type ArgRef int32

const (
	ArgToken   ArgRef = -1
	ArgVersion ArgRef = -2
	// ArgNonce is a value the wrapper chooses per claim, the same for its two
	// statements and never used before on the connection (claim_keyed.go).
	ArgNonce ArgRef = -3
	// ArgStamped is the row locators the statement before returned (Plan.Locators),
	// as a JSON array (delete_keyed.go).
	ArgStamped ArgRef = -4
	// ArgKeyItem is one row key of a listed DELETE (Plan.Listed): the wrapper binds
	// the keys its fencing UPDATE recorded, in order (delete_keyed.go).
	ArgKeyItem ArgRef = -5
)

type Kind uint8

const (
	KindPass Kind = iota
	KindUpdate
	KindDelete
	KindInsert
	KindClaim // a locking read: pre claims the rows, then the caller's text runs
)

func (k Kind) String() string {
	switch k {
	case KindUpdate:
		return "UPDATE"
	case KindDelete:
		return "DELETE"
	case KindInsert:
		return "INSERT"
	case KindClaim:
		return "SELECT … FOR UPDATE"
	}
	return "statement"
}

// Plan is the result of rewriting one statement text. Plans are immutable and cached.
type Plan struct {
	Kind  Kind // kindPass: send the user's text unchanged
	Guard *Table
	SQL   string
	Args  []ArgRef // the rewritten statement's arguments, in placeholder order
	NUser int      // placeholders in the user's statement (its NumInput)
	Pre   *Plan    // DELETE: the fencing UPDATE that runs first, in the same transaction
	// One (DELETE without ExpectVersion, on a dialect with a delete fence) is
	// the same DELETE as one statement: its WHERE marks the statement with the token for
	// the guard's triggers and its RETURNING list fails it on a row with a newer token
	// (dialect.DeleteFencer). It returns one row per deleted row. The wrapper sends it
	// only where the database's guard accepts it (DeleteFenceQuery); SQL and Pre otherwise.
	One *Plan
	// Hidden (One of a DELETE … RETURNING whose fence is a RETURNING check: MySQL/
	// MariaDB) is the number of trailing columns of the statement's rows that are the
	// wrapper's (the check), not the caller's: the wrapper drops them from the rows it
	// returns.
	Hidden int
	// Stamped (MySQL/MariaDB INSERT … ON DUPLICATE KEY UPDATE whose every assignment
	// sets a column to itself, the ORMs' "insert if absent") is the same INSERT with the
	// fencing assignments in its conflict branch. SQL leaves the conflict branch a
	// no-op, as ON CONFLICT DO NOTHING: nothing is written there, so nothing is fenced.
	// But MySQL runs the BEFORE UPDATE triggers for the duplicate row even when nothing
	// changes, and the guard refuses an UPDATE that does not advance the version: the
	// wrapper sends Stamped where the table's guard is installed (or cannot be asked).
	Stamped *Plan
	// Dropped are the byte ranges of the caller's text left out of sql: items that
	// assigned the token or version column, which the wrapper assigns itself.
	Dropped [][2]int
	// ClaimErr (kindClaim) refuses a locking read that cannot be claimed exactly when it
	// carries a token; without one the caller's text runs as a plain locking read.
	ClaimErr error
	// TwoStepErr (DELETE, kindClaim) refuses the statement's two-statement form (the
	// fencing UPDATE, then the caller's statement): its selection may find other rows
	// the second time (stable.go). The one-statement forms (One, ClaimOne) select once,
	// and run; the wrapper returns TwoStepErr, with a token, only where it would send
	// the two statements.
	TwoStepErr error
	// ClaimOne (kindClaim, PostgreSQL) is the claim and the read in one statement: it
	// stamps the rows the locking read selects and returns the caller's columns of
	// exactly those rows (a data-modifying WITH query, claim_one.go). nil where the
	// caller's statement has a shape one statement cannot answer identically: the
	// wrapper then runs Pre and the caller's text.
	ClaimOne *Plan
	// ClaimLocator (kindClaim, PostgreSQL) marks a claim that finds its rows by row
	// locator (ORDER BY, LIMIT, OFFSET or NOWAIT: claimByLocator), which the wrapper
	// refuses on a table a locator does not identify rows of (dialect.LocatorChecker).
	ClaimLocator bool
	// ConflictChecked marks the statements of a claim by row locator (its Pre, its
	// ClaimOne), which fail with an error carrying ClaimConflictMark when they stamped
	// fewer rows than they locked: the only statements whose such error is the claim's.
	ConflictChecked bool
	// ClaimRead (kindClaim) is the read of the two-statement claim, run after Pre in
	// place of the caller's text when the statement carries a token: the caller's
	// locking SELECT restricted to the rows carrying the token (claimRead). nil for a
	// locking read with an OFFSET, which is claimed in one statement or not at all.
	ClaimRead *Plan
	// Keyed (the Pre and the ClaimRead of a MySQL/MariaDB claim) is the
	// same statement keyed by row: the claim records the primary keys of the rows it
	// stamps, and the read is restricted to them (claim_keyed.go). Its SQL is complete
	// only with the table's key columns (WithRowKey); the wrapper sends it where it
	// knows them (the lazy schema checks on), the statement itself otherwise.
	Keyed *Plan
	// KeySlots (a Keyed plan) are the byte offsets in SQL where WithRowKey inserts the
	// row key expression, of the table as KeyQual names it.
	KeySlots []int
	KeyQual  string
	// Listed (a keyed DELETE on MySQL/MariaDB) is the same DELETE restricted to a list
	// of row keys given as arguments (ArgKeyItem) instead of the session's record:
	// an IN list the server searches by bisection, for a DELETE of many rows, where the
	// record's search per row costs the list's length. Its SQL is complete only with
	// the table's key columns (WithRowKey) and the list's length (WithKeyList): ListAt
	// is the byte offset in SQL where the list's placeholders go, ListArg the index in
	// Args where their references go (-1 once expanded).
	Listed          *Plan
	ListAt, ListArg int
	// ListInts (a listed DELETE completed by WithRowKey) says that its key is one
	// integer column, compared with the keys as integers: bind them so.
	ListInts bool
	// Returns (a DELETE) marks a statement with a RETURNING clause: it answers with
	// rows, and a driver's Exec may report none of them as affected.
	Returns bool
	// Locators (a keyed fencing UPDATE on SQLite) marks a statement that returns the
	// row locator of each row it stamped: the wrapper reads them (the rows stamped)
	// and binds them to the ArgStamped arguments of the statement after it.
	Locators bool
	// KeyRequired (a keyed claim) says that a table without a primary key refuses the
	// claim (a LIMIT, a selection by the statement's clock); otherwise such a table's
	// claim runs unkeyed, restricted by the token.
	KeyRequired bool
	// Point (a MySQL/MariaDB claim) are the conjuncts of its WHERE that fix a column to
	// a placeholder or an integer literal (claim_point.go): where they fix the whole
	// primary key to integers (FixesKey), the claim names at most one row and runs
	// unkeyed.
	Point []PointTerm
	// Absent (a claim) are the conjuncts of its WHERE that fix a column to a
	// placeholder or a literal (claim_absent.go): where they pin the table's whole
	// primary key (AbsentKey), the wrapper records a claim that found no row as the
	// key's absence claimed at the token (docs/design.md G10).
	Absent []KeyTerm
	// absentMySQL says Absent is in MySQL's spelling (AbsentKey's matching).
	absentMySQL bool
	// absentConjuncts (a claim with Absent) is the number of conjuncts at the top
	// level of its WHERE (AbsentOther).
	absentConjuncts int
	// NoWait (a claim, and each of its statements: ClaimPart) marks a locking read with
	// NOWAIT: the record of an absent key must not wait for a concurrent writer of the
	// key either (red-team rt44a F7), and the server's failure of a lock the claim's
	// statements did not wait for (55P03) stays the server's error, as the NOWAIT read's
	// own failure on a locked row is.
	NoWait bool
	// ClaimPart marks the statements a claim sends: its Pre and Pre.Keyed (the fencing
	// UPDATE, by WHERE or by row locator), its ClaimOne, its ClaimRead and
	// ClaimRead.Keyed. A lock wait the server ended without the lock in one of them
	// (dialect.ErrorLockWait: a lock timeout, a deadlock) fails the claim with
	// ErrClaimConflict wrapping the server's error, unless NoWait (red-team rt64a F2).
	ClaimPart bool
	// ResetsSession marks statements (SET … sql_mode) after which a connection's
	// session check must run again.
	ResetsSession bool
	// ResetsNames marks statements (SET search_path, USE, ATTACH …) after which the
	// session may resolve table names differently: the connection's schema checks run
	// again (docs/design.md G13).
	ResetsNames bool
	// ResetsPoolNames marks DDL that may create, rename or drop a relation a guarded
	// name resolves to on every connection (CREATE TABLE "$user".accounts …,
	// ShadowsNames): the pool's cached verdicts on names are dropped, so every
	// connection checks them again (docs/design.md G13).
	ResetsPoolNames bool
	// DropsStatements marks statements that may drop the session's prepared
	// statements (PostgreSQL's DISCARD, DEALLOCATE: DropsStatements): the driver's
	// statement cache on the connection is dropped before its next statement
	// (docs/design.md G13).
	DropsStatements bool
	// Ambiguous marks a statement planned on the lexer's reading of its text (it names
	// a guarded table, a guard object or a protected setting, or starts with a keyword
	// judged whatever it names) whose text holds a byte a session may read otherwise
	// (sessionDependent): before it is sent — passed through, or a claim without a
	// token sent as written — the wrapper makes sure the session reads text as the
	// lexer does (its session check).
	Ambiguous bool
	// TxOnly (SAVEPOINT, RELEASE [SAVEPOINT], ROLLBACK [WORK|TRANSACTION] TO as text, on
	// a pool with guarded tables) is the refusal of a statement that is safe only inside
	// a transaction the wrapper began (db.BeginTx): the wrapper returns it when the
	// connection has none (savepoint.go).
	TxOnly error
	// ImplicitCommit (MySQL/MariaDB, on a pool with guarded tables) is the refusal of a
	// statement the server runs only after committing the open transaction (DDL,
	// ANALYZE/CHECK/OPTIMIZE/REPAIR TABLE, FLUSH, RESET, account management, …:
	// implicitcommit.go): the wrapper returns it when the connection is inside a
	// transaction it began. Outside one the statement passes as before.
	ImplicitCommit error
	// Dynamic marks a statement that runs SQL the wrapper cannot read, allowed by
	// WithDynamicSQL (CALL, EXECUTE [IMMEDIATE], PREPARE, DO, a MariaDB compound
	// statement, a function that runs SQL text), on a pool with guarded tables. Such a
	// statement can end the open transaction without failing (a procedure that commits,
	// a handler that swallows the deadlock the server rolled the transaction back for,
	// EXECUTE IMMEDIATE 'COMMIT'): after it succeeds inside a transaction, the wrapper
	// asks the server whether the transaction is still open (dialect.TxOpenQuerier).
	Dynamic bool
	// LockThrough (kindPass, on a pool with guarded tables) lists the relations a
	// statement that holds a locking clause (FOR UPDATE/SHARE, LOCK IN SHARE MODE) but
	// names no guarded table reads: every name in a FROM or JOIN position, subqueries
	// included (a superset of what the clause locks). One of them may be a view over a
	// guarded table, whose rows the server locks while nothing claims them: when the
	// statement carries a token the wrapper asks the dialect (dialect.ViewLockChecker)
	// and refuses the statement if one is (docs/design.md G10). nil for every other plan.
	LockThrough []Relation
	// TextArgs (kindPass: a statement that runs dynamic SQL, or DDL) are its
	// placeholders whose bound value the server may read as SQL text (EXECUTE
	// IMMEDIATE ?, PREPARE s FROM ?, DO $1: boundtext.go). Before it is sent, the
	// wrapper plans the statement with each replaced by the literal of its value
	// (QuoteLiteral) and refuses it where that text is refused. nil for every other plan.
	TextArgs []TextArg
	// TextClass (kindPass) marks a statement that runs dynamic SQL or is DDL: the class
	// whose placeholders may be read as SQL text (TextArgs), set whether or not it holds
	// any. The wrapper refuses driver option arguments in it (pgx.QueryExecMode,
	// pgx.NamedArgs, …: dialect.SendChecker), which would move or replace the
	// arguments it judged, or bring in placeholders it never saw (red-team rt55e F2).
	TextClass bool
}

// Relation is a relation name as a statement wrote it: Text, its tokens joined by '.'
// (quotes kept: the server resolves it like the statement), and Parts, its decoded
// identifiers.
type Relation struct {
	Text  string
	Parts []string
}

// Passthrough is the shared plan of every statement sent unchanged.
var Passthrough = &Plan{Kind: KindPass, NUser: -1}

// PassAmbiguous is the shared plan of every statement sent unchanged after the full
// analysis of a text a session may read otherwise.
var PassAmbiguous = &Plan{Kind: KindPass, NUser: -1, Ambiguous: true}
