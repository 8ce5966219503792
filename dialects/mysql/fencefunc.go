package mysql

import (
	"context"
	"regexp"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The one-statement DELETE's fence function as a door (red-team rt59a F1).
// DeleteFenceQuery lets the wrapper send a table's fenced DELETEs as one statement
// when the function fencedsql_fence_<table> of this version exists, judged by its
// name and COMMENT (oneStepMarker); the statement then relies on the function alone
// to refuse a row with a newer token, below the floor, or whose mark was lost. The
// routines' owner (ALTER ROUTINE / CREATE ROUTINE on the database) can re-create it
// keeping the COMMENT with a body that returns 1: a stale holder's DELETE then removes
// rows written under newer tokens, with every check passing (PostgreSQL closed the
// same door with guardFunctions).
//
// So fenceFunction compares the function DeleteFenceQuery would accept — in the
// table's database byte for byte (exactDatabase), with this version's COMMENT — whole
// with what fenceFuncDDL writes for the table's token column: its body
// (ROUTINE_DEFINITION; ASCII letters compared without case: the body's keywords,
// parameters and variables read the same in any case, and the only other letters are
// the refusals' SQLSTATEs and messages, where a change can only make a refusal another
// error), its parameters in order with their names, modes and types
// (information_schema.PARAMETERS; integer display widths ignored), its return type, and
// the characteristics the install writes (NOT DETERMINISTIC, NO SQL, SQL SECURITY
// INVOKER). The sql_mode the function was created under is not compared: the body's
// reading does not depend on it (no double-quoted or backslashed literal the refusal
// depends on, no ||, NOT parenthesised, no empty literal; a message's text may read
// differently) and the install itself runs in the installer's mode. The body text of
// this marker has not changed since the marker was introduced, so every fence function
// this version's DeleteFenceQuery accepts and an installation wrote passes.
//
// A function not as written is a door (dialect.SideDoorOwnTrigger): schema.Check
// reports it with the DDL that re-creates it, and the lazy check refuses the table's
// writes (ErrSchema), as it does for a changed guard trigger — rather than only falling
// back to the two-statement DELETE, so that a changed guard object is impossible to
// miss. One catalog query, at the lazy check (once per pool and table) and in
// schema.Check; nothing per statement. A body the account may not read (MariaDB shows
// a routine's definition only to its definer and to accounts that may read every
// routine) is not judged here, and is never trusted: DeleteFenceQuery says no for it
// (the table's DELETEs run as two statements, on the guard's triggers alone), and
// schema.Check reports it as not judged, with its definer and the Fix that re-creates
// it (hiddenDefinitions, hiddendefs.go; red-team rt60b F3: the routines' owner that
// re-creates the function becomes its definer, and the migration account, with ALL
// PRIVILEGES on the database, no longer reads it). MySQL has no DELETE … RETURNING and
// never calls the function: not judged there.
func (d dialectImpl) fenceFunction(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if t.TokenColumn == "" {
		return nil, nil
	}
	const db = "COALESCE(NULLIF(?, _binary''), DATABASE())"
	name := fenceFunc(t.Table.Name)
	// The parameters are one GROUP_CONCAT, whose length the session's
	// group_concat_max_len would cut (a cut list read as a changed fence): the
	// statement sets it for itself. The query answers only on MariaDB.
	rows, err := query(ctx, "/*M!100108 SET STATEMENT group_concat_max_len = 1048576 FOR */ SELECT r.ROUTINE_SCHEMA, r.ROUTINE_NAME, COALESCE(r.ROUTINE_DEFINITION, ''), "+
		"CONCAT_WS(' ', r.DTD_IDENTIFIER, r.IS_DETERMINISTIC, r.SQL_DATA_ACCESS, r.SECURITY_TYPE, r.ROUTINE_BODY), "+
		"COALESCE((SELECT GROUP_CONCAT(p.ORDINAL_POSITION, ' ', COALESCE(p.PARAMETER_MODE, ''), ' ', COALESCE(p.PARAMETER_NAME, ''), ' ', p.DTD_IDENTIFIER ORDER BY p.ORDINAL_POSITION SEPARATOR ', ') "+
		"FROM information_schema.PARAMETERS p WHERE p.SPECIFIC_SCHEMA = "+db+" AND "+exactDatabase("p.SPECIFIC_SCHEMA", t.Table.Schema)+" AND p.SPECIFIC_NAME = ? AND p.ROUTINE_TYPE = 'FUNCTION'), '') "+
		"FROM information_schema.ROUTINES r WHERE r.ROUTINE_SCHEMA = "+db+" AND "+exactDatabase("r.ROUTINE_SCHEMA", t.Table.Schema)+
		" AND r.ROUTINE_NAME = ? AND r.ROUTINE_TYPE = 'FUNCTION' AND r.ROUTINE_COMMENT = ? AND VERSION() LIKE '%MariaDB%'",
		t.Table.Schema, name, t.Table.Schema, name, oneStepMarker)
	if err != nil {
		return nil, err
	}
	want := fenceFuncText(d.fenceFuncDDL(dialect.TableName{Name: t.Table.Name}, t.TokenColumn)[1])
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 5 || strings.TrimSpace(r[2]) == "" {
			continue // not the account's to read: never trusted (see above)
		}
		got := fenceFuncShape{body: r[2], traits: r[3], params: r[4]}
		if got.normal() == want.normal() {
			continue
		}
		fn := dialect.TableName{Schema: r[0], Name: r[1]}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorOwnTrigger, Object: "function " + fn.String(),
			Problem: "the function " + fn.String() + " carries the name and marker of the fence of " + t.Table.String() + "'s one-statement DELETE but is not the text, parameters and characteristics this version installs: " +
				"the DELETE relies on it alone to refuse a row with a newer token or below the floor, so a changed fence may let a stale holder delete rows; re-create it (fencedsql-schema -apply)",
			Fix: d.fenceFuncDDL(t.Table, t.TokenColumn)})
	}
	return doors, nil
}

// fenceFuncShape is a fence function as the catalog describes it: its body, its
// characteristics (return type, determinism, data access, security, body language,
// space-separated) and its parameters (position, mode, name, type, comma-separated;
// position 0 the return value).
type fenceFuncShape struct{ body, traits, params string }

// displayWidth matches an integer type's display width, which MariaDB lists and MySQL
// 8 drops.
var displayWidth = regexp.MustCompile(`(int)\(\d+\)`)

// normal is the shape as compared: ASCII letters in lower case, integer display
// widths and surrounding space dropped.
func (s fenceFuncShape) normal() fenceFuncShape {
	n := func(x string) string {
		return displayWidth.ReplaceAllString(dialect.LowerASCII(strings.TrimSpace(x)), "$1")
	}
	return fenceFuncShape{n(s.body), n(s.traits), n(s.params)}
}

// fenceFuncText is the shape of the CREATE FUNCTION statement fenceFuncDDL writes:
// the parameters, characteristics and body it declares, spelled as the catalog lists
// them.
func fenceFuncText(create string) fenceFuncShape {
	_, body, _ := strings.Cut(create, "'"+oneStepMarker+"'\n")
	return fenceFuncShape{
		body:   body,
		traits: "int NO NO SQL INVOKER SQL",
		params: "0   int, 1 IN cur bigint, 2 IN tok bigint, 3 IN fl bigint",
	}
}
