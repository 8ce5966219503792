package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// routines finds the stored functions, procedures (and MariaDB packages, whose
// functions a statement calls as pkg.f()) whose body writes the table (dialect.SideDoorRoutine,
// red-team rt34c F1): dialect.WritesTable over information_schema.ROUTINES'
// ROUTINE_DEFINITION, as otherTriggers reads trigger bodies — in the table's database,
// or in another one whose body names the table's database (a routine's unqualified
// names are its own database's). A statement through the pool reaches such a function
// without CALL and without naming the table — SELECT f(), SET @x = f(), f() in a WHERE,
// VALUES, an INSERT into another table, a trigger of another table that calls it — so
// the wrapper sends it as written, and its write is unfenced; the guard lets an UPDATE
// that advances the version, an INSERT and a DELETE through. Procedures are judged
// like functions although the wrapper refuses CALL unless WithDynamicSQL: a function,
// a trigger or another procedure may CALL one, and a statement reaches that one with
// no CALL in its text (red-team rt36b F1). fencedsql's own
// fence function writes nothing (NO SQL) and is judged like the rest. information_schema
// shows a routine's definition only to its definer and to accounts with the right to
// read every routine (MariaDB: SELECT on mysql.proc; MySQL: SHOW_ROUTINE): a definition
// hidden from the account is not judged (an application account of the least-privilege
// layout sees fewer doors; schema.Check, run by the migration account, is the check
// that counts). No Fix: the routine is the user's.
func (d dialectImpl) routines(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	tomb, rec := tombTable(t.Table), absenceProc(t.Table.Name)
	rows, err := query(ctx, "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE, ROUTINE_DEFINITION, ROUTINE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) FROM information_schema.ROUTINES "+
		"WHERE (LOCATE(LOWER(?), LOWER(ROUTINE_DEFINITION)) > 0 OR LOCATE(LOWER(?), LOWER(ROUTINE_DEFINITION)) > 0 OR ROUTINE_NAME = ?) "+
		"AND (ROUTINE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) OR LOCATE(LOWER(COALESCE(NULLIF(?, ''), DATABASE())), LOWER(ROUTINE_DEFINITION)) > 0) "+
		"ORDER BY ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE",
		t.Table.Schema, t.Table.Name, tomb.Name, rec, t.Table.Schema, t.Table.Schema)
	if err != nil {
		return nil, err
	}
	own := func(schema, def string) (bool, error) { return d.ownRecorder(ctx, query, t, schema, def) }
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 4 {
			continue
		}
		door, judged, err := d.tombRoutine(t.Table, r, own)
		if err != nil {
			return nil, err
		}
		if door != nil {
			doors = append(doors, *door)
		}
		if door != nil || judged {
			continue
		}
		if !dialect.WritesTable(r[3], dialect.MySQLSyntax, t.Table.Name) {
			continue
		}
		fn := dialect.TableName{Schema: r[0], Name: r[1]}
		kind := strings.ToLower(r[2])
		reached := "SELECT " + fn.String() + "(…), SET @x = " + fn.String() + "(…), a WHERE, VALUES or an INSERT into another table that calls it, or a trigger that does"
		if kind == "procedure" {
			reached = "a function or trigger that CALLs it (SELECT f(), SET @x = f(), a write to another table)"
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorRoutine, Object: kind + " " + fn.String(),
			Problem: dialect.RoutineDoorProblem("the "+kind+" "+fn.String(), t.Table.String(), reached,
				"an UPDATE that advances the version, an INSERT and a DELETE")})
	}
	return doors, nil
}

// tombRoutine judges the routine of the ROUTINES row r (schema, name, type,
// definition, whether it is in table's database) as a writer of table's tombstone
// table (dialect.SideDoorGuardWriter; red-team rt42e F1's recorder): the tombstone
// guard's own absence recorder (absence.go) — a procedure of its name in table's
// database whose whole text is the recorder's (own: its body and its parameters,
// built from the table's catalog key, red-team rt45a F3) — is not a door; any other
// routine of that name is (its body is not the guard's: a claim of an absent key may
// record nothing, or anything), and so is any routine whose body may write the
// tombstone table (it may delete tombstones or lower their tokens, with its definer's
// rights when SQL SECURITY DEFINER). A definition hidden from the account (NULL: not
// its definer, no right to read every routine) is judged by its name only. Fix for the
// impostor: drop it (the tombstone guard's Fix re-creates the recorder); none for
// another routine (it is the user's). judged: the routine was judged here (the
// recorder, or its impostor), not to be judged again as a writer of table (the
// recorder's lookup reads table FOR UPDATE).
func (d dialectImpl) tombRoutine(table dialect.TableName, r []string, own func(schema, def string) (bool, error)) (door *dialect.SideDoor, judged bool, err error) {
	tomb := tombTable(dialect.TableName{Name: table.Name}).Name
	inDB := len(r) < 5 || dialect.CatalogBool(r[4])
	fn := dialect.TableName{Schema: r[0], Name: r[1]}
	kind := strings.ToLower(r[2])
	if inDB && r[1] == absenceProc(table.Name) {
		if kind == "procedure" {
			if r[3] == "" {
				return nil, true, nil
			}
			ok, err := own(r[0], r[3])
			if err != nil || ok {
				return nil, true, err
			}
		}
		return &dialect.SideDoor{Kind: dialect.SideDoorGuardWriter, Object: kind + " " + fn.String(),
			Problem: "the " + kind + " " + fn.String() + " has the name of the tombstone guard's absence recorder of " + table.String() + " but not its text (body and parameters): a claim of an absent key calls it to record the key in the tombstone table, which this one may not do (or may lower tombstones); drop it and re-install the tombstone guard (fencedsql-schema -apply)",
			Fix:     []string{"DROP " + strings.ToUpper(kind) + " IF EXISTS " + fn.Quote(d.QuoteIdent)}}, true, nil
	}
	if !dialect.WritesTable(r[3], dialect.MySQLSyntax, tomb) {
		return nil, false, nil
	}
	return &dialect.SideDoor{Kind: dialect.SideDoorGuardWriter, Object: kind + " " + fn.String(),
		Problem: "the " + kind + " " + fn.String() + " may write the tombstone table " + dialect.TableName{Schema: table.Schema, Name: tomb}.String() + ", which the tombstone guard of " + table.String() +
			" reads: called through the pool (sent as written, with or without a token), by a trigger or by another routine, with its DEFINER's rights where it is SQL SECURITY DEFINER, one that deletes a tombstone or lowers its token lets a stale holder re-create a deleted key; drop it (or remove the write from its body)"}, false, nil
}

// ownRecorder reports whether def, the definition of the procedure named like t's
// recorder in the database schema, and its parameters are exactly the recorder
// absenceDDL writes (of this version or an older one) for t's primary key as the
// catalog lists it and t's token column (red-team rt45a F3: the body alone, with a key
// list read out of it, let an impostor with other parameters or another key order
// pass). The Fix qualifies the tombstone table with the database (schema.Check
// resolves it); an install by hand of an unqualified table does not: both are the
// guard's.
func (d dialectImpl) ownRecorder(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable, schema, def string) (bool, error) {
	_, key, err := dialect.PrimaryKeyColumns(ctx, query, d, dialect.TableName{Schema: schema, Name: t.Table.Name})
	if err != nil || len(key) == 0 {
		return false, err
	}
	tokenCol := t.TokenColumn
	if tokenCol == "" {
		tokenCol = "fence_token"
	}
	// The installer wrote the token column as its configuration spelled it, which may
	// differ in case from this pool's (MySQL's column names are case-insensitive):
	// the catalog's spelling and this pool's are both the column.
	spellings := []string{tokenCol}
	if rows, err := query(ctx, "SELECT COLUMN_NAME FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ? AND COLUMN_NAME = ?", schema, t.Table.Name, tokenCol); err != nil {
		return false, err
	} else if len(rows) == 1 && len(rows[0]) == 1 && rows[0][0] != tokenCol {
		spellings = append(spellings, rows[0][0])
	}
	v := 0
	for _, tc := range spellings {
		for _, tn := range []dialect.TableName{{Name: t.Table.Name}, {Schema: schema, Name: t.Table.Name}} {
			if v == 0 {
				v = d.ownAbsence(def, tn, key, tc)
			}
		}
	}
	if v == 0 {
		return false, nil
	}
	rows, err := query(ctx, "SELECT PARAMETER_NAME, PARAMETER_MODE, DTD_IDENTIFIER, COALESCE(CHARACTER_SET_NAME, ''), COALESCE(COLLATION_NAME, '') FROM information_schema.PARAMETERS "+
		"WHERE SPECIFIC_SCHEMA = ? AND SPECIFIC_NAME = ? AND ROUTINE_TYPE = 'PROCEDURE' AND ORDINAL_POSITION > 0 ORDER BY ORDINAL_POSITION", schema, absenceProc(t.Table.Name))
	if err != nil {
		return false, err
	}
	return absenceParamsMatch(v, key, rows), nil
}
