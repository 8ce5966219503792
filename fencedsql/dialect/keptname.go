package dialect

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// KeptName returns an identifier (one part of a table name) as a server of syntax syn
// keeps it: on PostgreSQL its first 63 bytes, never cutting a UTF-8 character, as the
// server truncates a longer name; unchanged elsewhere (sqllex.KeptIdent, the one
// truncation the planner's keys use too). A guard configured under a name longer than
// the server keeps and the catalog's record of the same table are one name under it
// (red-team rt56a F3).
func KeptName(syn Syntax, name string) string { return sqllex.KeptIdent(syn, name) }

// SameRecordedName reports whether two names of one part of a table name (its name, or
// its schema) name one object as the records of guarded tables compare them: as the
// server keeps each (KeptName), case folded. Every comparison of a registry row, a
// trigger record and a pool's listed guard uses it.
func SameRecordedName(syn Syntax, a, b string) bool {
	return strings.EqualFold(KeptName(syn, a), KeptName(syn, b))
}
