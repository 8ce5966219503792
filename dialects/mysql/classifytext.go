package mysql

import "strings"

// The names classify reads from a server message, in whatever language the server
// speaks (red-team rt40b F5). lc_messages is a session variable — a DSN parameter
// (go-sql-driver/mysql SETs the ones it does not know), init_connect, the server's
// default — and with it set to de_DE error 1048 read "Feld 'fence_token' darf nicht
// NULL sein": the English "Column '" was not found, the fencing column not named, and
// a stale write failed with the raw error instead of ErrFenced (an ExpectVersion
// mismatch without ErrVersionConflict). The errors are told apart by number; the name
// is the message's quoted argument, which every translation MariaDB and MySQL ship
// quotes with ASCII apostrophes ('%-.192s', share/errmsg-utf8.txt).

// nullColumn returns the column of error 1048 (ER_BAD_NULL_ERROR), whose message has
// one argument, the column, quoted: the text between the first and the last
// apostrophe (a column name may hold one).
func nullColumn(msg string) string {
	i, j := strings.IndexByte(msg, '\''), strings.LastIndexByte(msg, '\'')
	if i < 0 || j <= i {
		return ""
	}
	return msg[i+1 : j]
}

// duplicateKey returns the key of error 1062 (ER_DUP_ENTRY_WITH_KEY_NAME: the entry,
// then the key, each quoted; the entry may hold apostrophes, the key's name rarely
// does): after the English "for key '" when the message has it, else the last quoted
// text of a message with two quoted arguments, which is the key in every translation.
// The older form ER_DUP_ENTRY numbers the key ("for key 1", one quoted argument): "".
// The name is informational (DuplicateError.Constraint); errors.Is(err, ErrDuplicate)
// rests on the number.
func duplicateKey(msg string) string {
	if i := strings.LastIndex(msg, "for key '"); i >= 0 {
		return strings.TrimSuffix(msg[i+len("for key '"):], "'")
	}
	if strings.Count(msg, "'") < 4 {
		return ""
	}
	j := strings.LastIndexByte(msg, '\'')
	if j < 0 {
		return ""
	}
	i := strings.LastIndexByte(msg[:j], '\'')
	if i < 0 {
		return ""
	}
	return msg[i+1 : j]
}

// firstQuoted returns the first quoted argument of a message (1054 ER_BAD_FIELD_ERROR
// "Unknown column 'c' in 'w'", 1146 ER_NO_SUCH_TABLE "Table 'db.t' doesn't exist": the
// name comes first in every translation), or "".
func firstQuoted(msg string) string {
	i := strings.IndexByte(msg, '\'')
	if i < 0 {
		return ""
	}
	j := strings.IndexByte(msg[i+1:], '\'')
	if j < 0 {
		return ""
	}
	return msg[i+1 : i+1+j]
}
