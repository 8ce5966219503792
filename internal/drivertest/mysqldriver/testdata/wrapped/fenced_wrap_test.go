// This file is not part of go-sql-driver/mysql. fencedsql's
// internal/drivertest/mysqldriver adds it, with the adapted driver_test.go next to it,
// to a copy of the driver's module (github.com/go-sql-driver/mysql@v1.10.1) to run the
// driver's published tests through fencedsql's wrapper with no guarded table. It is in
// package mysql because driver_test.go is (it uses unexported identifiers), and it
// declares its own small dialect because fencedsql's dialects/mysql imports this
// package.

package mysql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// fencedDriverName is the driver name the adapted tests open their pools with: this
// package's driver wrapped by fencedsql, with no guarded table.
const fencedDriverName = "fenced-mysql-drivertest"

func init() {
	fencedsql.Register(fencedDriverName, &MySQLDriver{}, fencedsql.WithDialect(fencedDialect{}))
}

// fencedOpenDB replaces sql.OpenDB in the adapted tests: the same connector, opened
// through fencedsql.
func fencedOpenDB(c driver.Connector) *sql.DB {
	return fencedsql.OpenDB(c, fencedsql.WithDialect(fencedDialect{}))
}

// commitErrorAsDriver replaces tx.Commit's error where a test compares it with ==: the
// wrapper returns a failed COMMIT's error inside its commit-outcome error
// (fencedsql.ErrNotCommitted or fencedsql.ErrCommitUnknown), so a driver's
// context.Canceled is found with errors.Is, not ==. It returns context.Canceled for
// such an error, after checking that the outcome is one of the wrapper's.
func commitErrorAsDriver(err error) error {
	if errors.Is(err, context.Canceled) && err != context.Canceled &&
		(errors.Is(err, fencedsql.ErrNotCommitted) || errors.Is(err, fencedsql.ErrCommitUnknown)) {
		return context.Canceled
	}
	return err
}

// fencedDriver replaces &MySQLDriver{} where a test opens connections with the driver
// itself, without database/sql.
func fencedDriver() driver.Driver {
	return fencedsql.Wrap(&MySQLDriver{}, fencedsql.WithDialect(fencedDialect{}))
}

// TestFencedWrapperInUse checks that the adapted tests go through the wrapper: the
// pools they open are fencedsql's, sql.Conn.Raw hands out the wrapper's connection,
// and fencedsql.Unwrap finds the driver's connection under it.
// internal/drivertest/mysqldriver requires it to pass.
func TestFencedWrapperInUse(t *testing.T) {
	if !available {
		t.Skipf("MySQL server not running on %s", netAddr)
	}
	if driverNameTest != fencedDriverName {
		t.Fatalf("the tests open %q, not %q", driverNameTest, fencedDriverName)
	}
	connector, err := NewConnector(configForTests(t))
	if err != nil {
		t.Fatal(err)
	}
	for name, open := range map[string]func() (*sql.DB, error){
		"sql.Open":     func() (*sql.DB, error) { return sql.Open(driverNameTest, dsn) },
		"fencedOpenDB": func() (*sql.DB, error) { return fencedOpenDB(connector), nil },
	} {
		db, err := open()
		if err != nil {
			t.Fatal(err)
		}
		defer db.Close()
		if d := db.Driver(); fencedsql.UnwrapDriver(d) == d {
			t.Errorf("%s: the pool's driver %T is not fencedsql's", name, d)
		}
		conn, err := db.Conn(context.Background())
		if err != nil {
			t.Fatal(err)
		}
		defer conn.Close()
		err = conn.Raw(func(c any) error {
			if _, ok := c.(*mysqlConn); ok {
				t.Errorf("%s: Raw handed out the driver's own connection: the pool is not wrapped", name)
			}
			if _, ok := fencedsql.Unwrap(c).(*mysqlConn); !ok {
				t.Errorf("%s: fencedsql.Unwrap(%T) is %T, not *mysqlConn", name, c, fencedsql.Unwrap(c))
			}
			return nil
		})
		if err != nil {
			t.Fatal(err)
		}
	}
}

// fencedDialect is the part of fencedsql's MySQL dialect the wrapper uses when no table
// is guarded: the lexical rules and the error classification. The catalog queries are
// those of dialects/mysql; there is no session check (it only runs before a guarded
// write).
type fencedDialect struct{}

func (fencedDialect) Name() string           { return "mysql" }
func (fencedDialect) Syntax() dialect.Syntax { return dialect.MySQLSyntax }
func (fencedDialect) NumberedParams() bool   { return false }
func (fencedDialect) QuoteIdent(name string) string {
	return "`" + strings.ReplaceAll(name, "`", "``") + "`"
}

func (fencedDialect) Classify(err error) dialect.ErrorInfo {
	var me *MySQLError
	if !errors.As(err, &me) {
		return dialect.ErrorInfo{}
	}
	switch me.Number {
	case 1048: // Column '…' cannot be null
		col := me.Message
		if i := strings.Index(col, "Column '"); i >= 0 {
			col = col[i+len("Column '"):]
			if j := strings.Index(col, "'"); j >= 0 {
				return dialect.ErrorInfo{Kind: dialect.ErrorNotNull, Column: col[:j]}
			}
		}
		return dialect.ErrorInfo{Kind: dialect.ErrorNotNull}
	case 1062: // Duplicate entry '…' for key '…'
		key := ""
		if i := strings.LastIndex(me.Message, "for key '"); i >= 0 {
			key = strings.TrimSuffix(me.Message[i+len("for key '"):], "'")
		}
		return dialect.ErrorInfo{Kind: dialect.ErrorUnique, Constraint: key}
	}
	return dialect.ErrorInfo{}
}

func (fencedDialect) ColumnsQuery(table dialect.TableName) (string, []any) {
	return "SELECT COLUMN_NAME, IF(IS_NULLABLE = 'NO', 1, 0) FROM information_schema.COLUMNS WHERE TABLE_SCHEMA = COALESCE(NULLIF(?, ''), DATABASE()) AND TABLE_NAME = ?",
		[]any{table.Schema, table.Name}
}

func (d fencedDialect) GuardColumnsDDL(table dialect.TableName, tokenCol, versionCol string, missingToken, missingVersion bool) []string {
	var adds []string
	if missingToken {
		adds = append(adds, "ADD COLUMN "+d.QuoteIdent(tokenCol)+" BIGINT NOT NULL DEFAULT 0")
	}
	if missingVersion {
		adds = append(adds, "ADD COLUMN "+d.QuoteIdent(versionCol)+" BIGINT NOT NULL DEFAULT 0")
	}
	if len(adds) == 0 {
		return nil
	}
	return []string{"ALTER TABLE " + table.Quote(d.QuoteIdent) + " " + strings.Join(adds, ", ")}
}

func (fencedDialect) SessionQuery() string            { return "" }
func (fencedDialect) CheckSession(value string) error { return nil }
