package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Keyed claims (MySQL/MariaDB). A claim that cannot run as one statement stamps its
// rows with a fencing UPDATE and then reads them with the caller's SELECT restricted
// to the rows carrying the token (claimRead). With a LIMIT, or a selection by the
// statement's clock (clockSelection: the read's NOW() is later, and a row the holder
// stamped before can enter the window as one stamped now leaves it), the token alone
// is not enough: a holder keeps its token across statements and transactions, so rows it
// stamped before carry it too, and when the claim's UPDATE moves the rows it stamps
// in the read's ORDER BY (a trigger or an ON UPDATE CURRENT_TIMESTAMP column
// maintaining updated_at) or a tie is broken the other way, the read's LIMIT takes
// such an earlier row instead of one just stamped (red-team rt14c F2). MySQL's UPDATE
// returns no rows, so the claim records the keys itself, in the session:
//
//	UPDATE t SET version = version + 1 + 0 * (<record>), fence_token = … WHERE … ORDER BY … LIMIT …
//	SELECT … WHERE (…) AND @fencedsql_claim <=> ? AND LOCATE(CONCAT(',', <key>, ','), @fencedsql_claimed) > 0 AND t.fence_token = ? …
//
// where <record> (recordKeys) appends each stamped row's <key> and a ',' to
// @fencedsql_claimed, starting a new list (',') when @fencedsql_claim does not hold
// this claim's nonce (ArgNonce, bound to both statements), and then sets it. The read
// looks for ',<key>,' in the list: a byte search, which costs the list's length per
// row examined (a claim of n rows O(n²) in the server). SET expressions run only for the rows the
// UPDATE changes. A claim that stamps no row leaves the nonce unset, and its read
// selects nothing. <key> is the primary key, each column's text joined by ':'
// (WithRowKey, keyPart): the same text for the same stored row in both statements,
// and distinct rows give distinct texts (an integer's decimal digits; else QUOTE(),
// which escapes injectively, in hex: neither has a ',' or ':').

// Session variables of a keyed claim.
const (
	claimListVar  = "@fencedsql_claimed"
	claimNonceVar = "@fencedsql_claim"
)

// namesUserVariable reports whether the statement names a MySQL user variable (an '@'
// token, or an '@' inside an executable comment), which could read or change the
// keyed claim's record.
func (p *parser) namesUserVariable() bool {
	for _, t := range p.sig {
		switch {
		case t.Kind == sqllex.KindPunct && p.text(t) == "@",
			t.Kind == sqllex.KindExecComment && strings.Contains(p.text(t), "@"):
			return true
		}
	}
	return false
}

// keySlot marks the builder's current output offset as a place for the row key.
func (b *builder) keySlot() { b.keys = append(b.keys, b.sb.Len()) }

// nonce writes the claim's nonce placeholder.
func (b *builder) nonce() { b.placeholder("?", ArgNonce) }

// recordKeys writes the keyed claim's <record> after the version's new value: an
// expression that is 0 and appends the row's key to the claim's list, then sets the
// nonce:
//
//	version + 1 + 0 * (@fencedsql_claim := (? + 0 * LENGTH(@fencedsql_claimed := CONCAT(IF(@fencedsql_claim <=> ?, @fencedsql_claimed, ','), <key>, ','))))
//
// Each assignment is an operand of the next, so the server evaluates them per row and
// in that order: the nonce's new value depends on the list's, which depends on the
// row's key and on the nonce's old value. A form in which a part is constant — `(@v :=
// ?) IS NULL`, which MariaDB folds to false without assigning when the parameter is
// sent as a literal (go-sql-driver/mysql's interpolateParams) — records nothing. A
// variable the session has never set is read as a constant NULL by a statement that
// is not prepared, so the wrapper sets both (KeyedSessionInit) before the first keyed
// statement of each connection.
func (b *builder) recordKeys() {
	b.write(" + 0 * (" + claimNonceVar + " := (")
	b.nonce()
	b.write(" + 0 * LENGTH(" + claimListVar + " := CONCAT(IF(" + claimNonceVar + " <=> ")
	b.nonce()
	b.write(", " + claimListVar + ", ','), ")
	b.keySlot()
	b.write(", ','))))")
}

// KeyedSessionInit defines the session variables of the keyed statements, which a
// statement reads as a constant NULL when the session has never set them
// (recordKeys): the wrapper sends it once per connection, before its first keyed
// statement. NULL holds no claim's nonce.
const KeyedSessionInit = "SET " + claimNonceVar + " = NULL, " + claimListVar + " = NULL"

// claimedKeys writes the keyed read's restriction to the rows its claim recorded.
func (b *builder) claimedKeys() {
	b.write(claimNonceVar + " <=> ")
	b.nonce()
	b.write(" AND LOCATE(CONCAT(',', ")
	b.keySlot()
	b.write(", ','), " + claimListVar + ") > 0 AND ")
}

// finishKeyed finishes a keyed plan: its key slots, for the table as q names it.
func (b *builder) finishKeyed(kind Kind, g *Table, q string) *Plan {
	pl := b.finish(kind, g)
	pl.KeySlots, pl.KeyQual = b.keys, q
	pl.ListAt, pl.ListArg = b.listAt, b.listArg
	if b.listAt == 0 {
		pl.ListArg = -1
	}
	return pl
}

// KeyColumn is one primary key column of a keyed claim's table: its name and its type
// as the catalog spells it (information_schema.COLUMNS.COLUMN_TYPE).
type KeyColumn struct{ Name, Type string }

// keyPart returns the text of column c of the row q names in a keyed claim's row key:
// the same text for the same stored value in both statements, distinct texts for
// distinct values. QUOTE writes a value's exact text for every type but the
// approximate numbers (a FLOAT prints six digits: 1.0000001 and 1 both give '1'), which
// have none, and TIMESTAMP, which it writes in the session's time zone (the hour
// repeated when daylight saving time ends names two instants); a TIMESTAMP's
// UNIX_TIMESTAMP is its stored instant, and an ENUM's or SET's number its value (red-team
// rt17k F4). ok is false for the approximate numbers.
func keyPart(q, c, typ string) (part string, ok bool) {
	t := strings.ToLower(strings.TrimSpace(typ))
	switch {
	case strings.HasPrefix(t, "float"), strings.HasPrefix(t, "double"), strings.HasPrefix(t, "real"):
		return "", false
	case strings.HasPrefix(t, "enum"), strings.HasPrefix(t, "set"):
		// Their text is not their value: SET {a} and {'',a} both print 'a', an ENUM's
		// error value and a '' member both ''. Their number is.
		return "HEX(QUOTE(" + q + "." + c + " + 0))", true
	case strings.HasPrefix(t, "timestamp"):
		return "HEX(QUOTE(UNIX_TIMESTAMP(" + q + "." + c + ")))", true
	case integerType(t):
		// Its decimal digits (and a '-'): exact, and about half as long, which halves
		// the read's search.
		return q + "." + c, true
	}
	return "HEX(QUOTE(" + q + "." + c + "))", true
}

// integerType reports whether t, a catalog COLUMN_TYPE in lower case, is an integer
// type (TINYINT … BIGINT, signed or not, with or without a display width or ZEROFILL).
func integerType(t string) bool {
	for _, p := range []string{"tinyint", "smallint", "mediumint", "int", "integer", "bigint"} {
		if t == p || strings.HasPrefix(t, p+"(") || strings.HasPrefix(t, p+" ") {
			return true
		}
	}
	return false
}

// WithRowKey returns the keyed plan p complete: its SQL with the row key of the
// table's primary key columns cols (in key order), quoted by quote, at each key slot.
// The arguments are p's. A key column of a type without an exact text (FLOAT, DOUBLE)
// returns a non-nil *Refusal and no plan.
func (p *Plan) WithRowKey(cols []KeyColumn, quote func(string) string) (*Plan, error) {
	parts := make([]string, len(cols))
	for i, c := range cols {
		part, ok := keyPart(p.KeyQual, quote(c.Name), c.Type)
		if !ok {
			return nil, &Refusal{Table: p.Guard.String(), Reason: "a locking SELECT with a LIMIT, or reading the statement's clock, of a table whose primary key column " + quote(c.Name) + " is " + c.Type +
				": its claim tells the rows it stamped by their key's text, and an approximate number has no exact text"}
		}
		parts[i] = part
	}
	key := "CONCAT_WS(':', " + strings.Join(parts, ", ") + ")"
	out := *p
	if p.ListArg >= 0 && len(cols) == 1 && integerType(strings.ToLower(strings.TrimSpace(cols[0].Type))) {
		// A listed DELETE by one integer column: the column itself, which the server
		// finds by its index, the keys bound as integers (ListInts).
		key, out.ListInts = p.KeyQual+"."+quote(cols[0].Name), true
	}
	var sb strings.Builder
	last := 0
	for _, at := range p.KeySlots {
		sb.WriteString(p.SQL[last:at])
		sb.WriteString(key)
		last = at
		if p.ListArg >= 0 && at <= p.ListAt {
			out.ListAt += len(key)
		}
	}
	sb.WriteString(p.SQL[last:])
	out.SQL, out.KeySlots, out.Keyed = sb.String(), nil, nil
	return &out, nil
}

// WithKeyList returns the listed DELETE p (Plan.Listed, completed by WithRowKey) with
// a list of n keys: n placeholders, bound to ArgKeyItem.
func (p *Plan) WithKeyList(n int) *Plan {
	out := *p
	out.SQL = p.SQL[:p.ListAt] + strings.Repeat("?, ", n-1) + "?" + p.SQL[p.ListAt:]
	args := make([]ArgRef, 0, len(p.Args)+n)
	args = append(args, p.Args[:p.ListArg]...)
	for range n {
		args = append(args, ArgKeyItem)
	}
	out.Args = append(args, p.Args[p.ListArg:]...)
	out.ListArg = -1
	return &out
}

// KeyedRecordQuery reads a keyed statement's record: the nonce, then the list of keys
// (',' before and after each).
const KeyedRecordQuery = "SELECT " + claimNonceVar + ", " + claimListVar
