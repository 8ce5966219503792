package mysql

import (
	"crypto/sha256"
	"encoding/hex"
	"errors"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/go-sql-driver/mysql"
)

// GuardSQLState is the SQLSTATE of every refusal by the database-side guard (MySQL
// error 1644), whose DDL Dialect provides as a dialect.Guarder.
//
// The guard is a BEFORE UPDATE trigger that refuses, inside MySQL/MariaDB, an UPDATE
// of a guarded table that bypasses the wrapper: one that lowers the fence token (SQLSTATE FNCD1, error 1644, message "fencedsql: guard
// on <table>: UPDATE lowers the fence token") or does not advance the version (…
// "UPDATE does not advance the version").
//
// The wrapper's fenced case sets the token (or, with ExpectVersion, the version) to
// NULL and relies on the NOT NULL violation, error 1048, which it maps to ErrFenced
// (ErrVersionConflict). A BEFORE trigger sees that NULL before the constraint check,
// and in a non-strict sql_mode MySQL would afterwards store 0 instead of failing — a
// trigger cannot see the caller's sql_mode (it runs with the mode it was created
// with). So for a NULL the trigger raises that same error itself:
//
//	SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = 'Column ''fence_token'' cannot be null'
//
// which is exactly what strict mode raises (the wrapper sees no difference), and which
// also refuses the NULL-to-0 write of a plain client in a non-strict session.
//
// The DDL (GuardDDL) is one trigger per table, fencedsql_guard_<table> (shortened with
// a hash past MySQL's 64-character limit), created in the table's database.
// Removing it is one statement (UnguardDDL):
//
//	DROP TRIGGER IF EXISTS `fencedsql_guard_<table>`
//
// Limits:
//   - DELETE (and REPLACE, which deletes) is not guarded: MySQL exposes no
//     per-row identity of the transaction that last wrote a row, so a trigger cannot
//     tell the wrapper's DELETE (fencing UPDATE, then DELETE) from a plain one. Use
//     privileges instead: give writers outside the wrapper no DELETE on guarded tables.
//     (What a deletion records is the tombstone guard's: a row a REPLACE deletes is
//     recorded at the REPLACE's token when greater, replacemark.go.) TRUNCATE and
//     foreign-key cascades do not run triggers at all in MySQL.
//   - The guard checks that a writer follows the protocol, not that its token is
//     genuine: a writer outside the wrapper that raises the version and sets a token
//     at least as high passes. INSERT is not guarded.
//   - DDL is not transactional in MySQL: GuardDDL installs each trigger through a
//     shadow copy (replaceTrigger), so that re-installing over an existing guard
//     leaves no moment without it.
//   - Creating triggers needs the TRIGGER privilege, and with binary logging on it
//     may also need SUPER or log_bin_trust_function_creators=1.
//   - Install it through a plain (non-fenced) connection: the trigger body holds
//     semicolons, and the fenced driver refuses multi-statement strings that mention a
//     guarded table. Through database/sql the whole CREATE TRIGGER is one statement (no
//     DELIMITER).
const GuardSQLState = "FNCD1"

const maxIdentLen = 64

// IsGuardError reports whether err is a refusal by the database-side guard.
func IsGuardError(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && string(me.SQLState[:]) == GuardSQLState
}

// triggerName is the qualified name of table's guard trigger (in the table's database).
func triggerName(table dialect.TableName) dialect.TableName {
	return dialect.TableName{Schema: table.Schema, Name: guardTrigger(table.Name)}
}

// guardTrigger is the trigger's name: "fencedsql_guard_<table>", or a prefix of it
// and a hash of the table name when that exceeds 64 characters.
func guardTrigger(name string) string { return boundedTrigger("fencedsql_guard_", name) }

// boundedTrigger is the name of an object the dialect derives from a guarded table's
// name: prefix+name, or, when that exceeds MariaDB's and MySQL's 64-character limit,
// its first characters (cut at a character, never inside one: the limit counts
// characters) and "_" and 16 hex digits of the SHA-256 of name — 64 bits, so that no
// birthday search finds two long names sharing their triggers, tombstone table and
// routines (the 32-bit FNV hash of before did in about 2^16 tries, red-team rt56a F5).
// A collision that happens anyway, or a table whose name spells another table's
// hashed name, is refused at install (ownedCheck, ownedobjects.go).
func boundedTrigger(prefix, name string) string {
	full := prefix + name
	if len([]rune(full)) <= maxIdentLen {
		return full
	}
	suffix := hashSuffix(name)
	return string([]rune(full)[:maxIdentLen-len(suffix)]) + suffix
}

// hashSuffix is the suffix of a hashed derived name (boundedTrigger).
func hashSuffix(name string) string {
	sum := sha256.Sum256([]byte(name))
	return "_" + hex.EncodeToString(sum[:8])
}

// literal quotes s as a string literal: quotes doubled, backslashes doubled (under
// NO_BACKSLASH_ESCAPES, in force when the trigger is created, a backslash would read
// as two; the literal stays well-formed either way).
func literal(s string) string {
	return "'" + strings.NewReplacer(`\`, `\\`, `'`, `''`).Replace(s) + "'"
}

// message is a SIGNAL MESSAGE_TEXT of the guard (at most 128 characters).
func message(table, what string) string { return messageWith("fencedsql: guard on ", table, what) }

// messageWith is a SIGNAL MESSAGE_TEXT head + table + ": " + what, the table name cut
// to keep it within 128 characters.
func messageWith(head, table, what string) string {
	const maxMsg = 128
	tail := ": " + what
	r := []rune(table)
	if room := maxMsg - len(head) - len(tail); len(r) > room {
		r = append(r[:room-3], []rune("...")...)
	}
	return literal(head + string(r) + tail)
}

// GuardDDL returns the statements that install the guard on table (in table.Schema,
// or the connection's database when it is empty). Each is one statement for
// database/sql; each trigger replaces one of its name without a moment in which the
// table has neither (replaceTrigger). A long table name's hashed trigger names held by
// another table's triggers are refused first (ownedCheck).
func (d dialectImpl) GuardDDL(table dialect.TableName, tokenCol, versionCol string) []string {
	ddl := d.ownedCheck(table, ownedObjects{triggers: []string{guardTrigger(table.Name), floorTrigger(table.Name)}})
	ddl = append(append(ddl, d.floorDDL(table.Schema)...), d.replaceTriggers(d.guardTriggerDefs(table, tokenCol, versionCol))...)
	return append(ddl, d.fenceFuncDDL(table, tokenCol)...)
}

// guardVersion marks the text of the guard's BEFORE UPDATE trigger of this version (a
// comment in its body, which information_schema.TRIGGERS keeps): guardTriggers names
// a guard trigger without it as one of an earlier version. v2: the token and the
// version compare as integers whatever the columns' declared types (red-team rt49d
// F1). (The BEFORE INSERT floor trigger did not change: it compares the token with
// the BIGINT floor, numerically.)
const guardVersion = "fencedsql guard v2"

// guardTriggerDefs are the guard's two triggers on table: the BEFORE UPDATE guard and
// the BEFORE INSERT floor trigger.
func (d dialectImpl) guardTriggerDefs(table dialect.TableName, tokenCol, versionCol string) []triggerDef {
	tok, ver := d.QuoteIdent(tokenCol), d.QuoteIdent(versionCol)
	notNull := func(col string) string {
		return "SIGNAL SQLSTATE '23000' SET MYSQL_ERRNO = 1048, MESSAGE_TEXT = " + literal("Column '"+col+"' cannot be null")
	}
	refuse := func(what string) string {
		return "SIGNAL SQLSTATE '" + GuardSQLState + "' SET MESSAGE_TEXT = " + message(table.Name, what)
	}
	// The comparisons are numeric whatever the columns' declared types: a token
	// column retyped VARCHAR on a plain connection (the triggers name it, MySQL and
	// MariaDB allow the ALTER) would otherwise compare as text, '5' < '10' false, and
	// let a raw writer lower the token (red-team rt49d F1). On an integer column the
	// CAST changes nothing; it costs no query.
	num := func(ref string) string { return "CAST(" + ref + " AS SIGNED)" }
	lowers := num("NEW."+tok) + " < " + num("OLD."+tok)
	stays := num("NEW."+ver) + " <= " + num("OLD."+ver)
	return []triggerDef{
		// One test on the wrapper's path; the nested IF only names the refusal.
		{triggerName(table), "BEFORE UPDATE ON " + table.Quote(d.QuoteIdent) + " FOR EACH ROW\nBEGIN\n  /* " + guardVersion + " */\n" +
			"  IF NEW." + tok + " IS NULL OR NEW." + ver + " IS NULL OR " + lowers + " OR " + stays + " OR " + floorBelow(tok) + " THEN\n" +
			"    IF NEW." + tok + " IS NULL THEN\n      " + notNull(tokenCol) + ";\n" +
			"    ELSEIF NEW." + ver + " IS NULL THEN\n      " + notNull(versionCol) + ";\n" +
			"    ELSEIF " + lowers + " THEN\n      " + refuse("UPDATE lowers the fence token") + ";\n" +
			"    ELSEIF " + stays + " THEN\n      " + refuse("UPDATE does not advance the version") + ";\n" +
			"    ELSE\n      " + floorRefusal(table.Name) + ";\n" +
			"    END IF;\n  END IF;\nEND"},
		// One test on the wrapper's path; a NULL fencing column is refused as NOT NULL
		// refuses it, so that a constraint dropped while pools run opens nothing.
		{dialect.TableName{Schema: table.Schema, Name: floorTrigger(table.Name)}, "BEFORE INSERT ON " + table.Quote(d.QuoteIdent) + " FOR EACH ROW\n" +
			"  IF NEW." + tok + " IS NULL OR NEW." + ver + " IS NULL OR " + floorBelow(tok) + " THEN\n" +
			"    IF NEW." + tok + " IS NULL THEN " + notNull(tokenCol) + ";\n" +
			"    ELSEIF NEW." + ver + " IS NULL THEN " + notNull(versionCol) + ";\n" +
			"    ELSE " + floorRefusal(table.Name) + ";\n" +
			"    END IF;\n  END IF"},
	}
}

// UnguardDDL returns the one statement that removes the guard from table.
func (d dialectImpl) UnguardDDL(table dialect.TableName) []string {
	return []string{
		"DROP TRIGGER IF EXISTS " + triggerName(table).Quote(d.QuoteIdent),
		"DROP TRIGGER IF EXISTS " + dialect.TableName{Schema: table.Schema, Name: floorTrigger(table.Name)}.Quote(d.QuoteIdent),
		"DROP FUNCTION IF EXISTS " + fenceFuncName(table).Quote(d.QuoteIdent),
	}
}

// GuardInstalledQuery yields 1 when both guard triggers exist on table and read the
// token floor with a shared lock (floorRead: a guard installed before the floor
// existed, or one reading it without the lock, is reported missing).
func (dialectImpl) GuardInstalledQuery(table dialect.TableName) (query string, args []any) {
	return "SELECT CASE WHEN COUNT(*) = 2 THEN 1 ELSE 0 END FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("TRIGGER_SCHEMA", table.Schema) + " AND EVENT_OBJECT_TABLE = ? AND ACTION_TIMING = 'BEFORE' AND " +
			"((TRIGGER_NAME = ? AND EVENT_MANIPULATION = 'UPDATE') OR (TRIGGER_NAME = ? AND EVENT_MANIPULATION = 'INSERT')) AND ACTION_STATEMENT LIKE ?",
		[]any{table.Schema, table.Name, guardTrigger(table.Name), floorTrigger(table.Name), "%" + floorRead + "%"}
}

// BeforeUpdateTriggersQuery implements dialect.UpdateTriggerFinder: 1 when the table
// has a BEFORE UPDATE trigger (the guard's or the user's), which MariaDB and MySQL run
// for the conflicting row of INSERT … ON DUPLICATE KEY UPDATE c = c too. MySQL shows
// triggers only to an account with the TRIGGER privilege (MariaDB to one with a
// privilege on the table): an account that sees none gets 0.
func (dialectImpl) BeforeUpdateTriggersQuery(table dialect.TableName) (query string, args []any) {
	return "SELECT CASE WHEN COUNT(*) > 0 THEN 1 ELSE 0 END FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND " + exactDatabase("TRIGGER_SCHEMA", table.Schema) + " AND EVENT_OBJECT_TABLE = ? AND ACTION_TIMING = 'BEFORE' AND EVENT_MANIPULATION = 'UPDATE'",
		[]any{table.Schema, table.Name}
}

// NotNullDDL returns the statement that makes an existing fencing column NOT NULL
// (dialect.NotNullFixer). Rows holding NULL in it must be fixed first.
func (d dialectImpl) NotNullDDL(table dialect.TableName, column string) []string {
	return []string{"ALTER TABLE " + table.Quote(d.QuoteIdent) + " MODIFY COLUMN " + d.QuoteIdent(column) + " BIGINT NOT NULL DEFAULT 0"}
}

var (
	_ dialect.UpdateTriggerFinder = dialectImpl{}
	_ dialect.Guarder             = dialectImpl{}
	_ dialect.NotNullFixer        = dialectImpl{}
)
