package mysql

import (
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Re-installing a guard trigger on a live table (red-team rt34a F1). MySQL and
// MariaDB DDL is not transactional, and fencedsql-schema -apply runs their Fix in
// autocommit: installed as DROP TRIGGER IF EXISTS x then CREATE TRIGGER x, a trigger
// left the table without it between the two statements, and a writer on another
// connection that landed there was not judged (a stale re-insert of a deleted key, a
// fenced DELETE that recorded no tombstone, an UPDATE that lowered the token). Guards
// are re-installed on live systems: an upgrade of their version, the Fix after a table
// swap or a rename, a privilege Fix that changes a trigger's DEFINER.
//
// MariaDB's CREATE OR REPLACE TRIGGER replaces a trigger in one statement, but MySQL 8
// has no OR REPLACE for triggers, and the statements are the same for both servers
// (the dialect does not know which one will run them). So each trigger is installed
// through a shadow, a copy of the new trigger under another name, which guards the
// table while the trigger of the real name is replaced:
//
//	DROP TRIGGER IF EXISTS <shadow>       (one an interrupted install left)
//	CREATE TRIGGER <shadow> <definition>  (the old trigger and the new one both fire)
//	DROP TRIGGER IF EXISTS <name>         (the shadow guards)
//	CREATE TRIGGER <name> <definition>    (the shadow and the new trigger both fire)
//	DROP TRIGGER IF EXISTS <shadow>
//
// At every moment the table has the old trigger, the new one, or both; a write that
// meets two must pass both, which every one of the guard's triggers allows (the
// tombstone triggers record with GREATEST, the checks only refuse). The shadow's name,
// fencedsql_next_<name> (shortened with a hash past 64 characters), carries none of the
// guard's name prefixes (guardTriggerPrefixes): no check takes it for one of the
// guard's triggers or for a tombstone trigger of another table, and one left behind by
// an interrupted install is judged like any other trigger on the table (schema.Check
// reports it; the next install drops it). While the shadow exists, the lazy check of a
// running pool may refuse the table for a moment (it sees a trigger that names the
// fencing columns or writes the tombstone table): it fails closed.

// shadowPrefix is the name prefix of the shadow of a trigger being replaced.
const shadowPrefix = "fencedsql_next_"

// triggerDef is one trigger the guard or the tombstone guard installs: its name (in the
// table's database) and its definition after the name, "<timing> <event> ON <table>
// FOR EACH ROW\n<body>".
type triggerDef struct {
	name dialect.TableName
	def  string
}

// replaceTrigger returns the statements that install t, replacing the trigger of its
// name if there is one, without a moment in which the table has neither (see above).
// create is the statement's head before TRIGGER: "CREATE", or "CREATE DEFINER = …".
func (d dialectImpl) replaceTrigger(create string, t triggerDef) []string {
	name := t.name.Quote(d.QuoteIdent)
	shadow := dialect.TableName{Schema: t.name.Schema, Name: boundedTrigger(shadowPrefix, t.name.Name)}.Quote(d.QuoteIdent)
	return []string{
		"DROP TRIGGER IF EXISTS " + shadow,
		create + " TRIGGER " + shadow + " " + t.def,
		"DROP TRIGGER IF EXISTS " + name,
		create + " TRIGGER " + name + " " + t.def,
		"DROP TRIGGER IF EXISTS " + shadow,
	}
}

// replaceTriggers is replaceTrigger of each of defs, in order, created by "CREATE".
func (d dialectImpl) replaceTriggers(defs []triggerDef) []string {
	var ddl []string
	for _, t := range defs {
		ddl = append(ddl, d.replaceTrigger("CREATE", t)...)
	}
	return ddl
}
