package mysql

import (
	"context"
	"strings"
	"unicode/utf8"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The library's session variables as a door (red-team rt58e F2). The tombstone guard
// learns the token of the statement that deletes a row through user variables the
// statement or the guard's own triggers set — @fencedsql_delete_mark (deletefence.go)
// and the REPLACE mark @fencedsql_replace_mark_<h> (replacemark.go) — and records the
// greater of the row's token and the mark. A mark a session sets before its statement
// can only raise that; code that runs inside the statement can lower it: a user's
// trigger on the table that fires after the REPLACE mark's (or a BEFORE DELETE one) and
// assigns the variable a well-formed mark of a lower token, or a routine such a trigger
// calls, made a REPLACE under 56 record the key it displaced at 10, and a holder under
// 14 put the key back — with schema.Check saying OK, since the trigger named no fencing
// column. The variables' names and texts are public, and no trigger can tell a forged
// mark from its own.
//
// So a trigger (on any table: one fires inside the statement when a trigger of the
// table writes its table) or a stored routine (a trigger may call it) whose body names
// a variable a guard reads (the DELETE mark, a REPLACE mark: guardReadVar), in any
// spelling, is a door (dialect.SideDoorGuardWriter: the variables are objects the guards read), reading or
// writing alike — except the guards' own triggers, which name the DELETE mark and the
// REPLACE mark of the table they are named for (their bodies are the guards' to judge:
// guardTriggers compares them whole), and a fence function's read of the DELETE mark,
// exactly as fenceFuncDDL writes it. Nothing but the library has a reason to name these
// variables; the pool already refuses statements that do (the reserved prefix). Fix:
// DROP TRIGGER for a trigger; none for a routine (it is the user's).

// libraryVarPrefix is the name prefix of the library's user variables.
const libraryVarPrefix = "fencedsql_"

// namedLibraryVars returns, in lower case and without the '@', the user variables of
// the library's prefix the stored text src may name, in any spelling the server takes
// for the same variable: @name, @`name`, @'name', @"name" (a user variable's name is
// case-insensitive; a quoted one may hold backslash escapes, @'\fencedsql_x' being
// @fencedsql_x), anywhere in the text — in a string (dynamic SQL), a comment (an
// executable one runs) or code alike. A raw scan, not a parse: it errs on the side of
// yes. A letter outside ASCII in the prefix's place counts as the prefix's letter (a
// server whose collation of variable names folds it; MariaDB 10.11 folds case only).
func namedLibraryVars(src string) []string {
	var out []string
	for i := 0; i < len(src); i++ {
		if src[i] != '@' {
			continue
		}
		j := i + 1
		for j < len(src) && strings.IndexByte("`'\"\\", src[j]) >= 0 {
			j++
		}
		if name, ok := libraryVarAt(src[j:]); ok {
			out = append(out, name)
		}
	}
	return out
}

// libraryVarAt returns the variable name s begins with, lower-cased, when it begins
// with the library's prefix (backslashes skipped, see namedLibraryVars).
func libraryVarAt(s string) (string, bool) {
	var b strings.Builder
	k := 0
	for len(s) > 0 {
		r, n := utf8.DecodeRuneInString(s)
		s = s[n:]
		if r == '\\' {
			continue
		}
		if k < len(libraryVarPrefix) {
			if r < utf8.RuneSelf && strings.ToLower(string(r)) != libraryVarPrefix[k:k+1] {
				return "", false
			}
			b.WriteByte(libraryVarPrefix[k])
			k++
			continue
		}
		if r < utf8.RuneSelf && !(r == '_' || r == '$' || r >= '0' && r <= '9' || r >= 'a' && r <= 'z' || r >= 'A' && r <= 'Z') {
			break
		}
		b.WriteString(strings.ToLower(string(r)))
	}
	return b.String(), k == len(libraryVarPrefix)
}

// ownMarkVars are the library's variables the guards' own trigger named trigger, on a
// table named table, names (see above): the DELETE mark and the REPLACE mark of the
// table the trigger is named for; none for any other trigger. A shadow of one of them
// (replacetrigger.go) is judged as the trigger it copies.
func ownMarkVars(trigger, table string) map[string]bool {
	if rest, ok := strings.CutPrefix(strings.ToLower(trigger), shadowPrefix); ok {
		trigger = trigger[len(trigger)-len(rest):]
	}
	name, _, ok := guardTriggerTable(trigger, table)
	if !ok {
		return nil
	}
	return map[string]bool{strings.TrimPrefix(deleteTokenVar, "@"): true, strings.TrimPrefix(replaceMarkVar(name), "@"): true}
}

// guardReadVar is true for a variable a guard reads (namedLibraryVars' spelling): the
// DELETE mark, or a REPLACE mark of any table. The library's other variables (the
// wrapper's claim variables, lockclient/sqllock's @fencedsql_sqllock_primary_until in
// its lease procedures) reach no guard: a routine naming them is no door.
func guardReadVar(v string) bool {
	return v == strings.TrimPrefix(deleteTokenVar, "@") || strings.HasPrefix(v, replaceMarkPrefix)
}

// strangeVars returns the variables a guard reads (guardReadVar) that src names
// (namedLibraryVars) and that are not in own.
func strangeVars(src string, own map[string]bool) []string {
	var out []string
	for _, v := range namedLibraryVars(src) {
		if guardReadVar(v) && !own[v] {
			out = append(out, "@"+v)
		}
	}
	return out
}

// markVarFilter is the catalog's filter of the bodies worth reading for
// namedLibraryVars: one holding '@' and the prefix's letters, a backslash, or a
// character outside ASCII.
func markVarFilter(col string) string {
	return "(LOCATE('@', " + col + ") > 0 AND (LOCATE('encedsql', LOWER(" + col + ")) > 0 OR LOCATE(CHAR(92), " + col + ") > 0 OR LENGTH(" + col + ") <> CHAR_LENGTH(" + col + ")))"
}

// markVariableDoors finds the triggers and routines whose body names one of the
// library's variables (see above), in one catalog query — in the table's database, or
// in another one whose body names the table's database, the reach of the other door
// checks (otherTriggers, routines): one of another database that a trigger of the
// table's database reaches by naming that database is not read (so one tenant's
// database does not stop every guarded table of the server), run by the lazy check once
// per pool and table and by schema.Check. information_schema shows a trigger only to an
// account with TRIGGER on its table and a routine's body only to its definer and to
// accounts that may read every routine: schema.Check, run by the migration account, is
// the check that counts. The database is compared, and searched for in a body, byte
// for byte (exactDatabase, exactMention; red-team rt59a F3): under
// lower_case_table_names = 0 the case twin `T_X` of t_x is another tenant's database,
// whose triggers and routines information_schema's case-insensitive = matched, and
// t_x's tables were refused for them.
func (d dialectImpl) markVariableDoors(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	const db = "COALESCE(NULLIF(?, _binary''), DATABASE())"
	schema := t.Table.Schema
	rows, err := query(ctx, "SELECT 'TRIGGER', TRIGGER_SCHEMA, TRIGGER_NAME, EVENT_OBJECT_SCHEMA, EVENT_OBJECT_TABLE, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE "+markVarFilter("ACTION_STATEMENT")+
		" AND (TRIGGER_SCHEMA = "+db+" AND "+exactDatabase("TRIGGER_SCHEMA", schema)+" OR LOCATE(LOWER("+db+"), LOWER(ACTION_STATEMENT)) > 0 AND "+exactMention("ACTION_STATEMENT", schema)+")"+
		" UNION ALL SELECT ROUTINE_TYPE, ROUTINE_SCHEMA, ROUTINE_NAME, '', '', ROUTINE_DEFINITION FROM information_schema.ROUTINES WHERE "+markVarFilter("ROUTINE_DEFINITION")+
		" AND (ROUTINE_SCHEMA = "+db+" AND "+exactDatabase("ROUTINE_SCHEMA", schema)+" OR LOCATE(LOWER("+db+"), LOWER(ROUTINE_DEFINITION)) > 0 AND "+exactMention("ROUTINE_DEFINITION", schema)+")"+
		" ORDER BY 1, 2, 3", t.Table.Schema, t.Table.Schema, t.Table.Schema, t.Table.Schema)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 6 {
			continue
		}
		kind := strings.ToLower(r[0])
		obj := dialect.TableName{Schema: r[1], Name: r[2]}
		body, own := r[5], map[string]bool(nil)
		switch {
		case kind == "trigger":
			own = ownMarkVars(r[2], r[4])
		case kind == "function" && strings.HasPrefix(strings.ToLower(r[2]), "fencedsql_fence_"):
			// A fence function reads the DELETE mark (fenceFuncDDL); the read, exactly
			// as written there, is the guard's.
			body = strings.ReplaceAll(body, markIsCurrent, "")
		}
		vars := strangeVars(body, own)
		if len(vars) == 0 {
			continue
		}
		problem := "the " + kind + " " + obj.String()
		sd := dialect.SideDoor{Kind: dialect.SideDoorGuardWriter, Object: kind + " " + obj.String()}
		if kind == "trigger" {
			on := dialect.TableName{Schema: r[3], Name: r[4]}
			problem += " on " + on.String()
			sd.Object = obj.String() + " on " + on.String()
			sd.Fix = []string{"DROP TRIGGER IF EXISTS " + obj.Quote(d.QuoteIdent)}
		}
		sd.Problem = problem + " names fencedsql's session variable " + strings.Join(vars, ", ") + ": the tombstone guard of " + t.Table.String() +
			" reads the token of the statement that deletes a row from such a variable, and code inside the statement that assigns it (a trigger that fires in it, a routine such a trigger calls) can make a deleted key's tombstone lower than the token that deleted it, so that an older holder puts the key back; drop it (or remove the variable from its body: the fencedsql_ prefix is the library's)"
		doors = append(doors, sd)
	}
	return doors, nil
}
