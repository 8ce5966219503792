package dialect

import "strings"

import "context"

// SideDoorFinder is implemented by dialects that can find a guarded table's
// database-level side doors: objects of the database through which a statement that
// does not name the table (so the wrapper, which matches table names, sends it as
// written), or a write the database treats specially, changes the table's rows
// without the fence — a non-transactional engine, an updatable view, an inheritance
// child or partition without the guard, a foreign key whose cascade writes the table
// where triggers do not see it, a rule. schema.Check reports each SideDoor with its fix;
// see schema.Check for the list and the dialect packages for what each finds.
type SideDoorFinder interface {
	// SideDoors inspects the catalog through query (read-only) and returns the side
	// doors of t.Table, none when it has none. An error is a failed catalog query.
	SideDoors(ctx context.Context, query CatalogQuery, t SideDoorTable) ([]SideDoor, error)
}

// TriggerDoorFinder is implemented by dialects that can find the doors a statement
// through the pool opens: database objects through which a statement the fenced pool
// sends (as written, or fenced for another table only) changes the guarded table's rows
// without the fence, or undoes the fence of a statement on the table itself:
//
//   - triggers of other tables whose bodies write the table (SideDoorTrigger): a
//     statement on the other table is sent as written (or, when that table is guarded
//     too, fenced for that table only: its token is checked against that table's rows,
//     not against the rows the trigger writes here, which may carry a newer token of
//     another lease), and the trigger's write reaches this table without this table's
//     fence; the database-side guard lets through what a plain connection may do (an
//     UPDATE that advances the version, an INSERT, a DELETE where the guard does not
//     cover it);
//   - the table's own BEFORE row triggers on INSERT or UPDATE that may assign the token
//     or the version column (SideDoorOwnTrigger): the fenced UPDATE sets the token to
//     NULL when the row carries a newer one and relies on the NOT NULL violation, which
//     the database checks after the BEFORE row triggers, so a trigger that replaces the
//     NULL (COALESCE(NEW.fence_token, OLD.fence_token)) turns a fenced write into an
//     accepted one, the guard's trigger or not; so does one that writes the row itself
//     and skips the original change (SQLite's RAISE(IGNORE), PostgreSQL's RETURN NULL),
//     keyed on the fencing NULL in its WHEN clause or not;
//   - updatable views over the table without the refusal the fix installs
//     (SideDoorView), and rules (PostgreSQL, SideDoorRule): a write through them does
//     not name the table, so the wrapper sends it as written;
//   - stored functions whose bodies write the table (SideDoorRoutine): a statement
//     reaches them without CALL and without naming the table (SELECT f(), a view, a
//     default, …), so the wrapper sends it as written and their write is unfenced;
//     the guard lets through what a plain connection may do;
//   - a guard lost by a table swap (SideDoorGuardLost): objects of the guard or of the
//     tombstone guard named for the table survive (see the kind), but the table does
//     not carry their triggers: a stale token re-inserts a deleted key, and writes
//     outside the wrapper are unguarded;
//   - a guard that reads another column than the token column (SideDoorGuardColumn,
//     PostgreSQL): the token column was replaced by DDL, every row's token reset.
//   - an object of the guard that runs as a DEFINER account that does not exist
//     (SideDoorGuardDefiner, MySQL/MariaDB): every write that fires it fails.
//
// Both callers refuse them: schema.Check reports each door as a problem (the dialect's
// SideDoors includes TriggerDoors' doors, once), and the lazy check before the first
// guarded write of a pool (or connection) refuses the table with ErrSchema (nothing
// written) while one is found, so a door is impossible to miss. fencedsql's own objects
// (named fencedsql_…) are not judged.
type TriggerDoorFinder interface {
	// TriggerDoors inspects the catalog through query (read-only; which queries it
	// sends, in which order, depends only on t and on what the earlier ones answered,
	// so a recorder that answers none sees a fixed sequence) and returns the doors a
	// statement through the pool opens on t.Table, none when there are none. An
	// error is a failed catalog query.
	TriggerDoors(ctx context.Context, query CatalogQuery, t SideDoorTable) ([]SideDoor, error)
}

// DoorFinder is one finder of a dialect's side doors of a table.
type DoorFinder func(ctx context.Context, query CatalogQuery, t SideDoorTable) ([]SideDoor, error)

// FindDoors runs the finders in order and returns their doors in that order; the first
// failed catalog query ends it with its error.
func FindDoors(ctx context.Context, query CatalogQuery, t SideDoorTable, finders ...DoorFinder) ([]SideDoor, error) {
	var doors []SideDoor
	for _, find := range finders {
		found, err := find(ctx, query, t)
		if err != nil {
			return nil, err
		}
		doors = append(doors, found...)
	}
	return doors, nil
}

// SideDoorTable is what a SideDoorFinder is told about the guarded table.
type SideDoorTable struct {
	Table                      TableName
	TokenColumn, VersionColumn string
	// PrimaryKey is the table's primary key (nil: none, or the dialect keeps no
	// tombstones); Tombstones: the tombstone guard is installed on the table or the
	// report's Fix installs it, so a fix may extend it to other objects.
	PrimaryKey []string
	Tombstones bool
}

// SideDoorKind names a kind of side door.
type SideDoorKind string

// The side doors schema.Check knows.
const (
	// SideDoorEngine: the table's storage engine is not transactional (MySQL MyISAM,
	// Aria, MEMORY…): a fenced statement that fails leaves the rows it already wrote.
	SideDoorEngine SideDoorKind = "engine"
	// SideDoorView: an updatable view over the table (or a view with INSTEAD OF
	// triggers or rules that write it): writes through it do not name the table.
	SideDoorView SideDoorKind = "view"
	// SideDoorChild: a PostgreSQL inheritance child of the table without the guard
	// and tombstone triggers: the parent's row triggers do not fire for its rows.
	SideDoorChild SideDoorKind = "child"
	// SideDoorPartition: a PostgreSQL partition (or sub-partition) of the table
	// without the guard's triggers: TRUNCATE of a partition fires only its own.
	SideDoorPartition SideDoorKind = "partition"
	// SideDoorCascade: a foreign key of the table with ON DELETE/ON UPDATE CASCADE,
	// SET NULL or SET DEFAULT: a write to the referenced table changes the table's
	// rows, with or without its triggers depending on the database.
	SideDoorCascade SideDoorKind = "cascade"
	// SideDoorRule: a PostgreSQL rule on the table, or a rule elsewhere whose action
	// writes it: the rewritten statement is not the one the wrapper fenced.
	SideDoorRule SideDoorKind = "rule"
	// SideDoorTrigger: a trigger on another table (guarded or not) whose body writes
	// the table (TriggerDoorFinder): a write to that table writes this one unfenced.
	SideDoorTrigger SideDoorKind = "trigger"
	// SideDoorGuardWriter: a trigger (on any table or view) whose body may write an
	// object the guards read — the table's tombstone table, the token floor: a
	// tombstone deleted or the floor lowered inside a fenced statement lets a stale
	// write through the intact guards. (On PostgreSQL and MySQL/MariaDB the trigger's
	// owner or definer needs a right on those tables the application role lacks; the
	// trigger lends it to every role that may write its table.)
	SideDoorGuardWriter SideDoorKind = "guard writer"
	// SideDoorGuardTable: an object the guards read — the table's tombstone table, the
	// token floor — is not as the guards created it: its token column is not a
	// NOT NULL 64-bit integer (a FLOAT keeps 2^24+1 as 2^24, a text column compares
	// '60' above '100'), or it carries a foreign key (a cascade from an ordinary table
	// erases tombstones or lowers the floor), a trigger or rule other than the guards'
	// own, or row security (PostgreSQL: rows hidden from the guard's check), or a
	// unique index besides its primary key (the guards' upsert folds one key's
	// tombstone into another key's row: red-team rt46a F1; SQLite rt29a F6). A
	// tombstone or floor kept lower than written lets a stale write through the intact
	// guards. Fix: the statements that restore it where one can (the column's type, a
	// dropped constraint or trigger); else drop and re-run fencedsql-schema -apply.
	SideDoorGuardTable SideDoorKind = "guard table"
	// SideDoorOwnTrigger: a BEFORE INSERT or UPDATE row trigger of the table itself
	// whose body (or arguments, or WHEN clause) names the token or the version column,
	// or whose body writes the table itself (or, on SQLite, uses RAISE(IGNORE))
	// (TriggerDoorFinder): it may replace the NULL the fenced UPDATE writes when the row
	// carries a newer token, or write the row itself and skip the change, before the
	// NOT NULL check that refuses it. On SQLite also a trigger of the table of any
	// timing and event whose body writes the table itself or that uses RAISE(IGNORE):
	// SQLite runs a table's triggers newest first, so one made after the guards runs
	// before (or abandons) the tombstone guard's AFTER triggers (red-team rt48j).
	SideDoorOwnTrigger SideDoorKind = "own trigger"
	// SideDoorForeign: a foreign table (PostgreSQL postgres_fdw) whose remote table is
	// named like the table: through a loopback server, writes to it reach the table
	// without naming it.
	SideDoorForeign SideDoorKind = "foreign table"
	// SideDoorLockingView: a view over the table whose definition holds a row-locking
	// clause (PostgreSQL): a plain SELECT of it locks the table's rows, which the
	// wrapper cannot see to claim for the reader's token. No statement fixes it
	// (recreating the view is the owner's decision): Fix is empty.
	SideDoorLockingView SideDoorKind = "locking view"
	// SideDoorGuardLost: the database holds evidence that the table was guarded under
	// its name (objects of the guard or the tombstone guard named for it, which outlive
	// its triggers: PostgreSQL's trigger functions, MySQL/MariaDB and SQLite triggers
	// named for it sitting on another table, the tombstone table), but the table does
	// not carry the corresponding triggers (enabled) (TriggerDoorFinder): a table swap
	// (an online schema change's RENAME TABLE, SQLite's twelve-step rebuild) left them
	// on the old table or dropped them, so raw writes are unguarded and a stale token
	// re-inserts a deleted key. Fix: re-run fencedsql-schema -apply (schema.Check's
	// Fix re-installs them on the table); the door itself carries no statement.
	SideDoorGuardLost SideDoorKind = "guard lost"
	// SideDoorGuardColumn: the guard reads another column than the table's token
	// column (PostgreSQL: its DELETE trigger's WHEN clause is bound to the column's
	// number, and still reads a column renamed away): the token column was replaced
	// by DDL (renamed or dropped and added again) without the row triggers, every row's
	// token reset to the new column's default, and a stale holder overwrites rows a
	// newer one wrote (TriggerDoorFinder). No statement fixes it (the old tokens may be
	// in the old column): Fix is empty.
	SideDoorGuardColumn SideDoorKind = "guard column"
	// SideDoorGuardDefiner: an object of the guard or the tombstone guard that runs as
	// its DEFINER (MySQL/MariaDB: the triggers, the absence recorder) names an account
	// that does not exist (dropped since the install, or a dump restored on a server
	// without it): every write that fires it fails with the server's error (1449),
	// the current holder's too (TriggerDoorFinder; red-team rt57b F4). Fix: the object
	// re-created as the account applying the fix (the owner under schema.WithRoles).
	SideDoorGuardDefiner SideDoorKind = "guard definer"

	// SideDoorTombstoneKey: the tombstone table's key is not the table's primary key
	// as it is now (a key column's type or collation changed, or the key's columns did,
	// after the tombstone guard was installed: MySQL/MariaDB keep no dependency of the
	// triggers on the columns): a deleted key is recorded converted (1.5 as 2 in a
	// BIGINT), and a stale holder re-inserts it (TriggerDoorFinder). Fix: the
	// tombstone table's key columns altered to the key's types, where the columns are
	// the same; else drop the tombstone table and re-run fencedsql-schema -apply.
	SideDoorTombstoneKey SideDoorKind = "tombstone key"

	// SideDoorUniqueExpression: a UNIQUE index of the table on an expression (SQLite):
	// a write that REPLACEs on it (INSERT OR REPLACE, REPLACE, UPDATE OR REPLACE from a
	// plain connection) deletes the row it collides with without the row's delete
	// triggers, and the tombstone guard, which compares the UNIQUE indexes column by
	// column, cannot tell which row that is: no tombstone is recorded, and a holder
	// older than the deleted row may insert its key again. No statement fixes it (an
	// index on a column, e.g. a generated one, is compared): Fix is empty.
	SideDoorUniqueExpression SideDoorKind = "unique expression"
)

// SideDoor is one side door of a guarded table, found by a SideDoorFinder.
type SideDoor struct {
	Kind SideDoorKind
	// Object names the view, child, partition, constraint or rule as the database
	// names it ("schema.name", "constraint on table", …).
	Object string
	// Problem says, in words, how the side door writes around the fence, and what to
	// do where Fix is empty.
	Problem string
	// Fix holds the statements that close it, in order, run after the table's own
	// fixes (they may use the guard's objects); empty when no statement can.
	Fix []string
	// Note: the database closes this door itself (its triggers fire there, and the
	// guard refuses the write), so it is no problem: schema.Check reports it in
	// TableReport.Notes and the table stays OK.
	Note bool
}

// GuardLostProblem is the problem of a SideDoorGuardLost door, in words: table was
// guarded by what under its name (evidence says so) but does not carry the triggers
// missing, which swap (the dialect's ways of swapping a table) left on the old table
// or dropped.
func GuardLostProblem(table, what, evidence, missing, swap string) string {
	return table + " was guarded by " + what + " under its name (" + evidence + ") but does not carry its trigger(s) " + missing +
		": " + swap + " left them on the old table or dropped them with it, so writes outside the wrapper are unguarded and a stale token may re-insert a deleted key" +
		"; re-run fencedsql-schema -apply (schema.Check's Fix), which installs them on " + table
}

// GuardTriggers is what a dialect whose guard triggers are named for their table
// (MySQL/MariaDB, SQLite) read about them, for the guard-lost judgement: the
// triggers named for the table that sit on it (On) and those that sit on another
// table (Elsewhere: name → that table), names folded by Fold as the dialect's server
// compares trigger names (nil: strings.ToLower; SQLite folds ASCII letters only).
type GuardTriggers struct {
	On        map[string]bool
	Elsewhere map[string]string
	Fold      func(string) string
}

// key is name as On and Elsewhere are keyed (Fold).
func (g GuardTriggers) key(name string) string {
	if g.Fold != nil {
		return g.Fold(name)
	}
	return strings.ToLower(name)
}

// LostDoor judges one guard (what: "the guard", "the tombstone guard") of table:
// the evidence that it was installed under the table's name is one of its triggers
// names sitting on another table or, failing that, a survivor (an object of the guard
// the dialect found, described by survivorObject and survivorEvidence); with the
// evidence, the table must carry every trigger of required. ok is false when there is
// no evidence or nothing is missing. swap names the dialect's ways of swapping a
// table, for the problem's words.
func (g GuardTriggers) LostDoor(table, what string, names, required []string, survivor bool, survivorObject, survivorEvidence, swap string) (SideDoor, bool) {
	var evidence []string
	for _, n := range names {
		if other, ok := g.Elsewhere[g.key(n)]; ok {
			evidence = append(evidence, "trigger "+n+" sits on "+other)
		}
	}
	object := strings.Join(evidence, ", ")
	if len(evidence) == 0 {
		if !survivor {
			return SideDoor{}, false
		}
		object, evidence = survivorObject, []string{survivorEvidence}
	}
	var missing []string
	for _, n := range required {
		if !g.On[g.key(n)] {
			missing = append(missing, n)
		}
	}
	if len(missing) == 0 {
		return SideDoor{}, false
	}
	return SideDoor{Kind: SideDoorGuardLost, Object: object,
		Problem: GuardLostProblem(table, what, strings.Join(evidence, ", "), strings.Join(missing, ", "), swap)}, true
}

// FloorPartDoor judges whether table carries the guard's row trigger guard without
// its floor trigger floor (BEFORE INSERT): half a guard — the floor trigger dropped,
// or a guard from before the floor partly re-created — whose INSERTs no floor refuses
// while RaiseTokenFloor finds the floor through the other trigger (red-team rt34b F1).
// GuardInstalledQuery calls such a guard not installed, which would leave the table
// to the wrapper alone; as a SideDoorGuardLost door the lazy check refuses it
// instead. ok is false when both triggers, or neither, sit on the table.
func (g GuardTriggers) FloorPartDoor(table, guard, floor string) (SideDoor, bool) {
	if !g.On[g.key(guard)] || g.On[g.key(floor)] {
		return SideDoor{}, false
	}
	return SideDoor{Kind: SideDoorGuardLost, Object: "trigger " + floor,
		Problem: "the guard's trigger " + guard + " is on " + table + " but its floor trigger " + floor +
			" (BEFORE INSERT) is not: INSERTs below the token floor are not refused; re-run fencedsql-schema -apply (schema.Check's Fix), which installs the whole guard on " + table}, true
}

// TombstoneKeyDoor is the SideDoorTombstoneKey door of the tombstone table tomb (as the
// catalog names it) of table: differ describes the key columns that differ ("id
// (numeric in the table, bigint in the tombstone table)"); fix, the statements that
// give the tombstone table the key as it is now — nil when the key's columns
// themselves changed, which no statement fixes (the tombstones name the old key).
// merges tells what fix does where two tombstones become one key under the new type
// or collation: true, it keeps the one with the greater token (a rebuild that copies
// them); false, it fails on the duplicate key (a conversion in place).
func TombstoneKeyDoor(tomb, table string, differ, fix []string, merges bool) SideDoor {
	door := SideDoor{Kind: SideDoorTombstoneKey, Object: tomb,
		Problem: "the tombstone table " + tomb + " does not have " + table + "'s primary key as it is now"}
	if len(differ) > 0 {
		door.Problem += " (" + strings.Join(differ, ", ") + ")"
	}
	door.Problem += ": a deleted key is recorded converted to the tombstone's key (1.5 as 2), or compared as another type, and a stale holder can insert it again"
	switch {
	case fix == nil:
		door.Problem += "; no statement converts its tombstones (the key's columns changed, or its comparison now tells apart keys a tombstone stood for): raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor: no holder whose deletion a tombstone records can write then), drop the tombstone table and re-run fencedsql-schema -apply"
		return door
	case merges:
		door.Problem += "; the fix rebuilds the tombstone table with the key as it is now (where two tombstones become one key, the greater fence_token is kept)"
	default:
		door.Problem += "; the fix converts the tombstone table's key columns (where two tombstones become one key under the new type or collation it fails on a duplicate key: keep the one with the greater fence_token, or drop the tombstone table and re-run fencedsql-schema -apply)"
	}
	door.Fix = fix
	return door
}
