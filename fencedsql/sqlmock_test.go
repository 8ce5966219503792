package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"fmt"
	"regexp"
	"strings"
	"sync/atomic"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// exactSQL is a stricter matcher than sqlmock.QueryMatcherEqual (which collapses
// whitespace): the SQL sent must be byte-for-byte the expected text.
// A savepoint that marks a dynamic statement has a random name (fencedsql_dyn_ and 16
// hex digits): an expectation writes it fencedsql_dyn_#, as with fencedtest.
var exactSQL = sqlmock.QueryMatcherFunc(func(want, got string) error {
	got = dynMark.ReplaceAllString(got, "fencedsql_dyn_#")
	if want != got {
		return fmt.Errorf("sql differs:\n got  %q\n want %q", got, want)
	}
	return nil
})

var dynMark = regexp.MustCompile(`fencedsql_dyn_[0-9a-f]{16}`)

var mockSeq atomic.Int64

// newMockDB returns a fenced *sql.DB over a fresh go-sqlmock connection. The default
// options guard "accounts" with the schema check off; opts are appended (and so win).
func newMockDB(t *testing.T, d dialect.Dialect, opts ...fencedsql.Option) (*sql.DB, sqlmock.Sqlmock) {
	t.Helper()
	dsn := fmt.Sprintf("fencedsql-mock-%s-%d", t.Name(), mockSeq.Add(1))
	mdb, mock, err := sqlmock.NewWithDSN(dsn, sqlmock.QueryMatcherOption(exactSQL))
	if err != nil {
		t.Fatal(err)
	}
	base := []fencedsql.Option{fencedsql.WithDialect(d), fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false)}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn), append(base, opts...)...)
	db.SetMaxOpenConns(1)
	t.Cleanup(func() {
		db.Close()
		mdb.Close()
	})
	return db, mock
}

func mockMet(t *testing.T, mock sqlmock.Sqlmock) {
	t.Helper()
	if err := mock.ExpectationsWereMet(); err != nil {
		t.Error(err)
	}
}

func withTok(n uint64) context.Context { return fencedsql.WithToken(context.Background(), n) }

type dialectCase struct {
	name string
	d    dialect.Dialect
}

var mockDialects = []dialectCase{
	{"postgres", postgres.Dialect},
	{"mysql", mysqldialect.Dialect},
	{"sqlite", sqlite.Dialect},
}

// sqlFor picks the statement text for a dialect: PostgreSQL numbers its placeholders.
func sqlFor(d string, pg, other string) string {
	if d == "postgres" {
		return pg
	}
	return other
}

// quoteFor writes `x` for MySQL and "x" for the others in s, which uses "x".
func quoteFor(d, s string) string {
	if d == "mysql" {
		return strings.ReplaceAll(s, `"`, "`")
	}
	return s
}

// ---- the lazy schema and session checks ----

// The dialects' column queries (ColumnsQuery), for an unqualified table.
var (
	pgColumns = columnsQuery(postgres.Dialect)
	// pgSession is PostgreSQL's session query, which pgGood answers.
	pgSession     = postgres.Dialect.SessionQuery()
	mysqlColumns  = columnsQuery(mysqldialect.Dialect)
	sqliteColumns = columnsQuery(sqlite.Dialect)
)

func columnsQuery(d dialect.Dialect) string {
	q, _ := d.ColumnsQuery(dialect.TableName{Name: "x"})
	return q
}

const (
	mysqlSession = "/*M!100108 SET STATEMENT max_statement_time = 0 FOR */ SELECT /*+ SET_VAR(max_execution_time = 0) */ CAST(CONVERT(CONCAT_WS(' ', @@SESSION.sql_mode, @@SESSION.character_set_client, @@SESSION.sql_log_bin, @@SESSION.autocommit, @@SESSION.completion_type, @@SESSION.timestamp, TIMESTAMPDIFF(MICROSECOND, NOW(6), SYSDATE(6)) /*M!100002 , @@SESSION.skip_replication, @@SESSION.server_id, @@GLOBAL.server_id, @@SESSION.gtid_domain_id, @@GLOBAL.gtid_domain_id, @@SESSION.gtid_seq_no */ /*M!100304 , REPLACE(@@SESSION.system_versioning_asof, ' ', '_'), @@SESSION.wsrep_on, @@GLOBAL.wsrep_on */, @@SESSION.sql_select_limit, IFNULL(@@SESSION.character_set_results, 'NULL'), IF(@@GLOBAL.read_only = 0 AND NOT EXISTS (SELECT 1 FROM information_schema.PROCESSLIST WHERE COMMAND IN ('Slave_SQL', 'Slave_IO', 'Slave_worker')) /*M!100002 AND COALESCE((SELECT s.VARIABLE_VALUE FROM information_schema.GLOBAL_STATUS s WHERE s.VARIABLE_NAME = 'SLAVES_RUNNING') = 0, FALSE) */, 1, 0)) USING ascii) AS BINARY) LIMIT 1"
	pgGood       = "on UTF8 t t t t on configuration file"
	strictMode   = "ONLY_FULL_GROUP_BY,STRICT_TRANS_TABLES,NO_ZERO_IN_DATE,NO_ZERO_DATE,ERROR_FOR_DIVISION_BY_ZERO,NO_ENGINE_SUBSTITUTION"
	// mysqlRest follows sql_mode and character_set_client in a MariaDB session value
	// that passes: sql_log_bin, autocommit, completion_type, the session clock and
	// its distance from SYSDATE(6) in microseconds, skip_replication, server_id
	// (session, global), gtid_domain_id (session, global), gtid_seq_no,
	// system_versioning_asof, wsrep_on (session, global), sql_select_limit and
	// character_set_results, and the writable-primary test.
	mysqlRest = " 1 1 NO_CHAIN 1700000000.000000 20 0 1 1 0 0 0 DEFAULT 0 0" + mysqlRecords
	// mysqlRecords ends every MySQL session value: sql_select_limit, character_set_results
	// and the writable-primary test (1: a primary).
	mysqlRecords = " 18446744073709551615 utf8mb4 1"
	mysqlGood    = strictMode + " utf8mb4" + mysqlRest
)

func columnRows(cols ...string) *sqlmock.Rows {
	r := sqlmock.NewRows([]string{"name", "notnull"})
	for _, c := range cols {
		name, nn, _ := strings.Cut(c, ":")
		r.AddRow(name, nn)
	}
	return r
}

var goodColumns = []string{"id:1", "balance:1", "fence_token:1", "version:1"}

// expectPGSession expects PostgreSQL's session query, which runs before every guarded
// write under a driver that does not track the session (sqlmock).
// expectOpen expects a pool's first-connection checks (schema check on): the registry
// lookup, answered "none", then one column query per listed table (args each), which
// finds the table.
func expectOpen(mock sqlmock.Sqlmock, d dialect.Dialect, args ...[]driver.Value) {
	expectRecords(mock, d)
	for _, a := range args {
		if name, ok := a[0].(string); ok {
			expectDescendants(mock, d, name)
		}
	}
	expectCatalogViews(mock, d)
	q, _ := d.ColumnsQuery(dialect.TableName{Name: "x"})
	for _, a := range args {
		mock.ExpectQuery(q).WithArgs(a...).WillReturnRows(columnRows(goodColumns...))
	}
}

// expectRecords expects the reads of what the database records as guarded (the
// registry, dialect.Registrar; the tables carrying the guard's triggers,
// dialect.GuardFinder), answered "none", after the session check that precedes them
// where the dialect asks for it (dialect.RecordsSessionChecker: MySQL).
func expectRecords(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if _, ok := d.(dialect.RecordsSessionChecker); ok {
		// The session check before the records (red-team rt40b F3, F4).
		mock.ExpectQuery(d.SessionQuery()).WillReturnRows(sqlmock.NewRows([]string{"s"}).AddRow(goodSession(d)))
	}
	mock.ExpectQuery(d.(dialect.Registrar).RegistryExistsQuery()).WillReturnRows(sqlmock.NewRows([]string{"n"}).AddRow(int64(0)))
	if f, ok := d.(dialect.GuardFinder); ok {
		mock.ExpectQuery(f.GuardedTablesQuery()).WillReturnRows(sqlmock.NewRows([]string{"schema", "name"}))
	}
}

// expectDescendants expects the queries for the partitions and inheritance children of
// each table and for its parents (PostgreSQL, dialect.DescendantFinder and
// AncestorFinder), answered "none".
func expectDescendants(mock sqlmock.Sqlmock, d dialect.Dialect, tables ...string) {
	f, ok := d.(dialect.DescendantFinder)
	if !ok {
		return
	}
	for _, t := range tables {
		tn, err := dialect.ParseTableName(t)
		if err != nil {
			tn = dialect.TableName{Name: t}
		}
		q, _ := f.DescendantsQuery(tn)
		mock.ExpectQuery(q).WithArgs(t).WillReturnRows(sqlmock.NewRows([]string{"schema", "name"}))
		if a, ok := d.(dialect.AncestorFinder); ok {
			q, _ := a.AncestorsQuery(tn)
			mock.ExpectQuery(q).WithArgs(t).WillReturnRows(sqlmock.NewRows([]string{"schema", "name"}))
		}
	}
}

// expectCatalogViews expects the query for the relations through which a write
// reaches a system catalog (dialect.CatalogViewFinder), answered "none".
func expectCatalogViews(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if f, ok := d.(dialect.CatalogViewFinder); ok {
		q, _ := f.CatalogViewsQuery()
		mock.ExpectQuery(q).WillReturnRows(sqlmock.NewRows([]string{"schema", "name", "reaches"}))
	}
}

// expectOpenAccounts is expectOpen for the one listed table of newMockDB, accounts.
func expectOpenAccounts(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if d.Name() == "mysql" {
		expectOpen(mock, d, []driver.Value{"", "accounts"})
		return
	}
	expectOpen(mock, d, []driver.Value{"accounts"})
}

func expectPGSession(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if d.Name() == "postgres" {
		mock.ExpectQuery(pgSession).WillReturnRows(sqlmock.NewRows([]string{"s"}).AddRow(pgGood))
	}
}

// expectPGFirstSession is expectPGSession for a connection's first guarded write under
// the schema checks: the session query, then the listing of the database's
// subscriptions (red-team rt50c F3) answered with none, once per connection.
func expectPGFirstSession(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if d.Name() == "postgres" {
		expectSessionCheck(mock, d)
	}
}

// expectSessionCheck expects the full session check of a connection's first guarded
// write under the schema checks: the dialect's session query answered as a good
// session, then, where the dialect lists the server's replication connections
// (dialect.ReplicationLister, MySQL/MariaDB: red-team rt48i F1; PostgreSQL's
// subscriptions: rt50c F3), the listing answered with none (a primary).
func expectSessionCheck(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if q := d.SessionQuery(); q != "" {
		mock.ExpectQuery(q).WillReturnRows(sqlmock.NewRows([]string{"mode"}).AddRow(goodSession(d)))
	}
	if l, ok := d.(dialect.ReplicationLister); ok {
		q, none := replicationListing(l)
		mock.ExpectQuery(q).WillReturnRows(none)
	}
}

// replicationListing returns the first query l's listing sends and rows that answer it
// with none: MySQL/MariaDB's SHOW ALL SLAVES STATUS (no row), PostgreSQL's count of
// the database's subscriptions (0, red-team rt50c F3).
func replicationListing(l dialect.ReplicationLister) (string, *sqlmock.Rows) {
	var sent string
	l.ReplicationConfigured(context.Background(), func(_ context.Context, q string, _ ...any) ([][]string, error) {
		sent = q
		return nil, nil
	})
	if strings.HasPrefix(sent, "SHOW ") {
		return sent, sqlmock.NewRows([]string{"Connection_name"})
	}
	return sent, sqlmock.NewRows([]string{"count"}).AddRow(0)
}

// expectSQLiteSession expects SQLite's session check (the connection's journal mode
// and synchronous level), once per connection before its first guarded write.
func expectSQLiteSession(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if d.Name() == "sqlite" {
		mock.ExpectQuery(d.SessionQuery()).WillReturnRows(sqlmock.NewRows([]string{"s"}).AddRow(goodSession(d)))
	}
}

// goodSession is a session check value every dialect accepts.
func goodSession(d dialect.Dialect) string {
	switch d.Name() {
	case "postgres":
		return pgGood
	case "sqlite":
		return "delete\x1f2\x1fmain" // journal_mode, synchronous, schema (dialects/sqlite/session.go)
	}
	return mysqlGood
}

// expectNamePath expects the dialect's name resolution query (dialect.NamePather),
// which runs once per connection before its first lazy check, answered with one
// resolution for every connection. The answer has the one column such mocks were
// written with: the server's identity (dialect.ServerIdentifier's second column) is
// then unknown, which the pool tolerates (TestServerIdentityUnknownTolerated).
func expectNamePath(mock sqlmock.Sqlmock, d dialect.Dialect) {
	if p, ok := d.(dialect.NamePather); ok {
		mock.ExpectQuery(p.NamePathQuery()).WillReturnRows(sqlmock.NewRows([]string{"path"}).AddRow("path"))
	}
}
