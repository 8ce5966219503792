package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Switching on a trigger or rule (docs/design.md, G11; red-team rt44d F1). On a pool
// with guarded tables the wrapper refuses CREATE TRIGGER, CREATE RULE and CREATE EVENT
// TRIGGER unless WithDDL (routine.go), and ALTER TABLE … DISABLE TRIGGER and ENABLE
// REPLICA/ALWAYS always (protect.go: they can switch off the guards). A disabled
// trigger or rule is as much code as a new one: PostgreSQL's ALTER [FOREIGN] TABLE
// other ENABLE TRIGGER name|ALL|USER and ENABLE RULE name, and ALTER EVENT TRIGGER name
// ENABLE, turn on a body the lazy check judged while it was off — and its verdict,
// kept for WithSchemaRecheck's interval, is not dropped by the statement, nor does a
// write to the door's own table (no guarded write) run a check. A stale holder turned
// a disabled door on through the pool and wrote the guarded row under the newer
// holder's token. So these are refused always, with or without WithDDL, as DISABLE
// TRIGGER is: run them on a plain connection (the lazy check and schema.Check count a
// disabled trigger or rule as a door too, so a pool refuses the table while one
// exists). ENABLE ROW LEVEL SECURITY (PostgreSQL) and ENABLE KEYS (MySQL/MariaDB) stay
// allowed: they switch on no code. MySQL/MariaDB and SQLite triggers cannot be
// disabled; MySQL/MariaDB's ALTER EVENT … ENABLE is routine DDL (routine.go).

// switchesOn reports whether the ENABLE at sig[i], in the ALTER statement
// sig[first:to], switches on a trigger or rule: ENABLE TRIGGER or ENABLE RULE (any
// dialect: only PostgreSQL has them), or the ENABLE that ends PostgreSQL's ALTER EVENT
// TRIGGER name ENABLE (ENABLE REPLICA/ALWAYS protect.go refuses already). what names
// it for the refusal's message.
func (p *parser) switchesOn(first, i, to int) (what string, ok bool) {
	switch {
	case !p.kw(i, "ENABLE"):
		return "", false
	case p.kwIn(i+1, "TRIGGER", "RULE"):
		return "ALTER … ENABLE " + strings.ToUpper(p.text(p.sig[i+1])), true
	case p.rw.syn == sqllex.Postgres && p.kw(first+1, "EVENT") && p.kw(first+2, "TRIGGER") && i+1 >= to:
		return "ALTER EVENT TRIGGER … ENABLE", true
	}
	return "", false
}
