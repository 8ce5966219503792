package mysql

import (
	"errors"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// FloorSQLState is the SQLSTATE of the guard's refusal of a write whose token is below
// the token floor (dialect.FloorTable), error 1644 with a message starting
// "fencedsql: token floor on <table>:". The fenced driver maps it to
// fencedsql.ErrBelowFloor.
//
// The floor table lives in each database that holds a guarded table (the guard's
// triggers read it unqualified, which in a trigger means the trigger's database):
// GuardDDL creates it there, and RaiseTokenFloor raises it in the connection's
// database when guard triggers there read it (GuardFloorsQuery), and in every other
// database a table of the connection's registry is qualified with (shop.accounts
// registered in home: red-team rt37c F3) — run it with the application's DSN, once per
// database whose registry lists guarded tables, or with a DSN that names no database
// to raise it in every database whose guard triggers the account can see. A
// registered table whose database's guards the account cannot see is named
// (schema.ErrFloorUncovered), not taken for covered. The guard's BEFORE
// UPDATE trigger reads it for every UPDATE it accepts; a second trigger,
// fencedsql_floor_<table>, BEFORE INSERT, for every INSERT (an INSERT … ON DUPLICATE
// KEY UPDATE and a REPLACE insert first, so both pass it). A floor table that has lost
// its row refuses every write, the one-statement DELETE's included (red-team rt22b F3,
// rt24c F2), until RaiseTokenFloor writes it back; schema.Check and TokenFloor report
// it (ErrFloorLost).
const FloorSQLState = "FNCD2"

func floorTable(schema string) dialect.TableName {
	return dialect.TableName{Schema: schema, Name: dialect.FloorTable}
}

// floorDDL creates the floor table with its one row in schema ("" for the connection's
// database). The triggers run with their definer's rights: no grant is needed.
//
// The row is written only where no guard reads the floor yet, and at the floor of the
// connection's database (0 where it has none yet): a table of another database guarded
// through the application's connection (shop.accounts registered in home) belongs to
// home's application since rt37c F3 — home's raise raises shop's floor — so a floor
// table created for it after home's floor was raised must not start at 0, which let
// every lease refused since the raise write shop.accounts (red-team rt42c F1; a
// PostgreSQL floor table created when others exist starts at the highest floor
// likewise). So a schema-qualified installation first creates the connection
// database's own floor table (as GuardDDL on a table of it would), to read it: a
// qualified table's guard needs a connection with a current database.
func (d dialectImpl) floorDDL(schema string) []string {
	t := floorTable(schema).Quote(d.QuoteIdent)
	var ddl []string
	seed := "0"
	if schema != "" {
		ddl = d.floorDDL("")
		seed = "COALESCE((SELECT MAX(h.floor) FROM " + d.QuoteIdent(dialect.FloorTable) + " h), 0)"
	}
	return append(ddl,
		"CREATE TABLE IF NOT EXISTS "+t+" (id INT NOT NULL PRIMARY KEY, floor BIGINT NOT NULL, CONSTRAINT fencedsql_floor_one_row CHECK (id = 1), CONSTRAINT fencedsql_floor_not_negative CHECK (floor >= 0)) ENGINE=InnoDB",
		// The row only where no guard reads the floor yet: a row lost under guards stays
		// lost (every write refused, ErrFloorLost reported) until a raise writes it back
		// at the lock service's token — an installation writing 0 lowered the floor
		// (red-team rt25a F1).
		"INSERT IGNORE INTO "+t+" (id, floor) SELECT 1, "+seed+" FROM DUAL WHERE NOT EXISTS (SELECT 1 FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = "+schemaOf(schema)+" AND "+exactDatabase("TRIGGER_SCHEMA", schema)+
			" AND (TRIGGER_NAME LIKE 'fencedsql\\_guard\\_%' OR TRIGGER_NAME LIKE 'fencedsql\\_floor\\_%') AND ACTION_STATEMENT LIKE '%FROM "+dialect.FloorTable+" f WHERE%')",
	)
}

// schemaOf is the SQL of schema's name ("" for the connection's database).
func schemaOf(schema string) string {
	if schema == "" {
		return "DATABASE()"
	}
	return literal(schema)
}

// FloorDDL creates the floor table in the connection's database.
func (d dialectImpl) FloorDDL() []string { return d.floorDDL("") }

// RaiseFloorQuery sets table's floor when it is lower (writing the row when missing).
func (d dialectImpl) RaiseFloorQuery(table dialect.TableName, floor int64) (string, []any) {
	return "INSERT INTO " + table.Quote(d.QuoteIdent) + " (id, floor) VALUES (1, ?) ON DUPLICATE KEY UPDATE floor = GREATEST(floor, ?)", []any{floor, floor}
}

// GuardFloorsQuery lists the databases whose guard triggers (the BEFORE UPDATE guard,
// the BEFORE INSERT floor trigger) read the floor: a trigger names it unqualified
// (floorBelow), which is the floor table of the trigger's own database. In scope: the
// connection's database, or every database listed when it names none.
//
// Its two more columns (dialect.FloorFinder) say whether the tools may read and write
// the floor: only one guardTableSafe accepts — a base table (a view of that name, an
// SQL SECURITY INVOKER view over a function, would run another account's code with
// the operator's rights when TokenFloor or a raise reads it: red-team rt25a F0) whose
// floor is BIGINT NOT NULL (a FLOAT stored a raise to 16777217 as 16777216, and
// TokenFloor failed on it with a raw Scan error), carrying no trigger (one that kept
// NEW.floor = OLD.floor made every raise a no-op) and no foreign key (a cascade from
// an ordinary table lowered it): rt27c F2, F4, F5. The tools refuse another with
// ErrFloorUnsafe; schema.Check and the lazy check report it (guardTables).
func (dialectImpl) GuardFloorsQuery() (string, []any) {
	// The condition once per database (not per guard trigger).
	safe := "IF(" + guardTableSafe("fl.db", "'"+dialect.FloorTable+"'", "'floor'") + ", 1, 0)"
	return "SELECT fl.db, fl.in_scope, " + safe + ", " + safe + " FROM (SELECT MIN(tr.TRIGGER_SCHEMA) AS db, MAX(IF(DATABASE() IS NULL OR tr.TRIGGER_SCHEMA = DATABASE() AND " + exactDatabase("tr.TRIGGER_SCHEMA", "") + ", 1, 0)) AS in_scope FROM information_schema.TRIGGERS tr" +
			" WHERE (tr.TRIGGER_NAME LIKE ? OR tr.TRIGGER_NAME LIKE ?) AND tr.ACTION_STATEMENT LIKE ? GROUP BY CAST(tr.TRIGGER_SCHEMA AS BINARY)) fl ORDER BY fl.db",
		[]any{"fencedsql_guard_%", "fencedsql_floor_%", "%FROM " + dialect.FloorTable + " f WHERE%"}
}

// OutdatedFloorReadersQuery lists the guard triggers in scope (as GuardFloorsQuery
// scopes them) that read the floor without floorRead's lock (dialect.FloorLockReader):
// a guard of an earlier version, which a raise does not wait for (red-team rt22b F2).
func (dialectImpl) OutdatedFloorReadersQuery() (string, []any) {
	return "SELECT TRIGGER_SCHEMA, TRIGGER_NAME FROM information_schema.TRIGGERS" +
			" WHERE (TRIGGER_NAME LIKE ? OR TRIGGER_NAME LIKE ?) AND ACTION_STATEMENT LIKE ? AND ACTION_STATEMENT NOT LIKE ?" +
			" AND (DATABASE() IS NULL OR TRIGGER_SCHEMA = DATABASE() AND " + exactDatabase("TRIGGER_SCHEMA", "") + ") ORDER BY TRIGGER_SCHEMA, TRIGGER_NAME",
		[]any{"fencedsql_guard_%", "fencedsql_floor_%", "%FROM " + dialect.FloorTable + " f WHERE%", "%" + floorRead + "%"}
}

// floorTrigger is the name of table's BEFORE INSERT floor trigger.
func floorTrigger(name string) string { return boundedTrigger("fencedsql_floor_", name) }

// floorBelow is the condition "the new row's token is below the floor". The floor is
// read with a shared lock, held to the end of the writing transaction, under every
// isolation level (a plain subquery is a consistent, lockless read under READ
// COMMITTED): RaiseTokenFloor's UPDATE of the row waits for every open transaction
// that judged a write under the old floor, so that none commits after the raise
// returned (red-team rt20t F1; REPEATABLE READ already locked).
func floorBelow(tok string) string {
	// NOT COALESCE(>=, FALSE): a floor table without its row (deleted by its owner) refuses every
	// write until a raise writes the row back, instead of reading as no floor; under
	// READ COMMITTED no lock would stand for the missing row (red-team rt22b F3).
	return "NOT COALESCE(NEW." + tok + " >= (" + floorRead + "), FALSE)"
}

// floorRead reads the floor with a shared lock (floorBelow). GuardInstalledQuery
// requires it in both guard triggers: a guard of an earlier version, which read the
// floor without the lock, is reported as not installed, and its Fix replaces it.
const floorRead = "SELECT f.floor FROM " + dialect.FloorTable + " f WHERE f.id = 1 LOCK IN SHARE MODE"

// floorRefusal is the SIGNAL of a write below the floor.
func floorRefusal(table string) string {
	return "SIGNAL SQLSTATE '" + FloorSQLState + "' SET MESSAGE_TEXT = " + messageWith("fencedsql: token floor on ", table, "token below the floor")
}

var (
	_ dialect.FloorLockReader = dialectImpl{}
	_ dialect.Floorer         = dialectImpl{}
	_ dialect.FloorFinder     = dialectImpl{}
)

// PreparedQuery lists the server's prepared XA transactions (dialect.PreparedLister):
// XA PREPARE gives up the shared lock on the floor row that a raise waits for, so a
// transaction written under the old floor and prepared could commit after the raise
// returned (red-team rt22b F1, rt24c F3). XA RECOVER's last column is the XID's data.
func (dialectImpl) PreparedQuery() string { return "XA RECOVER" }

var _ dialect.PreparedLister = dialectImpl{}

// WritablePrimaryQuery yields 1 when the server is a writable primary
// (writablePrimary; dialect.PrimaryChecker): a replica's raise is undone by the
// primary's floor in its relay log.
func (dialectImpl) WritablePrimaryQuery() string {
	return noTimeLimit + "SELECT " + noTimeLimitHint + writablePrimary
}

// writablePrimary is the one test of "this server takes writes as a primary", 1 or 0
// (never NULL), shared by the floor tools (WritablePrimaryQuery: RaiseTokenFloor,
// MaxToken) and the pool's per-connection session check (SessionQuery's last field,
// red-team rt42f F2): read_only off, and no replication running. The replication
// threads are seen in the process list only by an account with the PROCESS privilege;
// on MariaDB the status variable Slaves_running (the replication connections whose SQL
// thread runs, readable by every account) sees a replica without it, its IO thread
// stopped included (the replica lags). A replica whose SQL thread is stopped is seen
// by an account with PROCESS while its IO thread runs, not otherwise: it applies
// nothing, and a connection to it is a stale copy the floor tools refuse only through
// RaiseTokenFloorReadOnly's stricter test (replication configured). A missing status
// row reads as a replica (fail closed).
const writablePrimary = "IF(@@GLOBAL.read_only = 0 AND NOT EXISTS (SELECT 1 FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Slave_SQL', 'Slave_IO', 'Slave_worker'))" +
	" /*M!100002 AND COALESCE((SELECT s.VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS s WHERE s.VARIABLE_NAME = 'SLAVES_RUNNING') = 0, FALSE) */, 1, 0)"

var _ dialect.PrimaryChecker = dialectImpl{}

// RaiseSessionQuery names the session settings that keep the raise out of the binary
// log or make the replicas skip it (dialect.ReplicatedRaiser, red-team rt42f F3):
// sql_log_bin = 0 (a DSN parameter is enough: go-sql-driver/mysql sends it as SET),
// and on MariaDB skip_replication, a session server_id or gtid_domain_id other than
// the server's, a preset gtid_seq_no and wsrep_on off — the settings the wrapper's
// session check refuses for guarded writes (session.go). Setting them back needs
// SUPER or BINLOG ADMIN, which the floor's account need not have: the raise is refused
// instead. Empty when none is set.
func (dialectImpl) RaiseSessionQuery() string {
	return "SELECT CONCAT_WS(' ', IF(@@SESSION.sql_log_bin = 1, NULL, 'sql_log_bin=0')" +
		" /*M!100002 , IF(@@SESSION.skip_replication = 0, NULL, 'skip_replication=1')," +
		" IF(@@SESSION.server_id = @@GLOBAL.server_id, NULL, 'server_id (session value differs from global)')," +
		" IF(@@SESSION.gtid_domain_id = @@GLOBAL.gtid_domain_id, NULL, 'gtid_domain_id (session value differs from global)')," +
		" IF(@@SESSION.gtid_seq_no = 0, NULL, 'gtid_seq_no (set)') */" +
		" /*M!100304 , IF(@@SESSION.wsrep_on = @@GLOBAL.wsrep_on, NULL, 'wsrep_on (session value differs from global)') */)"
}

var _ dialect.ReplicatedRaiser = dialectImpl{}

// FloorLockWait reports whether err ended a raise that waited for the floor row, which
// every open guarded write holds with a shared lock (dialect.FloorBlockLister): the
// server's lock wait timeout (error 1205, innodb_lock_wait_timeout), or a deadlock
// (1213) whose victim InnoDB chose the raise — the cheapest transaction of a cycle
// such as "writer A holds the floor row and waits for writer C's row; C's floor read
// queues behind the raise's request" (red-team rt59c F1: the raise answered the raw
// 1213, not ErrFloorBlocked naming the writers). Either way the server rolled back the
// raise's statement and nothing is raised.
func (dialectImpl) FloorLockWait(err error) bool {
	var me *mysql.MySQLError
	return errors.As(err, &me) && (me.Number == 1205 || me.Number == 1213)
}

// FloorBlockersQuery lists the connections, other than this one, whose open InnoDB
// transactions hold row locks (dialect.FloorBlockLister): among them the guarded
// writers that hold the floor row a raise waits for. information_schema.INNODB_TRX
// needs the PROCESS privilege; without it the list is empty.
func (dialectImpl) FloorBlockersQuery() string {
	return "SELECT trx_mysql_thread_id FROM information_schema.INNODB_TRX WHERE trx_mysql_thread_id <> CONNECTION_ID() AND trx_lock_structs > 0 ORDER BY trx_started"
}

var _ dialect.FloorBlockLister = dialectImpl{}
