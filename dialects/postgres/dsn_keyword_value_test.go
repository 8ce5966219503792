package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5"
)

// TestKeywordValueBlanksAroundEqualsRead (red-team rt25b F6): libpq's and pgx's
// keyword/value form allows blanks around '=' ("host = h user = fenced …
// fenced_tables = accounts"), and the wrapper reads it as pgx does (removeKeyValue: a
// keyword is the trimmed text before '=', blanks after it skipped): the pool guards
// accounts (a tokenless UPDATE of it is ErrNoToken). Before, the user name "fenced"
// was read as a keyword and refused as an unknown DSN parameter.
func TestKeywordValueBlanksAroundEqualsRead(t *testing.T) {
	ctx := context.Background()
	dsn := testdb.Postgres(t)
	rawWith(t, dsn, `CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`INSERT INTO accounts (id, balance) VALUES (1, 0)`)
	cfg, err := pgx.ParseConfig(dsn)
	if err != nil {
		t.Fatal(err)
	}
	kv := fmt.Sprintf("host = %s port = %d user = %s password = '%s' dbname = %s sslmode = disable fenced_tables = accounts",
		cfg.Host, cfg.Port, cfg.User, strings.ReplaceAll(cfg.Password, "'", `\'`), cfg.Database)
	db, err := sql.Open("fenced-pgx", kv)
	if err == nil {
		defer db.Close()
		_, err = db.ExecContext(ctx, `UPDATE accounts SET balance = 1 WHERE id = 1`)
	}
	if !errors.Is(err, fencedsql.ErrNoToken) {
		t.Errorf("sql.Open(fenced-pgx, \"… fenced_tables = accounts\"): tokenless UPDATE accounts: err = %v; want ErrNoToken (the DSN, valid for pgx, lists accounts)", err)
	}
}
