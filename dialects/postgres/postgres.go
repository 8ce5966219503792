// Package postgres is the PostgreSQL dialect of fencedsql, over pgx v5's database/sql
// driver. Importing it registers the driver name "fenced-pgx":
//
//	import _ "github.com/fencedsql/fencedsql/dialects/postgres"
//	db, err := sql.Open("fenced-pgx", "postgres://app@db/shop?fenced_tables=accounts,orders")
//
// It does not import sqlx: a sqlx user imports dialects/postgres/pgsqlx instead, which
// imports this package and binds "fenced-pgx" to sqlx's $n bind style.
//
// A fenced write that meets a newer token fails with SQLSTATE 23502 (not_null_violation)
// on the token column, which the wrapper reports as fencedsql.ErrFenced; PostgreSQL then
// aborts the transaction, so nothing of it can commit.
package postgres

import (
	"errors"
	"strings"

	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// DriverName is the name this package registers with database/sql.
const DriverName = "fenced-pgx"

// Dialect is the PostgreSQL dialect value for fencedsql.WithDialect.
var Dialect fencedsql.Dialect = dialect{}

func init() {
	fencedsql.Register(DriverName, stdlib.GetDefaultDriver(), fencedsql.WithDialect(Dialect))
}

type dialect struct{}

func (dialect) Name() string             { return "postgres" }
func (dialect) Syntax() fencedsql.Syntax { return fencedsql.PostgresSyntax }
func (dialect) NumberedParams() bool     { return true }
func (dialect) QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Classify maps pgconn errors: 23502 not_null_violation, 23505 unique_violation.
func (dialect) Classify(err error) fencedsql.ErrorInfo {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return fencedsql.ErrorInfo{}
	}
	switch pe.Code {
	case "23502":
		return fencedsql.ErrorInfo{Kind: fencedsql.ErrorNotNull, Column: pe.ColumnName, Table: pe.TableName}
	case "23505":
		return fencedsql.ErrorInfo{Kind: fencedsql.ErrorUnique, Constraint: pe.ConstraintName, Table: pe.TableName}
	case GuardSQLState:
		table := pe.TableName
		if table != "" && pe.SchemaName != "" {
			table = pe.SchemaName + "." + table
		}
		return fencedsql.ErrorInfo{Kind: fencedsql.ErrorGuard, Table: table}
	case FloorSQLState:
		table := pe.TableName
		if table != "" && pe.SchemaName != "" {
			table = pe.SchemaName + "." + table
		}
		return fencedsql.ErrorInfo{Kind: fencedsql.ErrorBelowFloor, Table: table}
	}
	return fencedsql.ErrorInfo{}
}

// ColumnsQuery resolves the table through the session's search_path (to_regclass), as
// the statements themselves do.
func (dialect) ColumnsQuery(table fencedsql.TableName) (query string, args []any) {
	return `SELECT a.attname::text, CASE WHEN a.attnotnull THEN 1 ELSE 0 END FROM pg_catalog.pg_attribute a WHERE a.attrelid = to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, []any{table.String()}
}

// GuardColumnsDDL returns one ALTER TABLE adding the missing columns. The table name
// is left unquoted, so PostgreSQL folds it as it folds the statements' own names.
func (d dialect) GuardColumnsDDL(table fencedsql.TableName, tokenCol, versionCol string, missingToken, missingVersion bool) []string {
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
	return []string{"ALTER TABLE " + table.String() + " " + strings.Join(adds, ", ")}
}
