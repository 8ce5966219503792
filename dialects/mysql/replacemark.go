package mysql

import (
	"fmt"
	"hash/fnv"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The REPLACE mark (red-team rt37a F1; SQLite's twin is rt29a F1). A REPLACE (REPLACE
// … VALUES, REPLACE … SELECT, LOAD DATA … REPLACE) whose row collides with rows of the
// table — on the primary key or on any other UNIQUE index — deletes them first, and
// since the table has a DELETE trigger (the tombstone's) MariaDB and MySQL always
// delete them as rows, firing the DELETE triggers (the in-place update they use for a
// collision on the last unique index is only taken for a table without DELETE
// triggers). The tombstone trigger then recorded each such row at its own token: a row
// displaced through a secondary UNIQUE index has another key than the REPLACE's, and a
// REPLACE by the newest holder (token 50) displacing a row of token 10 left key's
// tombstone at 10, so a holder between the two (30), older than the one that deleted
// the key, re-inserted it, on any connection (G9's "no resurrection").
//
// So every INSERT marks its row's token, and the tombstone trigger records the greater
// of the row's token and the mark:
//
//	fencedsql_tombrep_<table>  BEFORE INSERT  SET @fencedsql_replace_mark_<h> := '<NEW.token>/<@@timestamp>'
//
// MariaDB fires, for each row of a REPLACE, the BEFORE INSERT triggers once, then, for
// every row the write collides with, the DELETE triggers as it deletes the row, then
// the AFTER INSERT triggers: the displaced rows' tombstones read the mark of the row
// that displaced them (mark.go: a mark of an earlier statement is not read). A BEFORE
// INSERT trigger cannot tell a REPLACE from an INSERT; the mark costs a plain INSERT
// one variable assignment per row and no read (the SQLite guard's way, a lookup of the
// row each unique index would displace, takes shared next-key locks in InnoDB, which
// deadlock two concurrent INSERTs into one gap, and misses a row another transaction
// inserts and commits while the REPLACE waits for it). The mark travels with the
// deletion itself: a REPLACE that waits for a concurrent transaction's row and then
// deletes it records that row at the greater token too.
//
// The variable is the table's own (<h>: a hash of the table name the triggers were
// written for), so a write into another guarded table inside the statement (a user's
// trigger) neither replaces nor clears it; one into a table of the same name in another
// database writes a mark naming that database, which this table's tombstone trigger
// does not take for its own (mark.go). The guard's own code inside the statement
// makes the tombstone miss the mark only when it sets timestamp between the row's mark
// and its deletion; the tombstone trigger then clears it (markClear), and the AFTER
// INSERT trigger, finding the row's mark gone, refuses the row (GuardSQLState, "a row
// this write displaced lost its token"): the statement is undone whole. A plain
// INSERT, an INSERT IGNORE that skips its row, an upsert that updates: nothing is
// deleted and the mark is not read. A session that forges the variable before its
// statement can only raise the tombstones of its own deletes (mark.go). Code of the
// user's inside the statement — a trigger on the table that fires after this one, a
// routine it calls — could assign the variable a well-formed mark of a lower token
// between the mark and the deletion, and the displaced row would be recorded low
// (red-team rt58e F2): no trigger can tell such a mark from its own, so schema.Check
// and the lazy check report every trigger and routine whose body names one of the
// variables a guard reads (markVariableDoors, markdoor.go).
//
// The trigger names the token column only (not the key), so its body is known to the
// lazy check, which has no primary key: guardTriggers compares it whole, like the
// guard's own BEFORE triggers (a BEFORE trigger that assigned NEW.<token> would undo
// the guard's NULL; ownTriggers leaves the guards' names to guardTriggers).
func replaceMarkVar(table string) string {
	h := fnv.New64a()
	h.Write([]byte(table))
	return fmt.Sprintf("@%s%016x", replaceMarkPrefix, h.Sum64())
}

// replaceMarkPrefix begins the name of every table's REPLACE mark (without the '@').
const replaceMarkPrefix = "fencedsql_replace_mark_"

// replaceMarkDef is table's REPLACE-mark trigger, fencedsql_tombrep_<table> (see
// above), as mark version v (markVersion: this one) writes it.
func (d dialectImpl) replaceMarkDef(v int, table dialect.TableName, tokenCol string) triggerDef {
	return triggerDef{tombObject("rep", table), "BEFORE INSERT ON " + table.Quote(d.QuoteIdent) + " FOR EACH ROW\n" +
		"  SET " + replaceMarkVar(table.Name) + " := " + markValueScoped(v, "NEW."+d.QuoteIdent(tokenCol))}
}

// replaceMarkedToken is the token of the row whose write (a REPLACE) deletes the row
// the tombstone trigger of table records, or 0: an expression for that trigger, as mark
// version v writes it.
func replaceMarkedToken(v int, table string) string {
	return markTokenScoped(v, replaceMarkVar(table))
}

// replaceMarkLost is true in table's AFTER INSERT trigger when the row's mark is gone:
// a row its write displaced was recorded without it (code inside the statement set
// timestamp; see above).
func replaceMarkLost(table string) string { return replaceMarkVar(table) + " IS NULL" }
