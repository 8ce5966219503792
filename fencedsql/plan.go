package fencedsql

// A plan is what the rewriter decided for one statement text: pass it through, or send
// a fenced version with arguments drawn from the caller's, the token and the version.

// argRef says where one argument of a rewritten statement comes from: a user argument
// (its index, ≥ 0), the transaction's fencing token, or the expected version.
type argRef int32

const (
	argToken   argRef = -1
	argVersion argRef = -2
)

type stmtKind uint8

const (
	kindPass stmtKind = iota
	kindUpdate
	kindDelete
	kindInsert
	kindClaim // a locking read: pre claims the rows, then the caller's text runs
)

func (k stmtKind) String() string {
	switch k {
	case kindUpdate:
		return "UPDATE"
	case kindDelete:
		return "DELETE"
	case kindInsert:
		return "INSERT"
	case kindClaim:
		return "SELECT … FOR UPDATE"
	}
	return "statement"
}

// plan is the result of rewriting one statement text. Plans are immutable and cached.
type plan struct {
	kind  stmtKind // kindPass: send the user's text unchanged
	guard *guard
	sql   string
	args  []argRef // the rewritten statement's arguments, in placeholder order
	nUser int      // placeholders in the user's statement (its NumInput)
	pre   *plan    // DELETE: the fencing UPDATE that runs first, in the same transaction
	// dropped are the byte ranges of the caller's text left out of sql: items that
	// assigned the token or version column, which the wrapper assigns itself.
	dropped [][2]int
	// claimErr (kindClaim) refuses a locking read that cannot be claimed exactly when it
	// carries a token; without one the caller's text runs as a plain locking read.
	claimErr error
	// resetsSession marks statements (SET … sql_mode) after which a connection's
	// session check must run again.
	resetsSession bool
	// resetsNames marks statements (SET search_path, USE, ATTACH …) after which the
	// session may resolve table names differently: the connection's schema checks run
	// again (docs/design.md G13).
	resetsNames bool
}

// passPlan is the shared plan of every statement sent unchanged.
var passPlan = &plan{kind: kindPass, nUser: -1}
