package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Routine DDL. A function, procedure, trigger, rule, event or package runs SQL later
// that the wrapper never sees: its body can spell a guarded table with escapes
// (E'…', U&'…', U&"…" inside $$ … $$), build it at run time (EXECUTE 'UPDATE acc' ||
// 'ounts', EXECUTE IMMEDIATE CONCAT(…)), or call code created elsewhere. No scan of the
// body can be sure, so on a pool with guarded tables a statement that creates, replaces
// or alters one — PostgreSQL CREATE [OR REPLACE] FUNCTION/PROCEDURE/TRIGGER/CONSTRAINT
// TRIGGER/EVENT TRIGGER/RULE (also inside CREATE SCHEMA) and ALTER of them, MariaDB
// CREATE [OR REPLACE] [DEFINER = …] [AGGREGATE] FUNCTION/PROCEDURE/TRIGGER/EVENT/
// PACKAGE and ALTER EVENT/FUNCTION/PROCEDURE, SQLite CREATE [TEMP] TRIGGER — is refused
// with ErrUnsupported unless WithDDL(true), whatever its body names. Create routines on
// a plain connection (migrations), or allow them on the pool with WithDDL. The rule
// applies to every statement of a multi-statement text and to every reading of an
// executable comment (execcomment.go); text that cannot be tokenized and may hold such
// DDL is refused too (rewriter.unreadable).

// routineKinds are the objects whose DDL installs code the server runs later.
var routineKinds = map[string]bool{
	"FUNCTION": true, "PROCEDURE": true, "TRIGGER": true, "RULE": true, "EVENT": true, "PACKAGE": true,
}

// routineModifiers may stand between CREATE/ALTER and the object kind.
var routineModifiers = map[string]bool{
	"OR": true, "REPLACE": true, "TEMP": true, "TEMPORARY": true, "CONSTRAINT": true,
	"AGGREGATE": true, "EDITIONABLE": true, "NONEDITIONABLE": true,
}

// routineStoppers end a DEFINER = … clause: the statement creates something else.
var routineStoppers = map[string]bool{
	"TABLE": true, "VIEW": true, "INDEX": true, "SEQUENCE": true, "DATABASE": true, "SCHEMA": true,
	"USER": true, "ROLE": true, "SERVER": true, "TABLESPACE": true, "LOGFILE": true,
}

// protectRoutines refuses routine DDL on a pool with guarded tables unless WithDDL (see
// the top of this file). It looks at every CREATE and ALTER keyword of the text, so a
// CREATE SCHEMA … CREATE TRIGGER or a second statement is judged too.
func (p *parser) protectRoutines() error {
	if len(p.rw.names) == 0 || p.rw.allowDDL {
		return nil
	}
	for i := range p.sig {
		if !p.kwIn(i, "CREATE", "ALTER") {
			continue
		}
		if kind := p.routineKindAfter(i + 1); kind != "" {
			return unsupported(p.firstGuard(), "%s %s on a pool with guarded tables: its body runs SQL the wrapper never sees, which may write a guarded table under any spelling; create it on a plain connection (the driver without \"fenced-\"), or allow routine DDL with fencedsql.WithDDL(true)",
				strings.ToUpper(p.text(p.sig[i])), kind)
		}
	}
	return nil
}

// routineKindAfter returns the routine kind (upper case) that the words from sig[i] on
// name after CREATE/ALTER, or "" when they name another kind of object.
func (p *parser) routineKindAfter(i int) string {
	definer := false // inside DEFINER = user@host: anything goes until a kind word
	for ; i < len(p.sig); i++ {
		t := p.sig[i]
		if p.punct(i, ";") {
			return ""
		}
		if t.Kind == sqllex.KindExecComment {
			continue // its readings are judged on their own
		}
		if t.Kind != sqllex.KindWord {
			if definer {
				continue
			}
			return ""
		}
		w := strings.ToUpper(p.text(t))
		switch {
		case routineKinds[w]:
			return w
		case w == "DEFINER":
			definer = true
		case routineModifiers[w]:
		case definer && !routineStoppers[w]:
		default:
			return ""
		}
	}
	return ""
}

// mayCreateRoutine reports whether sql, read loosely (as text that could not be
// tokenized), could hold routine DDL: the word CREATE or ALTER and a routine kind word.
func mayCreateRoutine(sql string) bool {
	if !ContainsWord(sql, "create") && !ContainsWord(sql, "alter") {
		return false
	}
	for k := range routineKinds {
		if ContainsWord(sql, strings.ToLower(k)) {
			return true
		}
	}
	return false
}
