package postgres_test

// The listed tables are asserted whatever the options (red-team rt34d; docs/design.md
// G13), on PostgreSQL. See also fencedsql/config_silent_test.go (SQLite) and
// dialects/mysql/config_silent_test.go (MariaDB).

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const accountsDDL = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`

// staleWrite sends UPDATE … WHERE id = id under token 5 (the row holds 10) through
// db and returns the error and the row's balance afterwards, read through raw.
func staleWrite(t *testing.T, db, raw *sql.DB, table string, id int) (error, int64) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()
	_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE "+table+" SET balance = 99 WHERE id = $1", id)
	var b int64
	if qerr := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = $1", id).Scan(&b); qerr != nil {
		t.Fatal(qerr)
	}
	return err, b
}

// TestListedTableCheckedWithSchemaCheckOff (fail-open). fenced_tables=acounts (a
// typo) fails the pool's first use with ErrSchema — unless fenced_schema_check=false
// is in the DSN too: then the listed tables' existence is never asked (registry.go
// returns before checkListed), nothing is logged, and a stale write (token 5 over a
// row at 10) to the real table accounts lands.
//
// Right behaviour: the assertion that the listed tables exist holds whatever the
// schema check says (a real database's "no such table" fails the pool; only a query
// that fails, as a mock's does, may be logged instead): the write is refused with
// ErrSchema, the row keeps balance 1.
func TestListedTableCheckedWithSchemaCheckOff(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acounts&fenced_schema_check=false")
	err, b := staleWrite(t, db, raw, "accounts", 1)
	if err == nil || b != 1 || !errors.Is(err, fencedsql.ErrSchema) {
		t.Errorf("fenced_tables=acounts (typo) + fenced_schema_check=false: stale write returned %v, balance now %d; want ErrSchema naming acounts, balance 1", err, b)
	}
}

// TestListedTableMissingWithDDLRefusesWrites (fail-open). With fenced_allow=ddl a listed
// table that does not exist is logged at Warn and the pool opens; sql.Open cannot be
// given a logger and the default one discards, so a typo (fenced_tables=acounts) in a
// pool that runs migrations leaves accounts unguarded without a word in the minimal
// set-up (no registry, no guard): the stale write lands.
//
// Right behaviour: until every listed table exists, the pool refuses its writes other
// than DDL (checking again at each) with ErrSchema naming the missing table; the stale
// write is refused, balance stays 1.
func TestListedTableMissingWithDDLRefusesWrites(t *testing.T) {
	dsn := testdb.Postgres(t)
	raw := testdb.Open(t, "pgx", dsn, accountsDDL, `INSERT INTO accounts VALUES (1, 1, 10, 1)`)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acounts&fenced_allow=ddl")
	err, b := staleWrite(t, db, raw, "accounts", 1)
	if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "acounts") || b != 1 {
		t.Errorf("fenced_tables=acounts (typo) + fenced_allow=ddl: stale write returned %v, balance now %d; want it refused (ErrSchema naming acounts), balance 1", err, b)
	}
}
