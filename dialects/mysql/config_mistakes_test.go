package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"net/url"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

func cfgmTyped(err error) bool {
	var ce *fencedsql.ConfigError
	var se *fencedsql.SchemaError
	var ss *fencedsql.SessionError
	return errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrSchema) || errors.Is(err, fencedsql.ErrUnsupported) ||
		errors.Is(err, fencedsql.ErrNoToken) || errors.As(err, &ce) || errors.As(err, &se) || errors.As(err, &ss)
}

// Configuration mistakes on MariaDB (red-team rt51f): session variables in the DSN,
// the sql_mode EMPTY_STRING_IS_NULL, the schema tool run from another database; each
// must be refused with a typed error or be safe.

// System variables given as DSN parameters (go-sql-driver sends each as SET at
// connect), with the guard installed: a stale UPDATE and a stale re-insert of a
// deleted key must be refused with a typed error.
func TestConfigMistakeDSNSystemVariablesMariaDB(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn)
	testdb.Exec(t, raw, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	spec := schema.GuardSpec{Table: "accounts"}
	reps, err := schema.Check(ctx, raw, mysql.Dialect, spec)
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range reps {
		testdb.Exec(t, raw, r.Fix...)
	}
	if err := schema.RegisterTables(ctx, raw, mysql.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	vars := []string{
		"sql_mode='STRICT_TRANS_TABLES,HIGH_NOT_PRECEDENCE'",
		"sql_mode='STRICT_TRANS_TABLES,PIPES_AS_CONCAT'", "sql_mode='STRICT_TRANS_TABLES,IGNORE_SPACE'",
		"sql_mode='STRICT_TRANS_TABLES,NO_UNSIGNED_SUBTRACTION'", "sql_mode='STRICT_TRANS_TABLES,SIMULTANEOUS_ASSIGNMENT'",
		"sql_mode='STRICT_ALL_TABLES'", "sql_mode='STRICT_TRANS_TABLES,TIME_ROUND_FRACTIONAL'", "sql_mode='TRADITIONAL'",
		"check_constraint_checks=0", "tx_isolation='READ-UNCOMMITTED'", "tx_read_only=0", "time_zone='+13:00'", "foreign_key_checks=0", "unique_checks=0", "sql_safe_updates=1", "time_zone='-12:00'",
		"sql_auto_is_null=1", "old_mode='NO_PROGRESS_INFO'", "big_tables=1", "div_precision_increment=0",
		"sql_notes=0", "sql_warnings=1", "max_statement_time=0", "optimizer_switch='index_merge=off'", "sql_if_exists=1",
		"in_predicate_conversion_threshold=1", "tmp_table_size=1024", "sort_buffer_size=32768",
		"insert_id=1", "last_insert_id=5", "lc_time_names='de_DE'", "collation_connection='utf8mb4_bin'",
		"character_set_connection='latin1'", "character_set_results='latin1'", "explicit_defaults_for_timestamp=0",
		"default_storage_engine='MEMORY'", "default_tmp_storage_engine='MEMORY'", "enforce_storage_engine='InnoDB'",
		"innodb_strict_mode=0", "sql_buffer_result=1", "sql_quote_show_create=0", "updatable_views_with_limit=0",
		"max_sort_length=4", "group_concat_max_len=4", "max_error_count=0",
		"sql_mode='STRICT_TRANS_TABLES,REAL_AS_FLOAT'", "sql_mode='STRICT_TRANS_TABLES,PIPES_AS_CONCAT'", "sql_mode='STRICT_TRANS_TABLES,IGNORE_SPACE'", "sql_mode='STRICT_TRANS_TABLES,IGNORE_BAD_TABLE_OPTIONS'", "sql_mode='STRICT_TRANS_TABLES,ONLY_FULL_GROUP_BY'", "sql_mode='STRICT_TRANS_TABLES,NO_UNSIGNED_SUBTRACTION'", "sql_mode='STRICT_TRANS_TABLES,NO_DIR_IN_CREATE'", "sql_mode='STRICT_TRANS_TABLES,NO_KEY_OPTIONS'", "sql_mode='STRICT_TRANS_TABLES,NO_TABLE_OPTIONS'", "sql_mode='STRICT_TRANS_TABLES,NO_FIELD_OPTIONS'", "sql_mode='STRICT_TRANS_TABLES,NO_AUTO_VALUE_ON_ZERO'", "sql_mode='STRICT_TRANS_TABLES,NO_ZERO_IN_DATE'", "sql_mode='STRICT_TRANS_TABLES,NO_ZERO_DATE'", "sql_mode='STRICT_TRANS_TABLES,ALLOW_INVALID_DATES'", "sql_mode='STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO'", "sql_mode='STRICT_TRANS_TABLES,NO_AUTO_CREATE_USER'", "sql_mode='STRICT_TRANS_TABLES,HIGH_NOT_PRECEDENCE'", "sql_mode='STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'", "sql_mode='STRICT_TRANS_TABLES,PAD_CHAR_TO_FULL_LENGTH'", "sql_mode='STRICT_TRANS_TABLES,SIMULTANEOUS_ASSIGNMENT'", "sql_mode='STRICT_TRANS_TABLES,TIME_ROUND_FRACTIONAL'", "sql_mode='STRICT_TRANS_TABLES,MYSQL323'", "sql_mode='STRICT_TRANS_TABLES,MYSQL40'", "sql_mode='STRICT_TRANS_TABLES,TRADITIONAL'",
	}
	for i, v := range vars {
		t.Run(v, func(t *testing.T) {
			id := 100 + i
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO accounts (id, balance) VALUES (%d, 0)", id))
			k := v[:indexByte(v, '=')]
			val := v[indexByte(v, '=')+1:]
			db, err := sql.Open("fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=accounts&"+k+"="+url.QueryEscape(val)))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			q := func(tok uint64, s string) error {
				_, err := db.ExecContext(fencedsql.WithToken(ctx, tok), fmt.Sprintf(s, id))
				return err
			}
			if err := q(10, "UPDATE accounts SET balance = 10 WHERE id = %d"); err != nil {
				if !cfgmTyped(err) {
					t.Errorf("newer: untyped %v", err)
				} else {
					t.Logf("newer refused: %v", err)
				}
				return
			}
			err = q(5, "UPDATE accounts SET balance = 5 WHERE id = %d")
			var b, tok int64
			raw.QueryRow(fmt.Sprintf("SELECT balance, fence_token FROM accounts WHERE id = %d", id)).Scan(&b, &tok)
			if err == nil || b != 10 {
				t.Fatalf("stale UPDATE: err=%v balance=%d token=%d", err, b, tok)
			}
			if !cfgmTyped(err) {
				t.Errorf("stale UPDATE: untyped %v", err)
			}
			if err := q(20, "DELETE FROM accounts WHERE id = %d"); err != nil {
				t.Logf("delete refused: %v", err)
				return
			}
			err = q(15, "INSERT INTO accounts (id, balance) VALUES (%d, 15)")
			var n int
			raw.QueryRow(fmt.Sprintf("SELECT count(*) FROM accounts WHERE id = %d", id)).Scan(&n)
			if err == nil || n != 0 {
				t.Fatalf("stale re-insert: err=%v rows=%d", err, n)
			}
			if !cfgmTyped(err) {
				t.Errorf("stale re-insert: untyped %v", err)
			}
		})
	}
}

func indexByte(s string, c byte) int {
	for i := 0; i < len(s); i++ {
		if s[i] == c {
			return i
		}
	}
	return -1
}

// sql_mode with EMPTY_STRING_IS_NULL (MariaDB: ” reads as NULL) in the minimal
// set-up (no guard installed): the lazy check's catalog reads must still find an
// unfit table.
func TestConfigMistakeEmptyStringIsNullLazyCheckMariaDB(t *testing.T) {
	dsn := testdb.MySQL(t)
	ctx := context.Background()
	raw := testdb.Open(t, "mysql", dsn)
	var ver string
	raw.QueryRow("SELECT VERSION()").Scan(&ver)
	cases := map[string][]string{
		"nullable": {"CREATE TABLE acc_n (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NULL, version BIGINT NULL)"},
		"trigger": {"CREATE TABLE acc_t (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
			"CREATE TRIGGER acc_t_bu BEFORE UPDATE ON acc_t FOR EACH ROW SET NEW.fence_token = 0"},
		"signed": {"CREATE TABLE acc_f (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token FLOAT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"},
	}
	for name, setup := range cases {
		t.Run(name, func(t *testing.T) {
			testdb.Exec(t, raw, setup...)
			table := map[string]string{"nullable": "acc_n", "trigger": "acc_t", "signed": "acc_f"}[name]
			testdb.Exec(t, raw, "INSERT INTO "+table+" (id, balance) VALUES (1, 0)")
			plain, err := sql.Open("fenced-mysql", fencetest.WithParam(dsn, "fenced_tables="+table))
			if err != nil {
				t.Fatal(err)
			}
			defer plain.Close()
			_, perr := plain.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE "+table+" SET balance = 10 WHERE id = 1")
			t.Logf("default sql_mode: %v", perr)
			db, err := sql.Open("fenced-mysql", fencetest.WithParam(dsn, "fenced_tables="+table+"&sql_mode="+url.QueryEscape("'STRICT_TRANS_TABLES,EMPTY_STRING_IS_NULL'")))
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			_, err1 := db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE "+table+" SET balance = 10 WHERE id = 1")
			_, err2 := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE "+table+" SET balance = 5 WHERE id = 1")
			var b int64
			raw.QueryRow("SELECT balance FROM " + table + " WHERE id = 1").Scan(&b)
			t.Logf("EMPTY_STRING_IS_NULL: newer %v; older %v; balance %d", err1, err2, b)
			if perr != nil && (err1 == nil || err2 == nil) {
				t.Fatalf("a table the default session refuses (%v) is written under EMPTY_STRING_IS_NULL: newer %v, older %v, balance %d", perr, err1, err2, b)
			}
		})
	}
}

// schema.Check and RegisterTables run from another database's connection (db1) for
// db2.accounts with custom columns (tok/ver): the registry goes to db1, the guard to
// db2. A pool on db2 that lists accounts with the default columns, while a correct
// pool writes tok: the stale write must be refused.
func TestConfigMistakeToolingFromOtherDatabaseMariaDB(t *testing.T) {
	dsn1, dsn2 := testdb.MySQL(t), testdb.MySQL(t)
	ctx := context.Background()
	raw1, raw2 := testdb.Open(t, "mysql", dsn1), testdb.Open(t, "mysql", dsn2)
	var db2 string
	raw2.QueryRow("SELECT DATABASE()").Scan(&db2)
	testdb.Exec(t, raw2, "CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id, balance) VALUES (1, 0)")
	spec := schema.GuardSpec{Table: db2 + ".accounts", TokenColumn: "tok", VersionColumn: "ver"}
	fencetest.Guard(t, ctx, raw1, mysql.Dialect, spec)
	if err := schema.RegisterTables(ctx, raw1, mysql.Dialect, spec); err != nil {
		t.Fatal(err)
	}
	good := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn2, "fenced_tables=accounts&fenced_token_column=tok&fenced_version_column=ver"))
	bad := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn2, "fenced_tables=accounts"))
	if _, err := good.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 10 WHERE id = 1"); err != nil {
		t.Logf("correct pool refused: %v", err)
	}
	_, err := bad.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE accounts SET balance = 5 WHERE id = 1")
	var b, tk int64
	raw2.QueryRow("SELECT balance, tok FROM accounts WHERE id = 1").Scan(&b, &tk)
	if err == nil || b == 5 {
		t.Fatalf("stale write through the pool listing the default columns: err=%v balance=%d tok=%d", err, b, tk)
	}
	if !cfgmTyped(err) {
		t.Fatalf("untyped: %v", err)
	}
	t.Logf("refused: %.300v", err)
}
