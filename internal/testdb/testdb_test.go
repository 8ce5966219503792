package testdb

import (
	"context"
	"database/sql"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	"github.com/redis/go-redis/v9"
)

func ctxT(t *testing.T) context.Context {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	return ctx
}

func openT(t *testing.T, driver, dsn string) *sql.DB {
	t.Helper()
	db, err := sql.Open(driver, dsn)
	if err != nil {
		t.Fatalf("sql.Open(%q, %s): %v", driver, Redact(dsn), err)
	}
	t.Cleanup(func() { db.Close() })
	return db
}

// roundTrip creates a table, inserts a row and reads it back.
func roundTrip(t *testing.T, db *sql.DB, createSQL, insertSQL, selectSQL string) {
	t.Helper()
	ctx := ctxT(t)
	if _, err := db.ExecContext(ctx, createSQL); err != nil {
		t.Fatalf("create table: %v", err)
	}
	if _, err := db.ExecContext(ctx, insertSQL, 1, "fenced"); err != nil {
		t.Fatalf("insert: %v", err)
	}
	var got string
	if err := db.QueryRowContext(ctx, selectSQL, 1).Scan(&got); err != nil {
		t.Fatalf("select: %v", err)
	}
	if got != "fenced" {
		t.Fatalf("select returned %q, want %q", got, "fenced")
	}
}

func TestPostgresRoundTrip(t *testing.T) {
	t.Parallel()
	dsn := Postgres(t)
	db := openT(t, "pgx", dsn)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	var current, version string
	if err := db.QueryRowContext(ctxT(t), "SELECT current_database(), version()").Scan(&current, &version); err != nil {
		t.Fatal(err)
	}
	if current != cfg.Database || !strings.HasPrefix(current, "t_testpostgresroundtrip_") {
		t.Fatalf("connected to database %q, want the fresh %q", current, cfg.Database)
	}
	t.Logf("database %s on %s", current, version)
	roundTrip(t, db,
		"CREATE TABLE kv (id integer PRIMARY KEY, v text NOT NULL)",
		"INSERT INTO kv (id, v) VALUES ($1, $2)",
		"SELECT v FROM kv WHERE id = $1")
}

func TestMySQLRoundTrip(t *testing.T) {
	t.Parallel()
	dsn := MySQL(t)
	// Callers may append parameters.
	db := openT(t, "mysql", dsn+"&timeout=10s")
	var current, version, sqlMode string
	if err := db.QueryRowContext(ctxT(t), "SELECT DATABASE(), VERSION(), @@sql_mode").Scan(&current, &version, &sqlMode); err != nil {
		t.Fatal(err)
	}
	if !strings.HasPrefix(current, "t_testmysqlroundtrip_") {
		t.Fatalf("connected to database %q, want a fresh one", current)
	}
	t.Logf("database %s on %s; sql_mode=%q", current, version, sqlMode)
	roundTrip(t, db,
		"CREATE TABLE kv (id INT PRIMARY KEY, v VARCHAR(64) NOT NULL) ENGINE=InnoDB",
		"INSERT INTO kv (id, v) VALUES (?, ?)",
		"SELECT v FROM kv WHERE id = ?")
	// parseTime=true from FENCEDSQL_MYSQL_DSN survived: DATETIME scans into time.Time.
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.ParseTime {
		var now time.Time
		if err := db.QueryRowContext(ctxT(t), "SELECT NOW(6)").Scan(&now); err != nil {
			t.Fatalf("scan NOW() with parseTime=true: %v", err)
		}
	}
}

func TestRedisRoundTrip(t *testing.T) {
	t.Parallel()
	addr, prefix := Redis(t)
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	t.Cleanup(func() { rdb.Close() })
	ctx := ctxT(t)
	key := prefix + "k"
	if err := rdb.Set(ctx, key, "fenced", time.Minute).Err(); err != nil {
		t.Fatalf("SET: %v", err)
	}
	got, err := rdb.Get(ctx, key).Result()
	if err != nil {
		t.Fatalf("GET: %v", err)
	}
	if got != "fenced" {
		t.Fatalf("GET returned %q, want %q", got, "fenced")
	}
}

func TestSQLiteRoundTrip(t *testing.T) {
	t.Parallel()
	dsn := SQLite(t)
	db := openT(t, "sqlite", dsn+"&_pragma=foreign_keys(1)")
	var busy int
	if err := db.QueryRowContext(ctxT(t), "PRAGMA busy_timeout").Scan(&busy); err != nil {
		t.Fatal(err)
	}
	if busy != 5000 {
		t.Fatalf("busy_timeout = %d, want 5000", busy)
	}
	roundTrip(t, db,
		"CREATE TABLE kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
		"INSERT INTO kv (id, v) VALUES (?, ?)",
		"SELECT v FROM kv WHERE id = ?")
}

// A test name with URI metacharacters still yields a working file DSN.
func TestSQLiteOddTestName(t *testing.T) {
	t.Parallel()
	t.Run("a#b%c&d e", func(t *testing.T) {
		dsn := SQLite(t)
		db := openT(t, "sqlite", dsn)
		roundTrip(t, db,
			"CREATE TABLE kv (id INTEGER PRIMARY KEY, v TEXT NOT NULL)",
			"INSERT INTO kv (id, v) VALUES (?, ?)",
			"SELECT v FROM kv WHERE id = ?")
		var file string
		if err := db.QueryRowContext(ctxT(t), "SELECT file FROM pragma_database_list WHERE name = 'main'").Scan(&file); err != nil {
			t.Fatal(err)
		}
		if !strings.HasSuffix(file, "/db.sqlite") || !strings.Contains(file, "#b%c&d_e") {
			t.Fatalf("database file is %q, want .../a#b%%c&d_e.../db.sqlite", file)
		}
	})
}

// The database a test got is gone once the test is over, even with a
// connection still open in a transaction (DROP DATABASE ... WITH (FORCE)).
func TestPostgresCleanupDrops(t *testing.T) {
	t.Parallel()
	admin := NeedServer(t, EnvPostgres, "PostgreSQL")
	var name string
	var leak *sql.DB
	t.Run("inner", func(t *testing.T) {
		dsn := Postgres(t)
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			t.Fatal(err)
		}
		name = cfg.Database
		if leak, err = sql.Open("pgx", dsn); err != nil {
			t.Fatal(err)
		}
		tx, err := leak.BeginTx(ctxT(t), nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("CREATE TABLE x (i int)"); err != nil {
			t.Fatal(err)
		}
	})
	if leak != nil {
		leak.Close()
	}
	var n int
	if err := openT(t, "pgx", admin).QueryRowContext(ctxT(t),
		"SELECT count(*) FROM pg_database WHERE datname = $1", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after the test", name)
	}
}

func TestMySQLCleanupDrops(t *testing.T) {
	t.Parallel()
	admin := NeedServer(t, EnvMySQL, "MySQL/MariaDB")
	var name string
	var leak *sql.DB
	t.Run("inner", func(t *testing.T) {
		dsn := MySQL(t)
		cfg, err := mysql.ParseDSN(dsn)
		if err != nil {
			t.Fatal(err)
		}
		name = cfg.DBName
		// A connection left in an open transaction holding a metadata lock
		// must not make the drop hang; it is killed.
		leak, err = sql.Open("mysql", dsn)
		if err != nil {
			t.Fatal(err)
		}
		ctx := ctxT(t)
		if _, err := leak.ExecContext(ctx, "CREATE TABLE x (i INT) ENGINE=InnoDB"); err != nil {
			t.Fatal(err)
		}
		tx, err := leak.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.Exec("INSERT INTO x VALUES (1)"); err != nil {
			t.Fatal(err)
		}
	})
	if leak != nil {
		leak.Close()
	}
	adminDSN, err := mysqlWithDatabase(admin, "")
	if err != nil {
		t.Fatal(err)
	}
	var n int
	if err := openT(t, "mysql", adminDSN).QueryRowContext(ctxT(t),
		"SELECT COUNT(*) FROM information_schema.schemata WHERE schema_name = ?", name).Scan(&n); err != nil {
		t.Fatal(err)
	}
	if n != 0 {
		t.Fatalf("database %s still exists after the test", name)
	}
}

func TestRedisCleanupDeletes(t *testing.T) {
	t.Parallel()
	addr := NeedServer(t, EnvRedis, "Redis")
	var prefix string
	t.Run("inner", func(t *testing.T) {
		var a string
		a, prefix = Redis(t)
		rdb := redis.NewClient(&redis.Options{Addr: a})
		defer rdb.Close()
		ctx := ctxT(t)
		for i := 0; i < 1200; i++ {
			if err := rdb.Set(ctx, prefix+"k"+strings.Repeat("x", i%7)+string(rune('a'+i%26))+time.Duration(i).String(), i, 0).Err(); err != nil {
				t.Fatal(err)
			}
		}
	})
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	keys, _, err := rdb.Scan(ctxT(t), 0, prefix+"*", 10000).Result()
	if err != nil {
		t.Fatal(err)
	}
	if len(keys) != 0 {
		t.Fatalf("%d keys with prefix %s left after the test", len(keys), prefix)
	}
}

func TestNeedServerSkipsWhenUnset(t *testing.T) {
	t.Setenv(EnvRequireServers, "0")
	t.Setenv("FENCEDSQL_TESTDB_NOT_SET", "")
	var ran bool
	t.Run("inner", func(t *testing.T) {
		NeedServer(t, "FENCEDSQL_TESTDB_NOT_SET", "Nothing")
		ran = true
	})
	if ran {
		t.Fatal("NeedServer returned for an unset variable")
	}
}

func TestRequireServers(t *testing.T) {
	for v, want := range map[string]bool{"1": true, "true": true, "": false, "0": false, "no": false} {
		t.Setenv(EnvRequireServers, v)
		if got := RequireServers(); got != want {
			t.Errorf("%s=%q: RequireServers() = %v, want %v", EnvRequireServers, v, got, want)
		}
	}
}

func TestUniqueName(t *testing.T) {
	t.Run("Some/Weird name#01 with a very long tail that goes on and on and on and on", func(t *testing.T) {
		a, b := uniqueName(t), uniqueName(t)
		if a == b {
			t.Fatalf("two calls gave the same name %q", a)
		}
		for _, n := range []string{a, b} {
			if len(n) > maxNameLen {
				t.Errorf("%q is %d characters, more than %d", n, len(n), maxNameLen)
			}
			if !strings.HasPrefix(n, "t_testuniquename_some_weird_name_01_") {
				t.Errorf("%q does not start with the sanitized test name", n)
			}
			for _, r := range n {
				if !(r >= 'a' && r <= 'z' || r >= '0' && r <= '9' || r == '_') {
					t.Errorf("%q has character %q", n, r)
				}
			}
		}
	})
}

func TestMySQLWithDatabase(t *testing.T) {
	for _, tc := range []struct{ in, name, want string }{
		{"u:p@tcp(127.0.0.1:3306)/?parseTime=true", "t_x", "u:p@tcp(127.0.0.1:3306)/t_x?parseTime=true"},
		{"u:p@tcp(127.0.0.1:3306)/", "t_x", "u:p@tcp(127.0.0.1:3306)/t_x?loc=UTC"},
		{"u:p@tcp(127.0.0.1:3306)/old?parseTime=true", "", "u:p@tcp(127.0.0.1:3306)/?parseTime=true"},
	} {
		got, err := mysqlWithDatabase(tc.in, tc.name)
		if err != nil {
			t.Fatal(err)
		}
		if got != tc.want {
			t.Errorf("mysqlWithDatabase(%q, %q) = %q, want %q", tc.in, tc.name, got, tc.want)
		}
		if _, err := mysql.ParseDSN(got + "&timeout=1s"); err != nil {
			t.Errorf("%q + \"&timeout=1s\" does not parse: %v", got, err)
		}
	}
}

func TestPostgresWithDatabase(t *testing.T) {
	got, err := postgresWithDatabase("postgres://u:p@127.0.0.1:5432/postgres?sslmode=disable", "t_x")
	if err != nil {
		t.Fatal(err)
	}
	if want := "postgres://u:p@127.0.0.1:5432/t_x?sslmode=disable"; got != want {
		t.Errorf("got %q, want %q", got, want)
	}
	got, err = postgresWithDatabase("host=127.0.0.1 port=5432 user=u password=p dbname=postgres", "t_x")
	if err != nil {
		t.Fatal(err)
	}
	cfg, err := pgx.ParseConfig(got)
	if err != nil {
		t.Fatal(err)
	}
	if cfg.Database != "t_x" {
		t.Errorf("keyword/value DSN names database %q, want t_x", cfg.Database)
	}
}

func TestRedact(t *testing.T) {
	for _, dsn := range []string{
		"postgres://fenced:s3cretpw@127.0.0.1:5432/postgres?sslmode=disable",
		"host=127.0.0.1 user=fenced password=s3cretpw dbname=postgres",
		"fenced:s3cretpw@tcp(127.0.0.1:3306)/?parseTime=true",
		"not a dsn s3cretpw (",
	} {
		if got := Redact(dsn); strings.Contains(got, "s3cretpw") {
			t.Errorf("Redact(...) = %q still has the password", got)
		}
	}
	u, _ := url.Parse(Redact("postgres://fenced:s3cretpw@127.0.0.1:5432/postgres"))
	if u == nil || u.Host != "127.0.0.1:5432" {
		t.Errorf("redacted URL lost its host: %v", u)
	}
}
