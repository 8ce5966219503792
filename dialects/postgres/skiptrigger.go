package postgres

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// skipDoor judges one of ownTriggers' rows (the table's own BEFORE row triggers on
// INSERT or UPDATE, of the table and of its inheritance children and partitions, other
// than the guard's) that patchDoor passed and whose body and arguments name no fencing
// column.
//
// A BEFORE UPDATE row trigger (r[9] is "u") whose function may return something other
// than NEW is a door (red-team rt35a F1-F3). Every fenced statement that writes the
// table's rows by an UPDATE — a fenced UPDATE, a claim's fencing UPDATE (one statement
// or two), the two-statement DELETE's stamp — takes the rows the UPDATE reached to be
// the rows it stamped with its token. A trigger that returns OLD keeps the row as it
// was (the UPDATE RETURNs it, unstamped: a claim reports a row it did not claim, and
// the older holder's later write lands); one that returns NULL skips the row (a claim
// silently drops a row the plain locking read returns, a stale claim of a row a newer
// token owns is not fenced, the two-statement DELETE deletes fewer rows than its WHERE
// selects). Such a trigger names no fencing column and writes no table, so neither
// ownTriggers' column test nor patchDoor sees it.
//
// A BEFORE INSERT row trigger (not on UPDATE) is a door when its function may return
// a row other than the one inserted (red-team rt46a F2): NEW replaced whole — NEW :=
// ROW(NEW.id, NEW.balance, <big>, 1), NEW := jsonb_populate_record(NEW, …) with the
// column's name built at run time — or another record returned sets the token (or the
// version) without naming it, so the tombstone check (AFTER INSERT) and, for a trigger
// that sorts before fencedsql_guard, the guard's floor check judge the raised token: a
// stale holder re-creates a key deleted under a newer token, or writes below the floor
// (and stamps the row with a token that locks every later holder out). Skipping the
// row (RETURN NULL; RETURN OLD, NULL on INSERT) stays fine: a skipped insert writes
// nothing. Its OLD must not be replaced whole either (OLD := ROW(…); RETURN OLD).
// AFTER triggers cannot change the row, and BEFORE DELETE ones have no NEW.
//
// A PL/pgSQL function (r[10] is "plpgsql") is read (plpgsqlKeepsNew, plpgsqlKeepsInsert):
// every RETURN must return NEW (or COALESCE(NEW, …), NEW never being NULL on INSERT or
// UPDATE; on INSERT also NULL or OLD), and NEW (on INSERT also OLD) must not be
// assigned whole (NEW := OLD; SELECT … INTO NEW). A function in any other
// language (C, internal, plpython, plperl, …), whose body the check cannot read, is a
// door too (fail closed), but for the built-in tsvector_update_trigger functions and contrib's
// moddatetime (a C function with symbol moddatetime in $libdir/moddatetime, r[11]
// being pg_proc.probin), which return the new row always. The built-in
// suppress_redundant_updates_trigger stays a door: it returns NULL for an UPDATE that
// leaves the row identical, and a claim's fencing UPDATE by the token the row already
// carries can be one. The library's own guard trigger is not among ownTriggers' rows, and
// its tombstone triggers are AFTER triggers. No Fix: the trigger is the user's; the
// problem says how to rewrite it (refuse the change with RAISE EXCEPTION instead of
// skipping it, or do its work elsewhere).
func (d dialectImpl) skipDoor(r []string, t dialect.SideDoorTable) (dialect.SideDoor, bool) {
	if len(r) < 11 {
		return dialect.SideDoor{}, false
	}
	update := r[9] == "u"
	rel := dialect.CatalogName(r[0], r[1])
	fn := dialect.CatalogName(r[3], r[4])
	var why string
	switch {
	case r[10] == "plpgsql" && update:
		if plpgsqlKeepsNew(r[5]) {
			return dialect.SideDoor{}, false
		}
		why = "may return something other than NEW (RETURN OLD, RETURN NULL, another record, or NEW replaced whole: assigned, shadowed by a variable named new, a loop or INTO target, or passed to a CALL)"
	case r[10] == "plpgsql":
		if plpgsqlKeepsInsert(r[5]) {
			return dialect.SideDoor{}, false
		}
		why = "may return a row other than the one inserted (another record, or NEW or OLD replaced whole: assigned — NEW := ROW(…), NEW := jsonb_populate_record(NEW, …) —, shadowed by a variable of the name, a loop or INTO target, or passed to a CALL)"
	case r[10] == "internal" && r[3] == "pg_catalog" && (r[4] == "tsvector_update_trigger" || r[4] == "tsvector_update_trigger_column"):
		return dialect.SideDoor{}, false
	case len(r) > 11 && r[10] == "c" && r[5] == "moddatetime" && r[11] == "$libdir/moddatetime":
		// contrib's moddatetime, known by its C symbol and library (not by the SQL
		// name, which anyone may give a function): it replaces one timestamp column
		// of the new row and returns it, always.
		return dialect.SideDoor{}, false
	case update:
		why = "is written in " + r[10] + ", whose body the check cannot read, so it may return something other than NEW"
	default:
		why = "is written in " + r[10] + ", whose body the check cannot read, so it may return a row other than the one inserted"
	}
	if !update {
		return dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: r[2] + " on " + rel.String(),
			Problem: "the BEFORE INSERT row trigger " + r[2] + " on " + rel.String() + " runs " + fn.String() + "(), which " + why +
				": a BEFORE INSERT trigger that replaces the row whole can set " + ownColumns(t) + " without naming it, so the tombstone check and the guard's floor check judge a token the writer does not hold (a stale holder re-creates a key deleted under a newer token, or writes below the token floor) — of " +
				t.Table.String() + "'s fenced INSERTs; make the function assign single columns other than " + ownColumns(t) + " (NEW.col := …) and return NEW or NULL, or drop the trigger"}, true
	}
	return dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: r[2] + " on " + rel.String(),
		Problem: "the BEFORE UPDATE row trigger " + r[2] + " on " + rel.String() + " runs " + fn.String() + "(), which " + why +
			": a BEFORE UPDATE trigger that returns OLD keeps the row unstamped while the fencing UPDATE reports it changed (a claim returns a row it did not claim, and an older holder's later write of it is stored), and one that returns NULL skips the row (a claim silently drops a row its read selects and a stale claim is not fenced, a two-statement DELETE deletes fewer rows than asked) — of " +
			t.Table.String() + "'s fenced UPDATEs, claims and DELETEs; make the function return NEW for every row (refuse a change it must not allow with RAISE EXCEPTION instead of skipping it), or drop the trigger"}, true
}

// plpgsqlKeepsNew reports whether the PL/pgSQL trigger body src returns NEW from
// every RETURN (bare NEW, parenthesized, or COALESCE(NEW, …)) and never lets anything
// replace NEW whole. It fails closed (red-team rt36b F3): a reference to NEW whole —
// NEW in any case or "new", alone or block-qualified (trg.new; a following "." makes it
// NEW.col, a field) — is a door where it is
//   - at a statement's start (an assignment NEW := …, NEW = …, or the declaration of
//     a local variable named new, which shadows the special NEW, in any DECLARE);
//   - followed by := anywhere;
//   - among an INTO [STRICT] target list;
//   - between FOR or FOREACH and the loop's IN (a loop variable), or after ALIAS FOR
//     (the alias could be assigned);
//   - anywhere in a CALL statement (a procedure's INOUT parameter writes it back).
//
// NEW.col assignments are fine (ownTriggers judges the fencing columns), and so are
// NEW in an expression (IF NEW IS DISTINCT FROM OLD, PERFORM f(NEW): a function takes
// it by value). A body the lexer cannot read keeps nothing (it errs on the side of a
// door); the reader does not follow control flow, so a RETURN OLD in a branch that an
// UPDATE never takes (IF TG_OP = 'DELETE') still counts.
func plpgsqlKeepsNew(src string) bool { return keepsRow(src, false) }

// plpgsqlKeepsInsert is plpgsqlKeepsNew's reading for a BEFORE INSERT (not UPDATE) row
// trigger's body (red-team rt46a F2): a RETURN may also return NULL or OLD (NULL on
// INSERT: the row is skipped), and neither NEW nor OLD may be replaced whole, by any
// of the forms plpgsqlKeepsNew lists.
func plpgsqlKeepsInsert(src string) bool { return keepsRow(src, true) }

// keepsRow is plpgsqlKeepsNew (insert false) and plpgsqlKeepsInsert (insert true): the
// body keeps the row under each standard_conforming_strings reading (bodyReadings,
// red-team rt47a F1).
func keepsRow(src string, insert bool) bool {
	for _, syn := range bodyReadings(src) {
		if !keepsRowAs(src, syn, insert) {
			return false
		}
	}
	return true
}

// keepsRowAs is keepsRow under the lexical rules syn.
func keepsRowAs(src string, syn dialect.Syntax, insert bool) bool {
	toks, err := dialect.LexDDL(src, syn)
	if err != nil {
		return false
	}
	punct := func(i int, s ...string) bool {
		if i < 0 || i >= len(toks) || toks[i].Kind != dialect.DDLPunct {
			return false
		}
		for _, x := range s {
			if toks[i].Text == x {
				return true
			}
		}
		return false
	}
	isNew := func(i int) bool {
		if i < 0 || i >= len(toks) {
			return false
		}
		if n, ok := toks[i].Name(); ok && toks[i].Kind != dialect.DDLString {
			return strings.EqualFold(n, "new") && (toks[i].Kind == dialect.DDLWord || n == "new")
		}
		return false
	}
	// isRow: token i is NEW, or on INSERT OLD (which a RETURN may return there).
	isRow := func(i int) bool {
		if isNew(i) {
			return true
		}
		if !insert || i < 0 || i >= len(toks) {
			return false
		}
		if n, ok := toks[i].Name(); ok && toks[i].Kind != dialect.DDLString {
			return strings.EqualFold(n, "old") && (toks[i].Kind == dialect.DDLWord || n == "old")
		}
		return false
	}
	// whole: token i is NEW (on INSERT also OLD) referred to whole (not NEW.col),
	// qualified or not.
	whole := func(i int) bool { return isRow(i) && !punct(i+1, ".") }
	// refStart: the first token of the (possibly qualified) name ending at token i.
	refStart := func(i int) int {
		for i >= 2 && punct(i-1, ".") {
			if _, ok := toks[i-2].Name(); !ok || toks[i-2].Kind == dialect.DDLString {
				break
			}
			i -= 2
		}
		return i
	}
	// stmtStart: token i begins a statement or a declaration (after ;, a block or
	// branch keyword, or a label).
	stmtStart := func(i int) bool {
		if i == 0 {
			return true
		}
		p := toks[i-1]
		return punct(i-1, ";", ">>") || p.Is("BEGIN") || p.Is("THEN") || p.Is("ELSE") || p.Is("LOOP") || p.Is("DECLARE")
	}
	// wholeUntil: a whole NEW among tokens i.. up to the statement's ';' or a token
	// stop reports true for.
	wholeUntil := func(i int, stop func(int) bool) bool {
		for ; i < len(toks) && !punct(i, ";") && !stop(i); i++ {
			if whole(i) {
				return true
			}
		}
		return false
	}
	never := func(int) bool { return false }
	for i := 0; i < len(toks); i++ {
		switch {
		case toks[i].Is("RETURN"):
			// The expression up to the statement's ';'.
			j := i + 1
			for j < len(toks) && !punct(j, ";") {
				j++
			}
			if !returnsNew(toks[i+1:j], isNew, i+1) && !(insert && returnsSkip(toks[i+1:j], isRow, i+1)) {
				return false
			}
			i = j
		case whole(i) && (punct(i+1, ":=") || stmtStart(refStart(i))):
			return false
		case toks[i].Is("INTO"):
			k := i + 1
			if k < len(toks) && toks[k].Is("STRICT") {
				k++
			}
			// The target list: name[.name…][, name[.name…]…].
			for ; k < len(toks); k += 2 {
				if _, ok := toks[k].Name(); !ok || toks[k].Kind == dialect.DDLString {
					break
				}
				if whole(k) {
					return false
				}
				if !punct(k+1, ".", ",") {
					break
				}
			}
		case toks[i].Is("FOR") || toks[i].Is("FOREACH"):
			if wholeUntil(i+1, func(j int) bool { return toks[j].Is("IN") || toks[j].Is("LOOP") }) {
				return false
			}
		case toks[i].Is("CALL"):
			if wholeUntil(i+1, never) {
				return false
			}
		}
	}
	return true
}

// returnsNew reports whether the RETURN expression expr (tokens from index base of the
// body) is NEW: NEW, (NEW), or COALESCE(NEW, …).
func returnsNew(expr []dialect.DDLToken, isNew func(int) bool, base int) bool {
	// Strip enclosing parentheses.
	for len(expr) >= 2 && expr[0].Kind == dialect.DDLPunct && expr[0].Text == "(" && expr[len(expr)-1].Kind == dialect.DDLPunct && expr[len(expr)-1].Text == ")" && closes(expr) {
		expr, base = expr[1:len(expr)-1], base+1
	}
	if len(expr) == 1 {
		return isNew(base)
	}
	if len(expr) >= 4 && expr[0].Is("COALESCE") && expr[1].Kind == dialect.DDLPunct && expr[1].Text == "(" && isNew(base+2) &&
		expr[3].Kind == dialect.DDLPunct && (expr[3].Text == "," || expr[3].Text == ")") {
		return true
	}
	return false
}

// returnsSkip reports whether the RETURN expression expr (tokens from index base of
// the body) skips an INSERT's row: NULL or OLD (isRow: NEW or OLD), parenthesized or not.
func returnsSkip(expr []dialect.DDLToken, isRow func(int) bool, base int) bool {
	for len(expr) >= 2 && expr[0].Kind == dialect.DDLPunct && expr[0].Text == "(" && expr[len(expr)-1].Kind == dialect.DDLPunct && expr[len(expr)-1].Text == ")" && closes(expr) {
		expr, base = expr[1:len(expr)-1], base+1
	}
	return len(expr) == 1 && (expr[0].Is("NULL") || isRow(base))
}

// closes reports whether expr's first token, "(", is closed by its last.
func closes(expr []dialect.DDLToken) bool {
	depth := 0
	for i, tk := range expr {
		if tk.Kind != dialect.DDLPunct {
			continue
		}
		switch tk.Text {
		case "(":
			depth++
		case ")":
			if depth--; depth == 0 {
				return i == len(expr)-1
			}
		}
	}
	return false
}
