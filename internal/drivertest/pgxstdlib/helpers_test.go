package pgxstdlib_test

import (
	"context"
	"database/sql"
	"fmt"
	"os"
	"strconv"
	"testing"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres" // registers fenced-pgx
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The open helpers the adapted file calls instead of stdlib.OpenDB and
// stdlib.OpenDBFromPool: the same connectors, opened through fencedsql with the
// PostgreSQL dialect and no guarded table.
func fencedOpenDB(config pgx.ConnConfig, opts ...stdlib.OptionOpenDB) *sql.DB {
	return fencedsql.OpenDB(stdlib.GetConnector(config, opts...), fencedsql.WithDialect(postgres.Dialect))
}

func fencedOpenDBFromPool(pool *pgxpool.Pool, opts ...stdlib.OptionOpenDB) *sql.DB {
	return fencedsql.OpenDB(stdlib.GetPoolConnector(pool, opts...), fencedsql.WithDialect(postgres.Dialect))
}

func init() {
	// pgx registers "pgx" and "pgx/v5"; the adapted TestSQLOpen opens both fenced.
	fencedsql.Register("fenced-pgx/v5", stdlib.GetDefaultDriver(), fencedsql.WithDialect(postgres.Dialect))
}

// TestMain gives the suite a database of its own on the server named by
// FENCEDSQL_PG_DSN, as PGX_TEST_DATABASE (what pgx's tests read), and drops it after.
func TestMain(m *testing.M) {
	admin := os.Getenv(testdb.EnvPostgres)
	if admin == "" {
		if testdb.RequireServers() {
			fmt.Fprintf(os.Stderr, "pgxstdlib: %s is not set\n", testdb.EnvPostgres)
			os.Exit(1)
		}
		fmt.Fprintf(os.Stderr, "pgxstdlib: %s is not set: pgx's suite not run\n", testdb.EnvPostgres)
		os.Exit(0)
	}
	os.Exit(run(m, admin))
}

func run(m *testing.M, admin string) int {
	ctx := context.Background()
	cfg, err := pgx.ParseConfig(admin)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgxstdlib:", err)
		return 1
	}
	ac, err := pgx.ConnectConfig(ctx, cfg)
	if err != nil {
		fmt.Fprintln(os.Stderr, "pgxstdlib: connecting:", err)
		return 1
	}
	defer ac.Close(ctx)
	name := "pgxstdlib_" + strconv.Itoa(os.Getpid())
	if _, err := ac.Exec(ctx, "CREATE DATABASE "+name); err != nil {
		fmt.Fprintln(os.Stderr, "pgxstdlib: creating the database:", err)
		return 1
	}
	defer ac.Exec(context.WithoutCancel(ctx), "DROP DATABASE IF EXISTS "+name+" WITH (FORCE)")
	cfg.Database = name
	os.Setenv("PGX_TEST_DATABASE", cfg.ConnString()+"")
	dsn := fmt.Sprintf("host=%s port=%d user=%s password=%s dbname=%s sslmode=disable", cfg.Host, cfg.Port, cfg.User, cfg.Password, name)
	os.Setenv("PGX_TEST_DATABASE", dsn)
	return m.Run()
}
