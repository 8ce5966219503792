package redteam

import (
	"database/sql/driver"
	"strings"
	"testing"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"
	sqlite "modernc.org/sqlite"

	fmy "github.com/fencedsql/fencedsql/dialects/mysql"
	fpg "github.com/fencedsql/fencedsql/dialects/postgres"
	fsq "github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const seedRows = "(1, 100, 50, 3), (2, 200, 50, 3), (3, 300, 50, 3), (4, 400, 50, 3)"

const ledgerRows = "(1, 1, 5, 'a'), (2, 2, -5, 'b'), (3, 3, 7, 'c')"

func withParam(dsn, kv string) string {
	if strings.Contains(dsn, "?") {
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}

func dquote(n string) string { return `"` + strings.ReplaceAll(n, `"`, `""`) + `"` }

func postgresBackend() backend {
	return backend{
		name:     "postgres",
		dialect:  fpg.Dialect,
		freshDSN: testdb.Postgres,
		connector: func(dsn string) (driver.Connector, error) {
			return stdlib.GetDefaultDriver().(driver.DriverContext).OpenConnector(dsn)
		},
		withParam: withParam,
		schema: []string{
			"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
			"CREATE TABLE ledger (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, amount BIGINT NOT NULL DEFAULT 0, note TEXT NOT NULL DEFAULT '')",
			"INSERT INTO accounts (id, balance, fence_token, version) VALUES " + seedRows,
			"INSERT INTO ledger (id, account_id, amount, note) VALUES " + ledgerRows,
		},
		catalog: []string{
			"SELECT 'rel ' || c.relname || ' ' || c.relkind::text FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = 'public'",
			"SELECT 'col ' || table_name || '.' || column_name || ' ' || data_type || ' ' || is_nullable || ' ' || coalesce(column_default, '') FROM information_schema.columns WHERE table_schema = 'public'",
			"SELECT 'trigger ' || tgname || ' ON ' || tgrelid::regclass::text || ' ' || tgenabled::text FROM pg_trigger WHERE NOT tgisinternal",
			"SELECT 'rule ' || rulename || ' ON ' || tablename FROM pg_rules WHERE schemaname = 'public'",
			"SELECT 'routine ' || p.proname || ' ' || p.prokind::text FROM pg_proc p JOIN pg_namespace n ON n.oid = p.pronamespace WHERE n.nspname = 'public'",
			"SELECT 'inherits ' || inhrelid::regclass::text || ' ' || inhparent::regclass::text FROM pg_inherits",
			"SELECT 'policy ' || polname FROM pg_policy",
		},
		tables: "SELECT table_name::text FROM information_schema.tables WHERE table_schema = 'public' AND table_type = 'BASE TABLE'",
		quote:  dquote,
		only:   "ONLY ",
	}
}

func mysqlBackend() backend {
	return backend{
		name:    "mariadb",
		dialect: fmy.Dialect,
		freshDSN: func(t testing.TB) string {
			// multiStatements: the raw driver must be able to run the multi-statement
			// shapes; the fenced driver must refuse them.
			return withParam(testdb.MySQL(t), "multiStatements=true")
		},
		connector: func(dsn string) (driver.Connector, error) {
			return (&mysql.MySQLDriver{}).OpenConnector(dsn)
		},
		withParam: withParam,
		schema: []string{
			"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
			"CREATE TABLE ledger (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, amount BIGINT NOT NULL DEFAULT 0, note VARCHAR(200) NOT NULL DEFAULT '') ENGINE=InnoDB",
			"INSERT INTO accounts (id, balance, fence_token, version) VALUES " + seedRows,
			"INSERT INTO ledger (id, account_id, amount, note) VALUES " + ledgerRows,
		},
		catalog: []string{
			"SELECT CONCAT('table ', table_name, ' ', table_type, ' ', IFNULL(engine, '')) FROM information_schema.tables WHERE table_schema = DATABASE()",
			"SELECT CONCAT('col ', table_name, '.', column_name, ' ', column_type, ' ', is_nullable, ' ', IFNULL(column_default, '')) FROM information_schema.columns WHERE table_schema = DATABASE()",
			"SELECT CONCAT('trigger ', trigger_name, ' ON ', event_object_table) FROM information_schema.triggers WHERE trigger_schema = DATABASE()",
			"SELECT CONCAT('routine ', routine_name, ' ', routine_type) FROM information_schema.routines WHERE routine_schema = DATABASE()",
			"SELECT CONCAT('event ', event_name) FROM information_schema.events WHERE event_schema = DATABASE()",
		},
		tables: "SELECT table_name FROM information_schema.tables WHERE table_schema = DATABASE() AND table_type = 'BASE TABLE'",
		quote:  func(n string) string { return "`" + strings.ReplaceAll(n, "`", "``") + "`" },
	}
}

func sqliteBackend() backend {
	return backend{
		name:     "sqlite",
		dialect:  fsq.Dialect,
		freshDSN: testdb.SQLite,
		connector: func(dsn string) (driver.Connector, error) {
			return sqlite.NewConnector(dsn)
		},
		withParam: withParam,
		schema: []string{
			"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
			"CREATE TABLE ledger (id BIGINT PRIMARY KEY, account_id BIGINT NOT NULL, amount BIGINT NOT NULL DEFAULT 0, note TEXT NOT NULL DEFAULT '')",
			"INSERT INTO accounts (id, balance, fence_token, version) VALUES " + seedRows,
			"INSERT INTO ledger (id, account_id, amount, note) VALUES " + ledgerRows,
		},
		catalog: []string{
			"SELECT type || ' ' || name || ' ON ' || tbl_name || ' ' || coalesce(sql, '') FROM sqlite_master",
		},
		tables: "SELECT name FROM sqlite_master WHERE type = 'table' AND name NOT LIKE 'sqlite_%'",
		quote:  dquote,
	}
}

func TestCataloguePostgres(t *testing.T) {
	runCatalogue(t, postgresBackend(), append(postgresEntries(), postgresGuardEntries()...))
}

func TestCatalogueMariaDB(t *testing.T) {
	runCatalogue(t, mysqlBackend(), append(mysqlEntries(), mysqlGuardEntries()...))
}

func TestCatalogueSQLite(t *testing.T) {
	runCatalogue(t, sqliteBackend(), append(sqliteEntries(), sqliteGuardEntries()...))
}
