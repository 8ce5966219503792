// The schema and session checks at a pool's first connection, over go-sqlmock.

package fencedsql_test

import (
	"context"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

func TestSchemaCheckCachedPerTable(t *testing.T) {
	type setup struct {
		colsQuery string
		colsArgs  []driver.Value
		session   bool
		update    string
		updArgs   []driver.Value
		in        string
	}
	setups := map[string]setup{
		"postgres": {pgColumns, []driver.Value{"accounts"}, false,
			`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`, []driver.Value{int64(1), int64(7)},
			`UPDATE accounts SET x = $1`},
		"mysql": {mysqlColumns, []driver.Value{"", "accounts"}, true,
			"UPDATE accounts SET x = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END", []driver.Value{int64(1), int64(7), int64(7)},
			`UPDATE accounts SET x = ?`},
		"sqlite": {sqliteColumns, []driver.Value{"accounts"}, false,
			`UPDATE accounts SET x = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`, []driver.Value{int64(1), int64(7), int64(7)},
			`UPDATE accounts SET x = ?`},
	}
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			s := setups[dc.name]
			db, mock := newMockDB(t, dc.d, fencedsql.WithSchemaCheck(true))
			expectOpen(mock, dc.d, s.colsArgs)
			if s.session {
				expectSessionCheck(mock, mysqldialect.Dialect)
			}
			expectPGFirstSession(mock, dc.d)
			expectSQLiteSession(mock, dc.d)
			expectNamePath(mock, dc.d)
			mock.ExpectQuery(s.colsQuery).WithArgs(s.colsArgs...).WillReturnRows(columnRows(goodColumns...))
			expectLint(t, mock, dc.d, "accounts")
			mock.ExpectExec(s.update).WithArgs(s.updArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			// The second write sends no column check query (nor a session query, but on
			// PostgreSQL under a driver that does not track the session, sqlmock here).
			expectPGSession(mock, dc.d)
			mock.ExpectExec(s.update).WithArgs(s.updArgs...).WillReturnResult(sqlmock.NewResult(0, 1))
			for range 2 {
				if _, err := db.ExecContext(withTok(7), s.in, 1); err != nil {
					t.Fatal(err)
				}
			}
			mockMet(t, mock)
		})
	}
}

func TestSchemaCheckMissingColumn(t *testing.T) {
	cases := map[string]struct {
		d     dialect.Dialect
		query string
		args  []driver.Value
		in    string
		ddl   string
		out   string
		oargs []driver.Value
	}{
		"postgres": {postgres.Dialect, pgColumns, []driver.Value{"accounts"}, `UPDATE accounts SET x = $1`,
			`ALTER TABLE accounts ADD COLUMN "version" BIGINT NOT NULL DEFAULT 0`,
			`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`,
			[]driver.Value{int64(1), int64(7)}},
		"sqlite": {sqlite.Dialect, sqliteColumns, []driver.Value{"accounts"}, `UPDATE accounts SET x = ?`,
			`ALTER TABLE accounts ADD COLUMN "version" BIGINT NOT NULL DEFAULT 0`,
			`UPDATE accounts SET x = ?, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= ? THEN ? ELSE NULL END`,
			[]driver.Value{int64(1), int64(7), int64(7)}},
	}
	for name, c := range cases {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, c.d, fencedsql.WithSchemaCheck(true))
			expectOpen(mock, c.d, c.args)
			expectPGFirstSession(mock, c.d)
			expectSQLiteSession(mock, c.d)
			expectNamePath(mock, c.d)
			mock.ExpectQuery(c.query).WithArgs(c.args...).WillReturnRows(columnRows("id:1", "fence_token:1"))
			_, err := db.ExecContext(withTok(7), c.in, 1)
			if !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("err = %v, want ErrSchema", err)
			}
			var se *fencedsql.SchemaError
			if !errors.As(err, &se) || se.Table != "accounts" {
				t.Errorf("SchemaError = %+v", se)
			}
			if !strings.Contains(err.Error(), c.ddl) {
				t.Errorf("message %q lacks the DDL %q", err, c.ddl)
			}
			mockMet(t, mock)

			// Failures are not cached: once the column exists the write goes through.
			expectPGSession(mock, c.d)
			mock.ExpectQuery(c.query).WithArgs(c.args...).WillReturnRows(columnRows(goodColumns...))
			expectLint(t, mock, c.d, "accounts")
			mock.ExpectExec(c.out).WithArgs(c.oargs...).WillReturnResult(sqlmock.NewResult(0, 1))
			if _, err := db.ExecContext(withTok(7), c.in, 1); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

func TestSchemaCheckFailures(t *testing.T) {
	t.Run("both columns missing (mysql)", func(t *testing.T) {
		db, mock := newMockDB(t, mysqldialect.Dialect, fencedsql.WithSchemaCheck(true))
		expectOpen(mock, mysqldialect.Dialect, []driver.Value{"", "accounts"})
		expectSessionCheck(mock, mysqldialect.Dialect)
		expectNamePath(mock, mysqldialect.Dialect)
		mock.ExpectQuery(mysqlColumns).WithArgs("", "accounts").WillReturnRows(columnRows("id:1"))
		_, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = ?`, 1)
		if !errors.Is(err, fencedsql.ErrSchema) {
			t.Fatalf("err = %v, want ErrSchema", err)
		}
		ddl := "ALTER TABLE accounts ADD COLUMN `fence_token` BIGINT NOT NULL DEFAULT 0, ADD COLUMN `version` BIGINT NOT NULL DEFAULT 0"
		if !strings.Contains(err.Error(), ddl) {
			t.Errorf("message %q lacks %q", err, ddl)
		}
		mockMet(t, mock)
	})
	t.Run("nullable token column", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect, fencedsql.WithSchemaCheck(true))
		expectOpen(mock, postgres.Dialect, []driver.Value{"accounts"})
		expectPGFirstSession(mock, postgres.Dialect)
		expectNamePath(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnRows(columnRows("id:1", "fence_token:0", "version:1"))
		_, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = $1`, 1)
		if !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "fence_token") {
			t.Fatalf("err = %v, want ErrSchema naming fence_token", err)
		}
		mockMet(t, mock)
	})
	t.Run("no such table", func(t *testing.T) {
		// A listed table that does not exist fails the pool's first connection, whatever
		// the statement (here one that does not even name it): a typo in fenced_tables
		// never leaves the table meant unguarded without a word.
		db, mock := newMockDB(t, postgres.Dialect, fencedsql.WithSchemaCheck(true))
		expectRecords(mock, postgres.Dialect)
		expectDescendants(mock, postgres.Dialect, "accounts")
		expectCatalogViews(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnRows(columnRows())
		_, err := db.ExecContext(withTok(7), `UPDATE other SET x = $1`, 1)
		var se *fencedsql.SchemaError
		if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Table != "accounts" || !strings.Contains(err.Error(), "no such table") {
			t.Fatalf("err = %v, want ErrSchema naming accounts", err)
		}
		mockMet(t, mock)
	})
	t.Run("check query fails, then succeeds", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect, fencedsql.WithSchemaCheck(true))
		boom := errors.New("boom")
		expectOpen(mock, postgres.Dialect, []driver.Value{"accounts"})
		expectPGFirstSession(mock, postgres.Dialect)
		expectNamePath(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnError(boom)
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnRows(columnRows(goodColumns...))
		expectLint(t, mock, postgres.Dialect, "accounts")
		mock.ExpectExec(`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`).
			WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		_, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = $1`, 1)
		if !errors.Is(err, fencedsql.ErrSchema) || !errors.Is(err, boom) {
			t.Fatalf("err = %v, want ErrSchema wrapping the query's error", err)
		}
		if _, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = $1`, 1); err != nil {
			t.Fatal(err)
		}
		mockMet(t, mock)
	})
	t.Run("schema-qualified guard", func(t *testing.T) {
		db, mock := newMockDB(t, postgres.Dialect, fencedsql.Guard("shop.orders"), fencedsql.WithSchemaCheck(true))
		expectOpen(mock, postgres.Dialect, []driver.Value{"accounts"}, []driver.Value{"shop.orders"})
		expectPGFirstSession(mock, postgres.Dialect)
		expectNamePath(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("shop.orders").WillReturnRows(columnRows(goodColumns...))
		expectLint(t, mock, postgres.Dialect, "shop.orders")
		mock.ExpectExec(`INSERT INTO shop.orders (id, "fence_token", "version") VALUES ($1, $2, 1)`).WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		// another guarded table is checked on its own first write
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectQuery(pgColumns).WithArgs("accounts").WillReturnRows(columnRows(goodColumns...))
		expectLint(t, mock, postgres.Dialect, "accounts")
		mock.ExpectExec(`INSERT INTO accounts (id, "fence_token", "version") VALUES ($1, $2, 1)`).WithArgs(int64(1), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		expectPGSession(mock, postgres.Dialect)
		mock.ExpectExec(`INSERT INTO shop.orders (id, "fence_token", "version") VALUES ($1, $2, 1)`).WithArgs(int64(2), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		for _, s := range []struct {
			q  string
			id int
		}{{`INSERT INTO shop.orders (id) VALUES ($1)`, 1}, {`INSERT INTO accounts (id) VALUES ($1)`, 1}, {`INSERT INTO shop.orders (id) VALUES ($1)`, 2}} {
			if _, err := db.ExecContext(withTok(7), s.q, s.id); err != nil {
				t.Fatal(err)
			}
		}
		mockMet(t, mock)
	})
	t.Run("custom columns", func(t *testing.T) {
		db, mock := newMockDB(t, sqlite.Dialect, fencedsql.Guard("jobs", fencedsql.TokenColumn("ft"), fencedsql.VersionColumn("ver")), fencedsql.WithSchemaCheck(true))
		expectOpen(mock, sqlite.Dialect, []driver.Value{"accounts"}, []driver.Value{"jobs"})
		expectSQLiteSession(mock, sqlite.Dialect)
		expectNamePath(mock, sqlite.Dialect)
		mock.ExpectQuery(sqliteColumns).WithArgs("jobs").WillReturnRows(columnRows("id:1", "fence_token:1", "version:1"))
		_, err := db.ExecContext(withTok(7), `UPDATE jobs SET state = ?`, "done")
		if !errors.Is(err, fencedsql.ErrSchema) {
			t.Fatalf("err = %v, want ErrSchema", err)
		}
		for _, want := range []string{`ADD COLUMN "ft" BIGINT NOT NULL DEFAULT 0`, `ADD COLUMN "ver" BIGINT NOT NULL DEFAULT 0`} {
			if !strings.Contains(err.Error(), want) {
				t.Errorf("message %q lacks %q", err, want)
			}
		}
		mockMet(t, mock)
	})
}

func TestSessionCheckMySQL(t *testing.T) {
	if q := mysqldialect.Dialect.SessionQuery(); q != mysqlSession {
		t.Fatalf("SessionQuery = %q, want %q", q, mysqlSession)
	}
	for _, v := range []string{mysqlGood, mysqldialect.SessionOK} {
		if err := mysqldialect.Dialect.CheckSession(v); err != nil {
			t.Fatalf("CheckSession(%q) = %v", v, err)
		}
	}
	for name, c := range map[string]struct{ value, setting string }{
		"not strict":             {"NO_ENGINE_SUBSTITUTION utf8mb4" + mysqlRest, "sql_mode"},
		"empty":                  {" utf8mb4" + mysqlRest, "sql_mode"},
		"ANSI_QUOTES":            {"STRICT_TRANS_TABLES,ANSI_QUOTES utf8mb4" + mysqlRest, "sql_mode"},
		"NO_BACKSLASH_ESCAPES":   {"STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES utf8mb4" + mysqlRest, "sql_mode"},
		"autocommit off":         {strictMode + " utf8mb4 1 0 NO_CHAIN 1700000000.000000 20 0 1 1 0 0 0" + mysqlRecords, "autocommit"},
		"completion_type CHAIN":  {strictMode + " utf8mb4 1 1 CHAIN 1700000000.000000 20 0 1 1 0 0 0" + mysqlRecords, "completion_type"},
		"clock set back":         {strictMode + " utf8mb4 1 1 NO_CHAIN 1000000000.000000 700000000000000 0 1 1 0 0 0" + mysqlRecords, "timestamp"},
		"skip_replication":       {strictMode + " utf8mb4 1 1 NO_CHAIN 1700000000.000000 20 1 1 1 0 0 0" + mysqlRecords, "skip_replication"},
		"the old three fields":   {strictMode + " utf8mb4 1", "sql_mode, character_set_client, sql_log_bin, autocommit, completion_type, timestamp"},
		"system_versioning_asof": {strictMode + " utf8mb4 1 1 NO_CHAIN 1700000000.000000 20 0 1 1 0 0 0 2020-01-01_00:00:00.000000 0 0" + mysqlRecords, "system_versioning_asof"},
		"wsrep_on off on Galera": {strictMode + " utf8mb4 1 1 NO_CHAIN 1700000000.000000 20 0 1 1 0 0 0 DEFAULT 0 1" + mysqlRecords, "wsrep_on"},
	} {
		t.Run(name, func(t *testing.T) {
			db, mock := newMockDB(t, mysqldialect.Dialect, fencedsql.WithSchemaCheck(true))
			expectOpenAccounts(mock, mysqldialect.Dialect)
			mock.ExpectQuery(mysqlSession).WillReturnRows(sqlmock.NewRows([]string{"m"}).AddRow(c.value))
			_, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = ?`, 1)
			var se *fencedsql.SessionError
			if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Setting != c.setting {
				t.Fatalf("err = %v, want a SessionError for %s (ErrSchema)", err, c.setting)
			}
			mockMet(t, mock) // neither the column check nor the write was sent
		})
	}

	t.Run("SET sql_mode makes the session check run again", func(t *testing.T) {
		db, mock := newMockDB(t, mysqldialect.Dialect, fencedsql.WithSchemaCheck(true))
		expectOpenAccounts(mock, mysqldialect.Dialect)
		upd := "UPDATE accounts SET x = ?, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"
		expectSessionCheck(mock, mysqldialect.Dialect)
		expectNamePath(mock, mysqldialect.Dialect)
		mock.ExpectQuery(mysqlColumns).WithArgs("", "accounts").WillReturnRows(columnRows(goodColumns...))
		expectLint(t, mock, mysqldialect.Dialect, "accounts")
		mock.ExpectExec(upd).WithArgs(int64(1), int64(7), int64(7)).WillReturnResult(sqlmock.NewResult(0, 1))
		mock.ExpectExec("SET SESSION sql_mode = ''").WillReturnResult(sqlmock.NewResult(0, 0))
		mock.ExpectQuery(mysqlSession).WillReturnRows(sqlmock.NewRows([]string{"m"}).AddRow(" utf8mb4" + mysqlRest))
		if _, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = ?`, 1); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(context.Background(), "SET SESSION sql_mode = ''"); err != nil {
			t.Fatal(err)
		}
		if _, err := db.ExecContext(withTok(7), `UPDATE accounts SET x = ?`, 1); !errors.Is(err, fencedsql.ErrSchema) {
			t.Fatalf("after SET sql_mode: err = %v, want ErrSchema", err)
		}
		mockMet(t, mock)
	})
}
