// Package testdb is fencedsql's shared test harness for real database and
// Redis servers: each helper hands a test its own fresh database (or key
// prefix) and removes it again in t.Cleanup, so a suite needs one line per
// backend:
//
//	dsn := testdb.Postgres(t)          // sql.Open("pgx", dsn)
//	dsn := testdb.MySQL(t)             // sql.Open("mysql", dsn)
//	addr, prefix := testdb.Redis(t)    // keys must start with prefix
//	dsn := testdb.SQLite(t)            // sql.Open("sqlite", dsn)
//
// The servers are found through environment variables, which
// scripts/servers.sh exports after starting throwaway servers (source it, or
// run scripts/test.sh, which does):
//
//	FENCEDSQL_PG_DSN           pgx URL of a PostgreSQL superuser, e.g.
//	                           postgres://fenced:PASSWORD@127.0.0.1:PORT/postgres?sslmode=disable
//	FENCEDSQL_MYSQL_DSN        go-sql-driver/mysql DSN of a MariaDB/MySQL account
//	                           allowed to CREATE/DROP DATABASE, e.g.
//	                           fenced:PASSWORD@tcp(127.0.0.1:PORT)/?parseTime=true
//	FENCEDSQL_REDIS_ADDR       host:port of a Redis server, e.g. 127.0.0.1:PORT
//	FENCEDSQL_REQUIRE_SERVERS  "1": a server whose variable is unset fails the
//	                           test instead of skipping it (set by scripts/test.sh,
//	                           hence in CI)
//
// Without the variables the tests that need a server skip with a message
// naming the variable. A variable that is set but names a server that cannot
// be reached always fails the test. Passwords are never logged: messages show
// DSNs through Redact.
package testdb

import (
	"context"
	"crypto/rand"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"net/url"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5"
	_ "github.com/jackc/pgx/v5/stdlib" // registers the "pgx" database/sql driver
	"github.com/redis/go-redis/v9"
	_ "modernc.org/sqlite" // registers the "sqlite" database/sql driver
)

// Environment variables read by this package.
const (
	EnvPostgres       = "FENCEDSQL_PG_DSN"
	EnvMySQL          = "FENCEDSQL_MYSQL_DSN"
	EnvRedis          = "FENCEDSQL_REDIS_ADDR"
	EnvRequireServers = "FENCEDSQL_REQUIRE_SERVERS"
	EnvLong           = "FENCEDSQL_LONG"
)

// adminTimeout bounds every administrative round trip (create, drop, ping).
const adminTimeout = 30 * time.Second

// maxNameLen is PostgreSQL's identifier limit (MySQL allows 64).
const maxNameLen = 63

// RequireServers reports whether FENCEDSQL_REQUIRE_SERVERS=1 (then a missing
// server is a test failure, not a skip). "true" and the other spellings
// strconv.ParseBool accepts work too.
func RequireServers() bool {
	v, err := strconv.ParseBool(strings.TrimSpace(os.Getenv(EnvRequireServers)))
	return err == nil && v
}

// Long reports whether FENCEDSQL_LONG=1 (or another spelling of true that
// strconv.ParseBool accepts): the slow tests then also run their long forms (more
// clients, more rounds), for a nightly or a release. CI runs the short forms, which
// reach the same branches of the code under test.
func Long() bool {
	v, err := strconv.ParseBool(strings.TrimSpace(os.Getenv(EnvLong)))
	return err == nil && v
}

// NeedServer returns the value of the environment variable envVar. When it is
// unset or empty the test is skipped with a message naming the variable and
// what (say "PostgreSQL"), or fails when RequireServers() is true.
func NeedServer(t testing.TB, envVar, what string) string {
	t.Helper()
	v := strings.TrimSpace(os.Getenv(envVar))
	if v != "" {
		return v
	}
	if RequireServers() {
		t.Fatalf("testdb: %s not set but %s=1: %s tests cannot run (source scripts/servers.sh or run scripts/test.sh)",
			envVar, EnvRequireServers, what)
	}
	t.Skipf("testdb: %s not set; %s tests skipped", envVar, what)
	return ""
}

// Postgres creates a fresh database with a unique name on the server named by
// FENCEDSQL_PG_DSN, drops it in t.Cleanup (WITH (FORCE), so connections the
// test leaked do not block the drop) and returns a DSN for it in the form of
// FENCEDSQL_PG_DSN (URL or keyword/value) for the "pgx" driver.
func Postgres(t testing.TB) string {
	t.Helper()
	admin := NeedServer(t, EnvPostgres, "PostgreSQL")
	name := uniqueName(t)
	dsn, err := postgresWithDatabase(admin, name)
	if err != nil {
		t.Fatalf("testdb: %s: %v", EnvPostgres, err)
	}
	if err := withDB("pgx", admin, func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(ctx, "CREATE DATABASE "+quotePG(name)+pgCreateStrategy(ctx, db))
		return err
	}); err != nil {
		t.Fatalf("testdb: creating PostgreSQL database %s on %s: %s", name, Redact(admin), redactErr(admin, err))
	}
	t.Cleanup(func() {
		if err := withDB("pgx", admin, func(ctx context.Context, db *sql.DB) error {
			_, err := db.ExecContext(ctx, "DROP DATABASE IF EXISTS "+quotePG(name)+" WITH (FORCE)")
			return err
		}); err != nil {
			t.Errorf("testdb: dropping PostgreSQL database %s: %s", name, redactErr(admin, err))
		}
	})
	return dsn
}

// pgCreateStrategy is the STRATEGY clause of Postgres's CREATE DATABASE: FILE_COPY on
// PostgreSQL 15 and later, whose default (WAL_LOG) writes the whole template to the WAL
// and takes two to three times as long on the test servers (fsync off) — a test
// database per test makes that a large part of a package's run. Earlier servers copy
// files already and know no STRATEGY clause.
func pgCreateStrategy(ctx context.Context, db *sql.DB) string {
	var v int
	if err := db.QueryRowContext(ctx, "SELECT current_setting('server_version_num')::int").Scan(&v); err != nil || v < 150000 {
		return ""
	}
	return " STRATEGY FILE_COPY"
}

// MySQL creates a fresh database with a unique name on the MariaDB/MySQL
// server named by FENCEDSQL_MYSQL_DSN, drops it in t.Cleanup (after killing
// connections still using it) and returns a go-sql-driver/mysql DSN for it.
// The caller's parameters (parseTime=true, ...) are kept, and the DSN always
// has at least one parameter after '?', so appending "&name=value" is valid.
func MySQL(t testing.TB) string {
	t.Helper()
	admin := NeedServer(t, EnvMySQL, "MySQL/MariaDB")
	name := uniqueName(t)
	dsn, err := mysqlWithDatabase(admin, name)
	if err != nil {
		t.Fatalf("testdb: %s: %v", EnvMySQL, err)
	}
	adminDSN, _ := mysqlWithDatabase(admin, "")
	if err := withDB("mysql", adminDSN, func(ctx context.Context, db *sql.DB) error {
		_, err := db.ExecContext(ctx, "CREATE DATABASE "+quoteMySQL(name))
		return err
	}); err != nil {
		t.Fatalf("testdb: creating MySQL database %s on %s: %s", name, Redact(admin), redactErr(admin, err))
	}
	t.Cleanup(func() {
		if err := withDB("mysql", adminDSN, func(ctx context.Context, db *sql.DB) error {
			return dropMySQL(ctx, db, name)
		}); err != nil {
			t.Errorf("testdb: dropping MySQL database %s: %s", name, redactErr(admin, err))
		}
	})
	return dsn
}

// Redis returns the address in FENCEDSQL_REDIS_ADDR, after checking that the
// server answers, and a key prefix unique to this test (it ends in ':').
// Keys starting with the prefix are deleted in t.Cleanup (SCAN + DEL).
func Redis(t testing.TB) (addr, prefix string) {
	t.Helper()
	addr = NeedServer(t, EnvRedis, "Redis")
	prefix = "fencedsql:" + uniqueName(t) + ":"
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	err := rdb.Ping(ctx).Err()
	_ = rdb.Close()
	if err != nil {
		t.Fatalf("testdb: Redis at %s (%s) does not answer: %v", addr, EnvRedis, err)
	}
	t.Cleanup(func() {
		if err := deleteRedisPrefix(addr, prefix); err != nil {
			t.Errorf("testdb: deleting Redis keys %s*: %v", prefix, err)
		}
	})
	return addr, prefix
}

// SQLite returns a DSN for the modernc.org/sqlite driver ("sqlite") naming a
// new database file in t.TempDir(), with busy_timeout set to 5s. The DSN
// has a '?' parameter list, so appending "&_pragma=..." is valid.
func SQLite(t testing.TB) string {
	t.Helper()
	path := filepath.Join(t.TempDir(), "db.sqlite")
	// A "file:" URI: escape the path, since t.TempDir() keeps characters such
	// as '#', '%' and '?' of the test name that mean something in a URI.
	return "file:" + (&url.URL{Path: filepath.ToSlash(path)}).EscapedPath() + "?_pragma=busy_timeout(5000)"
}

// Redact returns dsn with its password replaced by "xxxxx", for messages.
// It understands pgx URLs and keyword/value strings and go-sql-driver DSNs;
// anything else it cannot parse comes back as "<redacted>".
func Redact(dsn string) string {
	switch {
	case strings.HasPrefix(dsn, "postgres://"), strings.HasPrefix(dsn, "postgresql://"):
		u, err := url.Parse(dsn)
		if err != nil {
			return "<redacted>"
		}
		return u.Redacted()
	case isPGKeywordValue(dsn):
		if pw := dsnPassword(dsn); pw != "" {
			return strings.ReplaceAll(dsn, pw, "xxxxx")
		}
		return dsn
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return "<redacted>"
	}
	if cfg.Passwd != "" {
		cfg.Passwd = "xxxxx"
	}
	return cfg.FormatDSN()
}

// ---------------------------------------------------------------- helpers

// uniqueName is "t_" + the test name (lower case, runs of other characters
// turned into one '_', shortened to fit) + "_" + 12 random hex digits: at
// most 63 characters, a valid unquoted identifier on every backend.
func uniqueName(t testing.TB) string {
	var b strings.Builder
	underscore := true // no leading '_' after "t_"
	for _, r := range strings.ToLower(t.Name()) {
		if r >= 'a' && r <= 'z' || r >= '0' && r <= '9' {
			b.WriteRune(r)
			underscore = false
		} else if !underscore {
			b.WriteByte('_')
			underscore = true
		}
	}
	var rnd [6]byte
	if _, err := rand.Read(rnd[:]); err != nil {
		t.Fatalf("testdb: random name: %v", err)
	}
	suffix := hex.EncodeToString(rnd[:])
	mid := strings.Trim(b.String(), "_")
	if max := maxNameLen - len("t_") - len("_") - len(suffix); len(mid) > max {
		mid = strings.TrimRight(mid[:max], "_")
	}
	if mid == "" {
		return "t_" + suffix
	}
	return "t_" + mid + "_" + suffix
}

func quotePG(name string) string    { return `"` + strings.ReplaceAll(name, `"`, `""`) + `"` }
func quoteMySQL(name string) string { return "`" + strings.ReplaceAll(name, "`", "``") + "`" }

// withDB opens a short-lived pool, runs fn with a deadline and closes the
// pool again, so no handle (or its goroutines) outlives the call.
func withDB(driver, dsn string, fn func(context.Context, *sql.DB) error) error {
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return err
	}
	defer db.Close()
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	return fn(ctx, db)
}

func isPGKeywordValue(dsn string) bool {
	return !strings.Contains(dsn, "://") && strings.Contains(dsn, "=") && !strings.Contains(dsn, "@") &&
		!strings.Contains(dsn, "tcp(") && !strings.Contains(dsn, "unix(")
}

// postgresWithDatabase returns admin with its database replaced by name.
func postgresWithDatabase(admin, name string) (string, error) {
	if _, err := pgx.ParseConfig(admin); err != nil {
		return "", fmt.Errorf("cannot parse %s: %s", Redact(admin), redactErr(admin, err))
	}
	if strings.HasPrefix(admin, "postgres://") || strings.HasPrefix(admin, "postgresql://") {
		u, err := url.Parse(admin)
		if err != nil {
			return "", fmt.Errorf("cannot parse %s", Redact(admin))
		}
		u.Path = "/" + name
		u.RawPath = ""
		return u.String(), nil
	}
	// keyword/value: a later dbname overrides an earlier one.
	return admin + " dbname=" + name, nil
}

// mysqlWithDatabase returns admin with its database replaced by name ("" for
// none), re-encoded by the driver, with at least one parameter after '?'.
func mysqlWithDatabase(admin, name string) (string, error) {
	cfg, err := mysql.ParseDSN(admin)
	if err != nil {
		return "", fmt.Errorf("cannot parse %s: %s", Redact(admin), redactErr(admin, err))
	}
	cfg.DBName = name
	dsn := cfg.FormatDSN()
	if !strings.Contains(dsn[strings.LastIndex(dsn, "/"):], "?") {
		// loc=UTC is the driver's default: a no-op that opens the list.
		dsn += "?loc=UTC"
	}
	return dsn, nil
}

// dropMySQL drops database name. It first drops it without ending any session, with
// metadata-lock waits bounded (5 s): only a session of the test still holding a lock
// there (an open transaction) makes DROP DATABASE wait. When that wait runs out, it
// kills the sessions whose current database is name and drops it again. Killing first,
// as it did, ended other tests' sessions: a session reading information_schema's
// views, routines or triggers shows, while its statement opens another database's
// object, that database as its own in the process list — which the other test's clean-up
// then killed mid-query ("invalid connection" in schema.Check under parallel load,
// seen in a general log in session 33).
func dropMySQL(ctx context.Context, db *sql.DB, name string) error {
	c, err := db.Conn(ctx)
	if err != nil {
		return err
	}
	defer c.Close()
	drop := "DROP DATABASE IF EXISTS " + quoteMySQL(name)
	if _, err := c.ExecContext(ctx, "SET SESSION lock_wait_timeout = 5"); err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, drop)
	if _, rerr := c.ExecContext(ctx, "SET SESSION lock_wait_timeout = DEFAULT"); rerr != nil && err == nil {
		err = rerr
	}
	var me *mysql.MySQLError
	if err == nil || !errors.As(err, &me) || me.Number != 1205 {
		return err
	}
	if err := killMySQLSessionsIn(ctx, c, name); err != nil {
		return err
	}
	_, err = c.ExecContext(ctx, drop)
	return err
}

// killMySQLSessionsIn kills, from c, the sessions whose current database is name.
func killMySQLSessionsIn(ctx context.Context, c *sql.Conn, name string) error {
	rows, err := c.QueryContext(ctx,
		"SELECT id FROM information_schema.processlist WHERE db = ? AND id <> CONNECTION_ID()", name)
	if err != nil {
		return err
	}
	var ids []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			rows.Close()
			return err
		}
		ids = append(ids, id)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return err
	}
	for _, id := range ids {
		// The connection may be gone already (ER_NO_SUCH_THREAD, 1094).
		if _, err := c.ExecContext(ctx, "KILL CONNECTION "+strconv.FormatInt(id, 10)); err != nil {
			var me *mysql.MySQLError
			if !errors.As(err, &me) || me.Number != 1094 {
				return err
			}
		}
	}
	return nil
}

func deleteRedisPrefix(addr, prefix string) error {
	ctx, cancel := context.WithTimeout(context.Background(), adminTimeout)
	defer cancel()
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	// The prefix holds only [a-z0-9_:], none of them special in a glob.
	iter := rdb.Scan(ctx, 0, prefix+"*", 1000).Iterator()
	var batch []string
	flush := func() error {
		if len(batch) == 0 {
			return nil
		}
		err := rdb.Del(ctx, batch...).Err()
		batch = batch[:0]
		return err
	}
	for iter.Next(ctx) {
		batch = append(batch, iter.Val())
		if len(batch) == 500 {
			if err := flush(); err != nil {
				return err
			}
		}
	}
	if err := iter.Err(); err != nil {
		return err
	}
	return flush()
}

// dsnPassword extracts the password of a PostgreSQL or MySQL DSN ("" if none
// or unparsable).
func dsnPassword(dsn string) string {
	if strings.Contains(dsn, "://") || isPGKeywordValue(dsn) {
		cfg, err := pgx.ParseConfig(dsn)
		if err != nil {
			return ""
		}
		return cfg.Password
	}
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		return ""
	}
	return cfg.Passwd
}

// redactErr renders err with dsn's password blotted out, should a driver
// ever quote it.
func redactErr(dsn string, err error) string {
	msg := err.Error()
	if pw := dsnPassword(dsn); len(pw) >= 4 {
		msg = strings.ReplaceAll(msg, pw, "xxxxx")
	}
	return msg
}
