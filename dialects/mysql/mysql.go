// Package mysql is the MySQL and MariaDB dialect of fencedsql, over
// go-sql-driver/mysql. Importing it registers the driver name "fenced-mysql":
//
//	import _ "github.com/fencedsql/fencedsql/dialects/mysql"
//	db, err := sql.Open("fenced-mysql", "app:pw@tcp(db:3306)/shop?fenced_tables=accounts")
//
// It also binds "fenced-mysql" to sqlx's ? bind style (sqlx.BindDriver), so sqlx works
// unchanged: sqlx.Open("fenced-mysql", dsn) rebinds named queries and In to ?.
//
// A fenced write fails with error 1048 (column cannot be null) on the token column,
// which InnoDB makes atomic per statement. That only holds in a strict sql_mode: in a
// non-strict session MySQL stores 0 instead of failing, so the wrapper checks each
// connection's session before its first guarded write, and again after any statement
// that may have changed it: it refuses sessions without STRICT_TRANS_TABLES or
// STRICT_ALL_TABLES, sessions with ANSI_QUOTES or NO_BACKSLASH_ESCAPES (they change how
// statements are tokenized), and a character_set_client whose multibyte characters can
// end in a backslash or quote byte (GBK, SJIS, Big5, CP932, GB18030); and sessions in
// which a protected setting was set where the wrapper could not see it (a DSN
// parameter, init_connect, Raw): sql_log_bin off, autocommit off, completion_type
// CHAIN or RELEASE, a clock set by hand (SET timestamp), and on MariaDB
// skip_replication, a session server_id or gtid_domain_id other than the server's, a
// gtid_seq_no. See session.go.
// Tables must use a transactional engine (InnoDB).
package mysql

import (
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"
	"github.com/jmoiron/sqlx"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// DriverName is the name this package registers with database/sql.
const DriverName = "fenced-mysql"

// Dialect is the MySQL/MariaDB dialect value for fencedsql.WithDialect.
var Dialect dialect.Dialect = dialectImpl{}

func init() {
	fencedsql.Register(DriverName, &mysql.MySQLDriver{}, fencedsql.WithDialect(Dialect))
	sqlx.BindDriver(DriverName, sqlx.QUESTION)
}

type dialectImpl struct{}

func (dialectImpl) Name() string           { return "mysql" }
func (dialectImpl) Syntax() dialect.Syntax { return dialect.MySQLSyntax }
func (dialectImpl) NumberedParams() bool   { return false }
func (dialectImpl) QuoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

// Classify maps 1048 (column cannot be null), 1062 (duplicate entry), 1301 (a
// value larger than max_allowed_packet), 1317/1969/3024 (an interrupted
// statement), 1205 and 1213 (a lock wait ended: timeout, deadlock) and 1449 (a trigger's or routine's DEFINER does not exist: definer.go),
// and marks the
// errors after which the server may have rolled back the whole transaction: 1213
// (deadlock victim), 1020 (a record changed under MariaDB's snapshot isolation) and
// 1206 (lock table full) always, 1205 (lock wait timeout) under
// innodb_rollback_on_timeout.
// The column and key names are read from the server's message; values in it are never
// copied.
func (dialectImpl) Classify(err error) dialect.ErrorInfo {
	var me *mysql.MySQLError
	if !errors.As(err, &me) {
		return dialect.ErrorInfo{}
	}
	info := classify(me)
	// An error packet is the server's answer, except those that say the session or
	// the server went away while the statement ran (it may have committed), or that
	// the statement was interrupted.
	switch {
	case sessionLost(me.Number):
	case info.Kind == dialect.ErrorInterrupted:
	default:
		info.Server = true
	}
	return info
}

// classify is Classify's reading of an error packet.
func classify(me *mysql.MySQLError) dialect.ErrorInfo {
	switch me.Number {
	case 1048: // Column 'fence_token' cannot be null
		return dialect.ErrorInfo{Kind: dialect.ErrorNotNull, Column: nullColumn(me.Message)}
	case 1301: // Result of concat() was larger than max_allowed_packet (…)
		return dialect.ErrorInfo{Kind: dialect.ErrorTooLarge}
	case 1062: // Duplicate entry '…' for key 'name'
		key := duplicateKey(me.Message)
		return dialect.ErrorInfo{Kind: dialect.ErrorUnique, Constraint: key, Words: uniqueWords(me, key)}
	case 1213: // Deadlock found when trying to get lock; try restarting transaction
		// InnoDB rolls back the whole transaction; the session is left in autocommit.
		return dialect.ErrorInfo{Kind: dialect.ErrorLockWait, Rollback: dialect.RollbackTransaction}
	case 1020, // Record has changed since last read (MariaDB innodb_snapshot_isolation)
		1206: // The total number of locks exceeds the lock table size
		// InnoDB rolls back the whole transaction for each; the session is left in
		// autocommit.
		return dialect.ErrorInfo{Rollback: dialect.RollbackTransaction}
	case 1054: // Unknown column 'x' in 'field list' (or 't.x')
		return dialect.ErrorInfo{Kind: dialect.ErrorUnknownName, Column: firstQuoted(me.Message)}
	case 1146: // Table 'db.t' doesn't exist
		return dialect.ErrorInfo{Kind: dialect.ErrorUnknownName, Table: firstQuoted(me.Message)}
	case 1449: // The user specified as a definer ('u'@'h') does not exist
		return dialect.ErrorInfo{Kind: dialect.ErrorDefinerGone}
	case 1317, // Query execution was interrupted (KILL QUERY)
		1969, // MariaDB: Query execution was interrupted (max_statement_time exceeded)
		3024: // MySQL: Query execution was interrupted, maximum statement execution time exceeded
		return dialect.ErrorInfo{Kind: dialect.ErrorInterrupted}
	case 1205: // Lock wait timeout exceeded; try restarting transaction
		// Only the statement by default; the whole transaction, as for a deadlock, when
		// the server runs with innodb_rollback_on_timeout (a start-up option, read when
		// the error happens, on the connection it happened on).
		return dialect.ErrorInfo{Kind: dialect.ErrorLockWait, Rollback: dialect.RollbackIf, RollbackQuery: "SELECT @@GLOBAL.innodb_rollback_on_timeout"}
	}
	switch string(me.SQLState[:]) {
	case GuardSQLState: // "fencedsql: guard on <table>: …"
		return dialect.ErrorInfo{Kind: dialect.ErrorGuard, Table: between(me.Message, "guard on ", ": ")}
	case FloorSQLState: // "fencedsql: token floor on <table>: …"
		return dialect.ErrorInfo{Kind: dialect.ErrorBelowFloor, Table: between(me.Message, "floor on ", ": ")}
	case markLostSQLState: // "fencedsql: guard on <table>: the DELETE's mark was lost …"
		return dialect.ErrorInfo{Kind: dialect.ErrorMarkLost, Table: between(me.Message, "guard on ", ": ")}
	case ClaimConflictSQLState: // "fencedsql_claim_conflict on <table>: …" (absence.go)
		return dialect.ErrorInfo{Kind: dialect.ErrorClaimConflict, Table: between(me.Message, " on ", ": ")}
	}
	return dialect.ErrorInfo{}
}

func between(s, open, close string) string {
	i := strings.Index(s, open)
	if i < 0 {
		return ""
	}
	s = s[i+len(open):]
	j := strings.Index(s, close)
	if j < 0 {
		return ""
	}
	return s[:j]
}

// ColumnsQuery reads information_schema; an unqualified table is looked up in the
// connection's database. A view is noted as one (information_schema.TABLES), with the
// base tables of its database its stored definition names (MariaDB stores it with
// every name qualified and quoted, `+"`db`.`t`"+`): MariaDB reports a view's columns
// NOT NULL, so a view listed as guarded passed without a word while the table holding
// its rows went unfenced (red-team rt31d F4). A sequence (and a system view) is noted
// with its kind: a sequence was reported as a table missing columns (rt33a F7).
func (dialectImpl) ColumnsQuery(table dialect.TableName) (query string, args []any) {
	// The names are joined as constants (k): information_schema looks a constant name up
	// directly, where a correlated one scans every database. The view's definition is
	// read only for a view. The views are held to the table t byte for byte (sameName,
	// red-team rt56a F2: a case or accent twin's columns are not the table's).
	return "SELECT c.COLUMN_NAME, IF(c.IS_NULLABLE = 'NO', 1, 0), IF(t.TABLE_TYPE = 'VIEW', " +
		"(SELECT CONCAT('view:', COALESCE((SELECT GROUP_CONCAT(DISTINCT b.TABLE_NAME ORDER BY b.TABLE_NAME SEPARATOR ', ') FROM information_schema.TABLES b " +
		"WHERE b.TABLE_SCHEMA = k.s AND " + sameName("b.TABLE_SCHEMA", "t.TABLE_SCHEMA") + " AND b.TABLE_TYPE = 'BASE TABLE' AND LOCATE(CONCAT('`', b.TABLE_SCHEMA, '`.`', b.TABLE_NAME, '`'), v.VIEW_DEFINITION) > 0), '')) " +
		"FROM information_schema.VIEWS v WHERE v.TABLE_SCHEMA = k.s AND v.TABLE_NAME = k.n AND " + sameName("v.TABLE_SCHEMA", "t.TABLE_SCHEMA") + " AND " + sameName("v.TABLE_NAME", "t.TABLE_NAME") + "), " +
		"CASE t.TABLE_TYPE WHEN 'SEQUENCE' THEN 'sequence' WHEN 'SYSTEM VIEW' THEN 'system view' END) " +
		"FROM (SELECT COALESCE(NULLIF(?, _binary''), DATABASE()) AS s, ? AS n) k JOIN information_schema.TABLES t ON t.TABLE_SCHEMA = k.s AND t.TABLE_NAME = k.n " +
		"JOIN information_schema.COLUMNS c ON c.TABLE_SCHEMA = k.s AND c.TABLE_NAME = k.n AND " + sameName("c.TABLE_SCHEMA", "t.TABLE_SCHEMA") + " AND " + sameName("c.TABLE_NAME", "t.TABLE_NAME"), []any{table.Schema, table.Name}
}

// GuardColumnsDDL returns one ALTER TABLE adding the missing columns.
func (d dialectImpl) GuardColumnsDDL(table dialect.TableName, tokenCol, versionCol string, missingToken, missingVersion bool) []string {
	var adds []string
	if missingToken {
		adds = append(adds, "ADD COLUMN "+d.QuoteIdent(tokenCol)+" BIGINT NOT NULL DEFAULT 0")
	}
	if missingVersion {
		adds = append(adds, "ADD COLUMN "+d.QuoteIdent(versionCol)+" BIGINT NOT NULL DEFAULT 0")
	}
	if len(adds) == 0 {
		return nil
	}
	return []string{"ALTER TABLE " + table.String() + " " + strings.Join(adds, ", ")}
}

// uniqueWords is go-sql-driver/mysql's text of a 1062 error ("Error 1062 (23000):
// Duplicate entry '…' for key 'name'", or without the SQLSTATE) with the duplicated
// value left out.
func uniqueWords(me *mysql.MySQLError, key string) string {
	words := "Error 1062"
	if me.SQLState != [5]byte{} {
		words += " (" + string(me.SQLState[:]) + ")"
	}
	words += ": Duplicate entry"
	if key != "" {
		words += " for key '" + key + "'"
	}
	return words
}
