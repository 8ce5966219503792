package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"

	"entgo.io/ent/dialect/sql/sqlgraph"
	"github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/pgconn"
	"modernc.org/sqlite"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	_ "github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A unique violation is a *fencedsql.DuplicateError on every path — a statement sent
// directly, one database/sql (or go-sql-driver/mysql's driver.ErrSkip) chose to
// prepare, an explicitly prepared one, the same in a transaction, the legacy Execer
// reached through sql.Conn.Raw, rows that report it while they stream, and Commit —
// for guarded and unguarded tables alike. The driver's own error stays reachable with
// errors.As, the message matches what text-matching ORMs look for (ent's
// IsUniqueConstraintError, as on the raw driver) and never quotes the duplicated value.
func TestDuplicateErrorOnEveryPath(t *testing.T) {
	type server struct {
		name, driver, dsn string
		ph                func(int) string
		ddl               []string
		driverErr         func(error) bool
		deferred          bool // unique constraints can be checked at commit
		returning         bool
	}
	pgph := func(i int) string { return "$" + string(rune('0'+i)) }
	myph := func(int) string { return "?" }
	servers := map[string]func(t *testing.T) server{
		"sqlite": func(t *testing.T) server {
			return server{name: "sqlite", driver: "fenced-sqlite", dsn: testdb.SQLite(t) + "&fenced_tables=g&fenced_allow=ddl", ph: myph,
				ddl: []string{
					`CREATE TABLE g (id INT PRIMARY KEY, name TEXT NOT NULL UNIQUE, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
					`CREATE TABLE u (id INT PRIMARY KEY, name TEXT NOT NULL UNIQUE)`,
				},
				driverErr: func(err error) bool { var se *sqlite.Error; return errors.As(err, &se) && se.Code() == 2067 },
				returning: true}
		},
		"mysql": func(t *testing.T) server {
			return server{name: "mysql", driver: "fenced-mysql", dsn: testdb.MySQL(t) + "&fenced_tables=g&fenced_allow=ddl", ph: myph,
				ddl: []string{
					`CREATE TABLE g (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL UNIQUE, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
					`CREATE TABLE u (id INT PRIMARY KEY, name VARCHAR(20) NOT NULL UNIQUE)`,
				},
				driverErr: func(err error) bool { var me *mysql.MySQLError; return errors.As(err, &me) && me.Number == 1062 }}
		},
		"postgres": func(t *testing.T) server {
			return server{name: "postgres", driver: "fenced-pgx", dsn: pgParam(testdb.Postgres(t), "fenced_tables=g&fenced_allow=ddl"), ph: pgph,
				ddl: []string{
					`CREATE TABLE g (id INT PRIMARY KEY, name TEXT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0,
						CONSTRAINT g_name UNIQUE (name) DEFERRABLE INITIALLY IMMEDIATE)`,
					`CREATE TABLE u (id INT PRIMARY KEY, name TEXT NOT NULL, CONSTRAINT u_name UNIQUE (name) DEFERRABLE INITIALLY IMMEDIATE)`,
				},
				driverErr: func(err error) bool { var pe *pgconn.PgError; return errors.As(err, &pe) && pe.Code == "23505" },
				deferred:  true, returning: true}
		},
	}
	for name, mk := range servers {
		t.Run(name, func(t *testing.T) {
			srv := mk(t)
			db, err := sql.Open(srv.driver, srv.dsn)
			if err != nil {
				t.Fatal(err)
			}
			defer db.Close()
			ctx := fencedsql.WithToken(context.Background(), 5)
			for _, q := range srv.ddl {
				if _, err := db.ExecContext(ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			for _, table := range []string{"g", "u"} {
				if _, err := db.ExecContext(ctx, `INSERT INTO `+table+` (id, name) VALUES (1, 'taken')`); err != nil {
					t.Fatal(err)
				}
				ins := `INSERT INTO ` + table + ` (id, name) VALUES (` + srv.ph(1) + `, ` + srv.ph(2) + `)`
				paths := map[string]func() error{
					"direct, no arguments": func() error {
						_, err := db.ExecContext(ctx, `INSERT INTO `+table+` (id, name) VALUES (2, 'taken')`)
						return err
					},
					"direct, arguments": func() error { _, err := db.ExecContext(ctx, ins, 2, "taken"); return err },
					"prepared": func() error {
						st, err := db.PrepareContext(ctx, ins)
						if err != nil {
							return err
						}
						defer st.Close()
						_, err = st.ExecContext(ctx, 2, "taken")
						return err
					},
					"in a transaction": func() error {
						tx, err := db.BeginTx(ctx, nil)
						if err != nil {
							return err
						}
						defer tx.Rollback()
						_, err = tx.ExecContext(ctx, ins, 2, "taken")
						return err
					},
					"prepared in a transaction": func() error {
						tx, err := db.BeginTx(ctx, nil)
						if err != nil {
							return err
						}
						defer tx.Rollback()
						st, err := tx.PrepareContext(ctx, ins)
						if err != nil {
							return err
						}
						_, err = st.ExecContext(ctx, 2, "taken")
						return err
					},
					"query (rows)": func() error {
						q := ins
						if srv.returning {
							q += " RETURNING id"
						}
						rows, err := db.QueryContext(ctx, q, 2, "taken")
						if err != nil {
							return err
						}
						for rows.Next() {
						}
						if err := rows.Close(); err != nil {
							return err
						}
						return rows.Err()
					},
					"legacy Execer through Raw": func() error {
						c, err := db.Conn(ctx)
						if err != nil {
							return err
						}
						defer c.Close()
						// The legacy interface has no context: a transaction begun with
						// the token binds it.
						tx, err := c.BeginTx(ctx, nil)
						if err != nil {
							return err
						}
						defer tx.Rollback()
						return c.Raw(func(dc any) error {
							_, err := dc.(driver.Execer).Exec(`INSERT INTO `+table+` (id, name) VALUES (2, 'taken')`, nil) //nolint:staticcheck
							return err
						})
					},
				}
				if srv.deferred {
					paths["Commit"] = func() error {
						tx, err := db.BeginTx(ctx, nil)
						if err != nil {
							return err
						}
						defer tx.Rollback()
						if _, err := tx.ExecContext(ctx, `SET CONSTRAINTS ALL DEFERRED`); err != nil {
							return err
						}
						if _, err := tx.ExecContext(ctx, ins, 2, "taken"); err != nil {
							return err
						}
						return tx.Commit()
					}
				}
				for name, run := range paths {
					err := run()
					var de *fencedsql.DuplicateError
					if !errors.As(err, &de) || !errors.Is(err, fencedsql.ErrDuplicate) || !srv.driverErr(err) {
						t.Errorf("table %s, %s: got %T %v, want *fencedsql.DuplicateError wrapping the driver's unique violation", table, name, err, err)
						continue
					}
					if !sqlgraph.IsUniqueConstraintError(err) || strings.Contains(err.Error(), "taken") {
						t.Errorf("table %s, %s: message %q: want the driver's words that ent's IsUniqueConstraintError matches, and not the value 'taken'", table, name, err)
					}
				}
			}
		})
	}
}

// DuplicateError.Error() starts with the driver's own words for each driver's error
// shape, as the dialect rebuilds them (dialect.ErrorInfo.Words: the PostgreSQL message
// exactly, since it quotes no value; MySQL's rebuilt from its fixed words and names),
// so ent's text match holds as on the raw driver, and never contains the duplicated
// value. (SQLite's are checked against the real driver in TestDuplicateErrorTyped.)
func TestDuplicateErrorText(t *testing.T) {
	const secret = "s3cret@example.com"
	pg := &pgconn.PgError{Severity: "ERROR", Code: "23505", Message: `duplicate key value violates unique constraint "users_email_key"`,
		Detail: "Key (email)=(" + secret + ") already exists.", ConstraintName: "users_email_key", TableName: "users"}
	my := &mysql.MySQLError{Number: 1062, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: "Duplicate entry '" + secret + "' for key 'users.email'"}
	myNoState := &mysql.MySQLError{Number: 1062, Message: "Duplicate entry '" + secret + "' for key 'PRIMARY'"}
	// A value that spells MySQL's own words must not confuse the rebuild.
	myTricky := &mysql.MySQLError{Number: 1062, SQLState: [5]byte{'2', '3', '0', '0', '0'}, Message: "Duplicate entry '" + secret + "' for key 'x' for key 'users.email'"}
	other := errors.New("unique: " + secret)
	// dup builds the error as the wrapper does from the dialect's reading of err.
	dup := func(d dialect.Dialect, err error) *fencedsql.DuplicateError {
		if d == nil {
			return &fencedsql.DuplicateError{Constraint: "uq", Err: err}
		}
		info := d.Classify(err)
		if info.Kind != dialect.ErrorUnique {
			t.Fatalf("%T: Classify(%v).Kind = %v, want ErrorUnique", d, err, info.Kind)
		}
		return &fencedsql.DuplicateError{Table: info.Table, Constraint: info.Constraint, Words: info.Words, Err: err}
	}
	cases := []struct {
		name   string
		err    *fencedsql.DuplicateError
		prefix string
		ent    bool // ent's IsUniqueConstraintError matches the driver's own error
	}{
		{"postgres", dup(postgres.Dialect, pg), pg.Error(), true},
		{"mysql", dup(mysqldialect.Dialect, my), "Error 1062 (23000): Duplicate entry for key 'users.email'", true},
		{"mysql without SQLSTATE", dup(mysqldialect.Dialect, myNoState), "Error 1062: Duplicate entry for key 'PRIMARY'", true},
		{"mysql, value with the key words", dup(mysqldialect.Dialect, myTricky), "Error 1062 (23000): Duplicate entry for key 'users.email'", true},
		{"other driver", dup(nil, other), "fencedsql: write violates unique constraint uq", false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			var err error = c.err
			msg := err.Error()
			if !strings.HasPrefix(msg, c.prefix) {
				t.Errorf("message %q, want it to start with %q", msg, c.prefix)
			}
			if strings.Contains(msg, secret) {
				t.Errorf("message %q quotes the duplicated value", msg)
			}
			if !sqlgraph.IsUniqueConstraintError(err) {
				t.Errorf("message %q: ent's IsUniqueConstraintError is false", msg)
			}
			if c.ent != sqlgraph.IsUniqueConstraintError(c.err.Err) {
				t.Errorf("ent's IsUniqueConstraintError on the driver's own error = %v, want %v", !c.ent, c.ent)
			}
			if !errors.Is(err, fencedsql.ErrDuplicate) || !errors.Is(err, c.err.Err) {
				t.Errorf("errors.Is(ErrDuplicate) or the driver's error lost: %v", err)
			}
		})
	}
}

// pgParam adds a name=value parameter to a pgx DSN, URL or keyword/value.
func pgParam(dsn, kv string) string {
	switch {
	case !strings.HasPrefix(dsn, "postgres://") && !strings.HasPrefix(dsn, "postgresql://"):
		return dsn + " " + kv
	case strings.Contains(dsn, "?"):
		return dsn + "&" + kv
	}
	return dsn + "?" + kv
}
