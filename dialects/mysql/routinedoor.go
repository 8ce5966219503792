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
	rows, err := query(ctx, "SELECT ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE, ROUTINE_DEFINITION FROM information_schema.ROUTINES "+
		"WHERE LOCATE(LOWER(?), LOWER(ROUTINE_DEFINITION)) > 0 "+
		"AND (ROUTINE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) OR LOCATE(LOWER(COALESCE(NULLIF(?, ''), DATABASE())), LOWER(ROUTINE_DEFINITION)) > 0) "+
		"ORDER BY ROUTINE_SCHEMA, ROUTINE_NAME, ROUTINE_TYPE",
		t.Table.Name, t.Table.Schema, t.Table.Schema)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 4 || !dialect.WritesTable(r[3], dialect.MySQLSyntax, t.Table.Name) {
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
