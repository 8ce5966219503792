package postgres

import (
	"context"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// FloorSQLState is the SQLSTATE of the guard's refusal of a write whose token is below
// the database's token floor (dialect.FloorTable), with a message starting
// "fencedsql: token floor on <schema>.<table>:". The fenced driver maps it to
// fencedsql.ErrBelowFloor.
//
// The floor is kept twice, in the schema that was the first of the search_path when the
// guards were installed (compiled into the guard functions):
//
//   - FloorTable, one row: the floor itself, what RaiseTokenFloor raises and TokenFloor
//     reads, replicated like any table (logical replication included);
//   - the sequence fencedsql_floor_seq, its copy for the guards' fast path:
//     pg_sequence_last_value reads it without a query (about 0.5 µs against 2.5–5 µs
//     for an SPI read of the table, on every guarded INSERT and accepted UPDATE and
//     every row of a one-statement DELETE). A trigger on FloorTable,
//     fencedsql_floor_sync (ENABLE ALWAYS, so it fires in logical replication's apply
//     workers too), sets the sequence to the row's floor inside the writing
//     transaction, before it commits; setval is not rolled back, so the copy is never
//     below a committed floor — at most above it after a raise that rolled back —
//     while the trigger fires always: one that does not (ALTER TABLE … ENABLE TRIGGER
//     ALL demotes it to origin-only) is a door of the floor (guardTables), and
//     TokenFloor, RaiseTokenFloor and schema.Check fail or report a copy below the
//     floor (FloorCopiedQuery; red-team rt50a F1).
//
// A guard accepts on the fast path only a token at or above the copy; a token below it
// (or an unreadable copy: NULL) takes the slow path, which reads FloorTable and decides
// by it (floorSlowRead) — in a READ COMMITTED (or READ UNCOMMITTED) transaction.
// Under REPEATABLE READ or SERIALIZABLE the table is read as of the transaction's snapshot, which may predate a
// raise (a red-team pass: writes under the old floor went through after the raise had
// committed), so the slow path there decides by the greater of the table and the copy:
// after a raise that rolled back, such a transaction's writes between the floor and the
// copy are refused until RaiseTokenFloor runs again (any write of the floor's row sets
// the copy to it). So the copy can make a write slower, never let one through that the table
// refuses — unless it is lowered below the table, which takes the sequence owner's
// rights (setval, ALTER SEQUENCE), like lowering the table itself; the fenced driver
// refuses setval and nextval of a name with the reserved prefix. A floor table that has
// lost its row refuses every token the copy does not accept, as MariaDB's guards do
// (red-team rt24c F1: a NULL floor refused nothing); schema.Check and TokenFloor report
// it (ErrFloorLost), and RaiseTokenFloor writes it back.
const FloorSQLState = "FNCD2"

// floorSlowRead is the slow path's read of the floor into fl, a PL/pgSQL statement
// (see FloorSQLState): the table's floor, or under REPEATABLE READ and SERIALIZABLE
// the greater of the table's (as of the snapshot) and the copy (snapshotLevel: READ
// UNCOMMITTED, run as READ COMMITTED, reads the table alone; guard v7 and fence v4
// took it for a snapshot level, red-team rt58b F2).
const floorSlowRead = "fl := (SELECT f.floor FROM " + floorPlaceholder + " f WHERE f.id OPERATOR(pg_catalog.=) 1);\n" +
	"    IF " + snapshotLevel + " THEN\n" +
	"      fl := GREATEST(fl, " + floorCopy + ");\n" +
	"    END IF;"

// floorSlowReadBefore is floorSlowRead as guard v7 wrote it (READ UNCOMMITTED taken
// for a snapshot level), which the guard-writer check still recognises (ownGuardTextSQL).
var floorSlowReadBefore = strings.Replace(floorSlowRead, snapshotLevel, snapshotLevelBefore("OPERATOR(pg_catalog.<>)"), 1)

// floorShown is the floor a refusal names: the slow path's fl, or "missing" when the
// floor table has lost its row — which refuses every token the copy does not accept,
// as MariaDB's guards do (red-team rt24c F1: a NULL floor refused nothing).
const floorShown = "COALESCE(fl::pg_catalog.text, 'missing (the floor table has no row)')"

const (
	// floorSeq is the guards' copy of the floor (see FloorSQLState).
	floorSeq = dialect.FloorTable + "_seq"
	// floorSyncTrigger keeps floorSeq equal to FloorTable's row; it is also the name of
	// its function.
	floorSyncTrigger = dialect.FloorTable + "_sync"
)

// floorSyncVersion marks the body of this version of the sync function (it acts only
// as the floor table's own trigger, and EXECUTE on it is revoked from PUBLIC);
// GuardInstalledQuery reports a guard whose floor has an older one as not installed,
// and its Fix (GuardDDL, which runs FloorDDL) installs this one.
const floorSyncVersion = "fencedsql floor sync v2"

// FloorDDL creates the floor table with its one row (floor 0) and the guards' copy of it
// (the sequence and the trigger that keeps it) when missing: readable by every role (the
// guard functions run as the writing role), written by its owner only. Running it again
// changes nothing but re-copies the floor into the sequence (a no-op UPDATE of the row:
// the trigger copies under the row lock, so a concurrent raise cannot be overwritten by
// an older value). No statement drops anything: a raise running beside it always finds
// the trigger.
//
// The sync function is SECURITY DEFINER (setval needs the sequence owner's rights): no
// role but its owner may EXECUTE it — EXECUTE is checked when a trigger is created, so
// no other role can attach it to a relation of its own —, and it refuses to act unless
// it fires as the trigger fencedsql_floor_sync (AFTER INSERT OR UPDATE, FOR EACH ROW)
// of the floor table of its own schema, so that the copy it writes is always the floor
// table's row (a red-team pass: an application role that owned another table in the
// schema attached the function to it and set the copy to 0, and stale tokens went
// through the guards' fast path). Both are re-applied on every run, as is the
// sequence's and the table's REVOKE.
func (dialectImpl) FloorDDL() []string {
	syncBody := floorSyncBody()
	tag := dollarTag(syncBody)
	fn := floorSyncTrigger + "()"
	create := "CREATE TRIGGER " + floorSyncTrigger + " AFTER INSERT OR UPDATE ON " + dialect.FloorTable + " FOR EACH ROW EXECUTE FUNCTION " + fn
	createTag := dollarTag(create)
	return []string{
		floorLock,
		"CREATE TABLE IF NOT EXISTS " + dialect.FloorTable + " (id integer PRIMARY KEY CHECK (id = 1), floor bigint NOT NULL CHECK (floor >= 0))",
		"REVOKE ALL ON " + dialect.FloorTable + " FROM PUBLIC",
		"GRANT SELECT ON " + dialect.FloorTable + " TO PUBLIC",
		"CREATE SEQUENCE IF NOT EXISTS " + floorSeq + " MINVALUE 0 START WITH 0",
		// A copy another role owns could be set below the floor by it (setval): the
		// guards' fast path reads it (red-team rt26a F2).
		"DO $fencedsql$ BEGIN IF (SELECT relowner FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) '" + floorSeq + "'::pg_catalog.regclass) OPERATOR(pg_catalog.<>) " +
			"(SELECT relowner FROM pg_catalog.pg_class WHERE oid OPERATOR(pg_catalog.=) '" + dialect.FloorTable + "'::pg_catalog.regclass) THEN " +
			"RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege', MESSAGE = 'fencedsql: the token floor''s copy " + floorSeq + " is owned by another role than the floor table " + dialect.FloorTable + ": drop it (it is re-created) or hand it to the floor''s owner'; END IF; END $fencedsql$",
		"REVOKE ALL ON SEQUENCE " + floorSeq + " FROM PUBLIC",
		"GRANT SELECT ON SEQUENCE " + floorSeq + " TO PUBLIC",
		withFloorTable("CREATE OR REPLACE FUNCTION " + fn + " RETURNS trigger LANGUAGE plpgsql SECURITY DEFINER SET search_path = pg_catalog, pg_temp AS " + tag + syncBody + tag),
		"REVOKE ALL ON FUNCTION " + fn + " FROM PUBLIC",
		"DO " + createTag + " BEGIN IF NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger WHERE tgrelid = '" + dialect.FloorTable + "'::pg_catalog.regclass AND tgname = '" + floorSyncTrigger + "') THEN " +
			"EXECUTE " + pgLiteral(create) + "; END IF; END " + createTag,
		"ALTER TABLE " + dialect.FloorTable + " ENABLE ALWAYS TRIGGER " + floorSyncTrigger,
		initialFloor(),
		"UPDATE " + dialect.FloorTable + " SET floor = floor WHERE id = 1",
	}
}

// floorLock is the transaction-level advisory lock that an installation of the floor
// (FloorDDL, first) and a raise (FloorRaiseLock) both take: neither overlaps the other
// (dialect.FloorInstallLocker; red-team rt20t: a floor table installed in another
// schema while a raise ran started at the old floor, and the raise did not see the
// guards reading it). The key is a constant of this package ("fencedsq" in ASCII).
const floorLock = "SELECT pg_catalog.pg_advisory_xact_lock(7378424937698325361)"

// FloorRaiseLock returns the statements a raise runs first in its transaction
// (dialect.FloorInstallLocker): READ COMMITTED, so that its list of the guards' floors,
// read after the wait, sees an installation that committed during it, and floorLock.
func (dialectImpl) FloorRaiseLock() []string {
	return []string{"SET TRANSACTION ISOLATION LEVEL READ COMMITTED", floorLock}
}

// initialFloor gives a floor table its row, or raises the one it has, to the highest
// floor of the database: its own copy in the sequence (a row lost and written back by
// an installation starts where it was, red-team rt25a F1) and every other floor
// table's, each the greater of the table's row and its copy, which is read outside the
// transaction's snapshot (an installation under REPEATABLE READ whose snapshot
// predates a raise it waited for reads the raised copy). An existing row below that is
// raised: a floor table no guard read while a raise ran (left by removed guards) is
// adopted at the floor in force, not at its own (rt25a F3). Only the installing role's
// own floor tables count (another role's decoy at 2^63 would block every write, rt26a
// F1), and only plain tables without row security whose floor column is a bigint are
// read (floorTableReadable): no other role's code runs with the installer's rights (rt25a
// F0). Guards installed through a session whose search_path
// starts with another schema than the first installer's read a floor table of their
// own (withFloorTable); starting it at 0 would let every lease refused since the last
// raise write again through them (tokens going back), until the next raise, which
// raises every floor the guards read (RaiseTokenFloor). An existing row is kept.
// Reading another schema's floor needs USAGE on it (the tables are readable by every
// role): without it the install fails rather than start lower.
func initialFloor() string {
	body := `
DECLARE
  m bigint := 0;
  v bigint;
  s text;
BEGIN
  -- The table's own copy: a row lost and written back here starts where it was.
  m := GREATEST(m, COALESCE(pg_catalog.pg_sequence_last_value('` + floorSeq + `'::pg_catalog.regclass), 0));
  FOR s IN SELECT pg_catalog.quote_ident(n.nspname) FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
      WHERE c.relname OPERATOR(pg_catalog.=) '` + dialect.FloorTable + `' AND c.relkind OPERATOR(pg_catalog.=) 'r' AND n.nspname NOT LIKE 'pg\_temp\_%'
      AND c.oid OPERATOR(pg_catalog.<>) '` + dialect.FloorTable + `'::pg_catalog.regclass` + floorTableReadable("c") + `
      AND c.relowner OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER) LOOP
    EXECUTE 'SELECT pg_catalog.max(floor) FROM ' OPERATOR(pg_catalog.||) s OPERATOR(pg_catalog.||) '.` + dialect.FloorTable + `' INTO v;
    m := GREATEST(m, COALESCE(v, 0));
    IF pg_catalog.to_regclass(s OPERATOR(pg_catalog.||) '.` + floorSeq + `') IS NOT NULL THEN
      m := GREATEST(m, COALESCE(pg_catalog.pg_sequence_last_value((s OPERATOR(pg_catalog.||) '.` + floorSeq + `')::pg_catalog.regclass), 0));
    END IF;
  END LOOP;
  INSERT INTO ` + dialect.FloorTable + ` AS f (id, floor) VALUES (1, m) ON CONFLICT (id) DO UPDATE SET floor = GREATEST(f.floor, EXCLUDED.floor);
END
`
	tag := dollarTag(body)
	return "DO " + tag + body + tag
}

// RaiseFloorQuery sets table's floor when it is lower, and writes the row in any case
// (a lower floor is kept): the sync trigger then re-copies the floor into the sequence,
// so a raise also puts back a copy left above the floor by a raise that rolled back.
func (d dialectImpl) RaiseFloorQuery(table dialect.TableName, floor int64) (query string, args []any) {
	// A lost row comes back at no less than its copy, the floor the guards last read
	// (red-team rt25a F2: a raise to 10 over a lost row of 50 lowered the floor).
	seq := pgLiteral(dialect.TableName{Schema: table.Schema, Name: floorSeq}.Quote(d.QuoteIdent))
	return "INSERT INTO " + table.Quote(d.QuoteIdent) + " AS f (id, floor) VALUES (1, GREATEST($1::pg_catalog.int8, COALESCE(pg_catalog.pg_sequence_last_value(" + seq + "::pg_catalog.regclass), 0))) " +
		"ON CONFLICT (id) DO UPDATE SET floor = GREATEST(f.floor, $1::pg_catalog.int8)", []any{floor}
}

// floorTableSafe is the condition, on the pg_class row alias c, that a floor table is
// one the floor tools may use and the guards may trust: guardTableSafe with the floor
// column and the sync trigger — a plain table without row security (a policy's
// function would run with the reader's rights, and hide the row: red-team rt25a F0,
// an application role's decoy floor table with a policy lowered the real floor when
// the owner read it) whose floor column is a NOT NULL bigint, with no foreign key (a
// cascade from an ordinary table lowered the floor through the pool: rt27c F4), no
// trigger but its sync trigger, no rule and no parent. The side-door check
// (guardTables) judges the floor the table's guards read by the same condition.
func floorTableSafe(c string) string {
	return guardTableSafe(c, "'floor'", "'"+floorSyncTrigger+"'")
}

// floorTableReadable is the part of floorTableSafe that says a floor table can be read
// by its owner without running another role's code (no row security) and holds a
// bigint floor: an installation adopts the highest floor of the installer's other
// floor tables that pass it (initialFloor) — a floor carrying a foreign key or a
// trigger is reported (guardTables) and still counts there, so that an installation
// never starts lower for it.
func floorTableReadable(c string) string {
	return " AND NOT " + c + ".relrowsecurity AND EXISTS (SELECT 1 FROM pg_catalog.pg_attribute a WHERE a.attrelid OPERATOR(pg_catalog.=) " + c + ".oid AND a.attname OPERATOR(pg_catalog.=) 'floor' AND a.atttypid OPERATOR(pg_catalog.=) 'pg_catalog.int8'::pg_catalog.regtype)"
}

// GuardFloorsQuery lists the schemas of the floor tables the guard functions of the
// database's enabled guard triggers read: each function names its floor table with the
// installer's schema, quoted by quote_ident (withFloorTable) in its one read of the
// table, "FROM <schema>.fencedsql_floor f WHERE" (floorSlowRead); the query takes the
// schema from there and unquotes it. Every schema of the database is in scope.
//
// Only the triggers of a guard function of this library's naming whose text carries a
// guard version's marker count (an application role's trigger merely named
// fencedsql_guard made every raise fail, red-team rt25a F8). Two more columns say what
// the floor tools may do with each as the role running them
// (dialect.FloorFinder): read it — the floor as the guards created it (floorTableSafe:
// a plain table without row security whose floor is a NOT NULL bigint, with no foreign
// key, rule or trigger but the sync trigger; the side-door check judges it by the same
// condition, red-team rt27c F4) — and write it — that, and owned by the running role itself,
// so that no trigger, policy or constraint another role put on it runs with the
// raiser's rights (red-team rt25a F0).
func (dialectImpl) GuardFloorsQuery() (query string, args []any) {
	seqOwned := ` AND EXISTS (SELECT 1 FROM pg_catalog.pg_class q WHERE q.relnamespace OPERATOR(pg_catalog.=) c.relnamespace AND q.relname OPERATOR(pg_catalog.=) '` + floorSeq + `' AND q.relkind OPERATOR(pg_catalog.=) 'S' AND q.relowner OPERATOR(pg_catalog.=) c.relowner)`
	// Writable: the running role owns the table, or is a member of its owner (a
	// superuser is) and the table carries no trigger but the sync trigger and no rule —
	// nothing another role wrote runs with the raiser's rights.
	writable := ` AND (c.relowner OPERATOR(pg_catalog.=) (SELECT r.oid FROM pg_catalog.pg_roles r WHERE r.rolname OPERATOR(pg_catalog.=) CURRENT_USER)
    OR pg_catalog.pg_has_role(c.relowner, 'MEMBER') AND NOT c.relhasrules
      AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger g WHERE g.tgrelid OPERATOR(pg_catalog.=) c.oid AND g.tgname OPERATOR(pg_catalog.<>) '` + floorSyncTrigger + `'))`
	return `SELECT x.nsp, 1, COALESCE(bool_or(true` + floorTableSafe("c") + seqOwned + `), false), COALESCE(bool_or(true` + floorTableSafe("c") + seqOwned + writable + `), false)
FROM (SELECT DISTINCT ` + floorSchemaOfRead + ` AS nsp
  FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid,
    LATERAL (SELECT pg_catalog.substring(p.prosrc, $3) AS q) s
  WHERE t.tgname IN ($1, $2) AND (t.tgenabled OPERATOR(pg_catalog.=) 'O' OR t.tgenabled OPERATOR(pg_catalog.=) 'A') AND s.q IS NOT NULL
    AND p.proname LIKE 'fencedsql\_guard\_%' AND p.prosrc LIKE $4) x
  LEFT JOIN pg_catalog.pg_namespace n ON n.nspname OPERATOR(pg_catalog.=) x.nsp
  LEFT JOIN pg_catalog.pg_class c ON c.relnamespace OPERATOR(pg_catalog.=) n.oid AND c.relname OPERATOR(pg_catalog.=) '` + dialect.FloorTable + `' AND c.relkind OPERATOR(pg_catalog.=) 'r'
GROUP BY x.nsp ORDER BY 1`,
		[]any{guardTrigger, guardDeleteTrigger, floorReadPattern, "%" + guardMarker + "%"}
}

// floorReadPattern is the regular expression whose first group is the schema (as
// quote_ident spells it) of the floor table in a guard function's read of it
// (floorSlowRead, named by withFloorTable).
const floorReadPattern = `FROM ("(?:[^"]|"")+"|[a-z_][a-z0-9_]*)\.` + dialect.FloorTable + ` f WHERE`

// floorSchemaOfRead unquotes s.q, a schema name as quote_ident spells it.
const floorSchemaOfRead = `CASE WHEN pg_catalog.left(s.q, 1) OPERATOR(pg_catalog.=) '"'
    THEN pg_catalog.replace(pg_catalog.substr(s.q, 2, pg_catalog.length(s.q) OPERATOR(pg_catalog.-) 2), '""', '"') ELSE s.q END`

// floorSchema returns the schema of the token floor table that table's guard
// functions read: the one their body names (withFloorTable: the installer's schema),
// whatever the session's search_path. Without such a guard (not installed yet, or one
// that names no floor), the schema where the session finds a floor table; "" when
// there is none. The UNLOGGED lint and the floor's privilege check look the floor up
// there: looked up by its bare name, a floor in a schema off the application's
// search_path went unchecked (a red-team pass: an UNLOGGED floor passed the lint).
func (dialectImpl) floorSchema(ctx context.Context, query dialect.CatalogQuery, table dialect.TableName) (string, error) {
	rows, err := query(ctx, "SELECT "+floorSchemaSQL(1), floorSchemaArgs(table)...)
	if err != nil || len(rows) == 0 || len(rows[0]) == 0 {
		return "", err
	}
	return rows[0][0], nil
}

// floorSchemaSQL is floorSchema's expression (text, "" when there is no floor), its
// parameters numbered from $n: floorSchemaArgs, in that order. Other catalog queries
// embed it to find the floor with no query of their own.
func floorSchemaSQL(n int) string {
	p := func(i int) string { return "$" + strconv.Itoa(n+i-1) }
	return `COALESCE((SELECT ` + floorSchemaOfRead + `
  FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid,
    LATERAL (SELECT pg_catalog.substring(p.prosrc, ` + p(4) + `) AS q) s
  WHERE t.tgrelid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(` + p(1) + `) AND t.tgname IN (` + p(2) + `, ` + p(3) + `) AND s.q IS NOT NULL
  ORDER BY t.tgname LIMIT 1),
 (SELECT n.nspname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
  WHERE c.oid OPERATOR(pg_catalog.=) pg_catalog.to_regclass(` + p(5) + `)), '')`
}

// floorSchemaArgs are floorSchemaSQL's five parameters for table.
func floorSchemaArgs(table dialect.TableName) []any {
	return []any{regclass(table), guardTrigger, guardDeleteTrigger, floorReadPattern, dialect.FloorTable}
}

var (
	_ dialect.Floorer            = dialectImpl{}
	_ dialect.FloorFinder        = dialectImpl{}
	_ dialect.FloorInstallLocker = dialectImpl{}
)

// OpenTransactionsQuery lists the other transactions that hold RowExclusiveLock (the
// lock every INSERT, UPDATE, DELETE, MERGE and COPY FROM takes, held to the
// transaction's end) on a table a guard trigger of this version's naming fires on, in
// this database — prepared (two-phase) transactions included, whose locks no session
// holds — with their session's process id ("prepared" for those)
// (dialect.FloorSettler): the guards read the floor's copy without a lock, so
// RaiseTokenFloor waits for these to end before it returns (red-team rt20t F1: a
// transaction that wrote under token 8 before a raise to 10 committed after it). A
// statement takes that lock before its guard reads the floor, so one in flight at the
// raise is among them. Not waited for: a transaction that has only read (a REPEATABLE
// READ snapshot taken before the raise: its later writes read the raised floor, the
// copy being a sequence read outside the snapshot), and other lock modes that write
// nothing through the guard (LOCK TABLE … IN SHARE MODE, VACUUM, CREATE INDEX:
// red-team rt21b F4).
func (dialectImpl) OpenTransactionsQuery() string {
	return `SELECT DISTINCT l.virtualtransaction, COALESCE(l.pid::pg_catalog.text, 'prepared') FROM pg_catalog.pg_locks l
WHERE l.locktype OPERATOR(pg_catalog.=) 'relation' AND l.granted AND l.pid IS DISTINCT FROM pg_catalog.pg_backend_pid()
  AND l.database OPERATOR(pg_catalog.=) (SELECT d.oid FROM pg_catalog.pg_database d WHERE d.datname OPERATOR(pg_catalog.=) pg_catalog.current_database())
  AND l.mode OPERATOR(pg_catalog.=) 'RowExclusiveLock'
  AND l.relation OPERATOR(pg_catalog.=) ANY (SELECT t.tgrelid FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) t.tgfoid
    WHERE t.tgname OPERATOR(pg_catalog.=) '` + guardTrigger + `' AND p.proname OPERATOR(pg_catalog.~~) 'fencedsql\_guard\_%')`
}

// StillOpenQuery yields those of the transactions in $1 (their virtual transaction
// ids, joined with commas) still open — holding any lock, as every transaction holds
// its own until it ends — with the session's process id.
func (dialectImpl) StillOpenQuery() string {
	return `SELECT DISTINCT l.virtualtransaction, COALESCE(l.pid::pg_catalog.text, 'prepared') FROM pg_catalog.pg_locks l
WHERE l.virtualtransaction OPERATOR(pg_catalog.=) ANY (pg_catalog.string_to_array($1, ','))`
}

var _ dialect.FloorSettler = dialectImpl{}

// WritablePrimaryQuery yields true when the server is not in recovery and the
// session's transactions are not read-only by default (default_transaction_read_only,
// from ALTER SYSTEM, the database or the role: how a primary is made read-only for a
// switch-over, red-team rt50c F5): a standby, and such a server, refuse the raise's
// write with an untyped error (25006); dialect.PrimaryChecker makes it ErrNotPrimary.
// A logical-replication subscriber is neither: ReplicationConfigured sees it.
func (dialectImpl) WritablePrimaryQuery() string {
	return "SELECT " + writablePrimary
}

// writablePrimary is WritablePrimaryQuery's test, which the session check reads too
// (syncCommitColumns: a guarded write on such a server is refused with ErrNotPrimary,
// not the server's 25006, red-team rt52a F4).
const writablePrimary = "NOT pg_catalog.pg_is_in_recovery() AND NOT pg_catalog.current_setting('default_transaction_read_only')::pg_catalog.bool"

var _ dialect.PrimaryChecker = dialectImpl{}

// RaiseSessionQuery sets synchronous_commit to on for the raise's transaction alone
// (dialect.ReplicatedRaiser, red-team rt42f F3), as sqllock's grants do: a role,
// database or DSN default of local, off or remote_write would acknowledge the raise
// before the synchronous standby has flushed it, and a failover to that standby (or a
// crash restart, under off) would forget it. The commit then waits for the synchronous
// standbys, when any are configured. It yields the empty text: no PostgreSQL session
// setting keeps a committed transaction out of physical replication.
func (dialectImpl) RaiseSessionQuery() string {
	return "SELECT pg_catalog.left(pg_catalog.set_config('synchronous_commit', 'on', true), 0)"
}

var _ dialect.ReplicatedRaiser = dialectImpl{}

// FloorCopiedQuery yields 1 when table's copy (the sequence its sync trigger sets) is
// at or above its floor (dialect.FloorCopier): with the trigger disabled, a raise wrote
// the table but not the copy, and the guards' fast path accepted tokens below the
// raised floor (red-team rt25a F6).
func (d dialectImpl) FloorCopiedQuery(table dialect.TableName) (string, []any) {
	seq := dialect.TableName{Schema: table.Schema, Name: floorSeq}.Quote(d.QuoteIdent)
	return "SELECT COALESCE(pg_catalog.pg_sequence_last_value($1::pg_catalog.regclass), -1) OPERATOR(pg_catalog.>=) (SELECT f.floor FROM " + table.Quote(d.QuoteIdent) + " f WHERE f.id OPERATOR(pg_catalog.=) 1)", []any{seq}
}

var _ dialect.FloorCopier = dialectImpl{}

// floorSyncBody is the body of the floor's sync function as FloorDDL writes it, with
// floorSeqPlaceholder for the copy's qualified name (otherTriggers compares another
// schema's sync function with it, placeholders replaced by that schema's names).
func floorSyncBody() string {
	return `
-- ` + floorSyncVersion + `
BEGIN
  IF TG_TABLE_NAME IS DISTINCT FROM '` + dialect.FloorTable + `' OR TG_NAME IS DISTINCT FROM '` + floorSyncTrigger + `'
      OR TG_WHEN IS DISTINCT FROM 'AFTER' OR TG_LEVEL IS DISTINCT FROM 'ROW' OR TG_OP NOT IN ('INSERT', 'UPDATE')
      OR TG_TABLE_SCHEMA IS DISTINCT FROM (SELECT n.nspname FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
        WHERE c.oid = ` + floorSeqPlaceholder + `::pg_catalog.regclass) THEN
    RAISE EXCEPTION USING ERRCODE = 'insufficient_privilege',
      MESSAGE = 'fencedsql: ` + floorSyncTrigger + `() fires only as the trigger ` + floorSyncTrigger + ` of the token floor table ` + dialect.FloorTable + ` of its own schema';
  END IF;
  PERFORM pg_catalog.setval(` + floorSeqPlaceholder + `::pg_catalog.regclass, NEW.floor, true);
  RETURN NULL;
END
`
}

// UnflooredQuery lists table (every table of its name when unqualified:
// relativeRoots) and its partitions and inheritance children, at every level, that
// carry no floor-reading guard trigger (flooredRel) (dialect.FloorCoverageFinder).
// An inheritance child created after the guard's installation is listed: a parent's
// row triggers do not fire for its rows, so a stale write through the parent stored a
// token below the floor there (red-team rt34b F1). It reads pg_trigger and pg_proc
// only, so the answer does not depend on the session's search_path.
func (dialectImpl) UnflooredQuery(table dialect.TableName) (query string, args []any) {
	return `WITH RECURSIVE r(oid) AS (` + relativeRoots(table) + `),
t(oid) AS (
  SELECT r.oid FROM r WHERE r.oid IS NOT NULL
  UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN t ON i.inhparent OPERATOR(pg_catalog.=) t.oid)
SELECT n.nspname::text, c.relname::text FROM t JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) t.oid JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE c.relkind IN ('r', 'p', 'f') AND NOT ` + flooredRel("c.oid") + `
ORDER BY 1, 2`, []any{regclass(table), guardTrigger, "%" + guardMarker + "%", floorReadPattern}
}

// flooredRel is the condition, on the relation whose oid is rel, that it carries an
// enabled row trigger fencedsql_guard (BEFORE INSERT OR UPDATE, no WHEN, no column
// list) calling a guard function that reads a token floor, judged as GuardFloorsQuery
// judges one ($2 guardTrigger, $3 the guard's marker, $4 floorReadPattern).
func flooredRel(rel string) string {
	return `EXISTS (
  SELECT 1 FROM pg_catalog.pg_trigger g JOIN pg_catalog.pg_proc p ON p.oid OPERATOR(pg_catalog.=) g.tgfoid
  WHERE g.tgrelid OPERATOR(pg_catalog.=) ` + rel + ` AND g.tgname OPERATOR(pg_catalog.=) $2 AND (g.tgenabled OPERATOR(pg_catalog.=) 'O' OR g.tgenabled OPERATOR(pg_catalog.=) 'A')
    AND g.tgtype OPERATOR(pg_catalog.=) 23 AND g.tgqual IS NULL AND pg_catalog.cardinality(g.tgattr::pg_catalog.int2[]) OPERATOR(pg_catalog.=) 0
    AND p.proname LIKE 'fencedsql\_guard\_%' AND p.prosrc LIKE $3 AND pg_catalog.substring(p.prosrc, $4) IS NOT NULL)`
}

// unflooredRelatives finds the relatives of a guarded table that its guard leaves
// unfloored (a door a statement through the pool opens, in TriggerDoors): the table
// (every table of its name when unqualified) or a partition or inheritance child of
// it, at any level, that carries no floor-reading guard trigger (flooredRel) while an
// ancestor of it does — an inheritance child created after the guard (a parent's row
// triggers do not fire for its rows), a partition whose cloned trigger was disabled.
// A write through the guarded parent (or naming the child, which a pool guards with
// the parent's columns) stored a token below the floor in the child's rows, with
// RaiseTokenFloor reporting the floor in force (red-team rt34b F1). A table whose
// ancestors carry no guard either (fenced by the wrapper alone) is no door here. Fix:
// schema.Check's side door for the child installs the guard's triggers on it.
func (d dialectImpl) unflooredRelatives(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `WITH RECURSIVE r(oid) AS (`+relativeRoots(t.Table)+`),
t(oid) AS (
  SELECT r.oid FROM r WHERE r.oid IS NOT NULL
  UNION SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN t ON i.inhparent OPERATOR(pg_catalog.=) t.oid),
a(oid, anc) AS (
  SELECT t.oid, i.inhparent FROM t JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) t.oid
  UNION SELECT a.oid, i.inhparent FROM a JOIN pg_catalog.pg_inherits i ON i.inhrelid OPERATOR(pg_catalog.=) a.anc)
SELECT DISTINCT n.nspname::text, c.relname::text, CASE WHEN c.relispartition THEN 1 ELSE 0 END
FROM a JOIN pg_catalog.pg_class c ON c.oid OPERATOR(pg_catalog.=) a.oid JOIN pg_catalog.pg_namespace n ON n.oid OPERATOR(pg_catalog.=) c.relnamespace
WHERE c.relkind IN ('r', 'p', 'f') AND NOT `+flooredRel("c.oid")+` AND `+flooredRel("a.anc")+`
ORDER BY 1, 2`, regclass(t.Table), guardTrigger, "%"+guardMarker+"%", floorReadPattern)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 3 {
			continue
		}
		rel := dialect.CatalogName(r[0], r[1])
		sd := dialect.SideDoor{Kind: dialect.SideDoorChild, Object: rel.String(),
			Problem: "inheritance child of a guarded table without the guard's trigger " + guardTrigger + " reading the token floor: the parent's row triggers do not fire for its rows, so a write through " + t.Table.String() + " (or naming it) stores a token below the floor there; install the guard's triggers on it (schema.Check's side door Fix, fencedsql-schema -apply)"}
		if r[2] == "1" {
			sd.Kind = dialect.SideDoorPartition
			sd.Problem = "partition of a guarded table whose guard trigger " + guardTrigger + " reading the token floor is disabled or missing: a write through " + t.Table.String() + " (or naming it) stores a token below the floor there; enable or install it (schema.Check's side door Fix, fencedsql-schema -apply)"
		}
		doors = append(doors, sd)
	}
	return doors, nil
}

var _ dialect.FloorCoverageFinder = dialectImpl{}
