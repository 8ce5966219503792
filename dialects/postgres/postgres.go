// Package postgres is the PostgreSQL dialect of fencedsql, over pgx v5's database/sql
// driver. Importing it registers the driver name "fenced-pgx":
//
//	import _ "github.com/fencedsql/fencedsql/dialects/postgres"
//	db, err := sql.Open("fenced-pgx", "postgres://app@db/shop?fenced_tables=accounts,orders")
//
// It also binds "fenced-pgx" to sqlx's $n bind style (sqlx.BindDriver), so sqlx works
// unchanged: sqlx.Open("fenced-pgx", dsn) rebinds ? and named queries to $1, $2, ….
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
	"github.com/jmoiron/sqlx"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// DriverName is the name this package registers with database/sql.
const DriverName = "fenced-pgx"

// Dialect is the PostgreSQL dialect value for fencedsql.WithDialect.
var Dialect dialect.Dialect = dialectImpl{}

func init() {
	fencedsql.Register(DriverName, stdlib.GetDefaultDriver(), fencedsql.WithDialect(Dialect))
	sqlx.BindDriver(DriverName, sqlx.DOLLAR)
}

type dialectImpl struct{}

var _ dialect.TxAborter = dialectImpl{}

// AbortsTxOnError implements dialect.TxAborter: a failed statement leaves PostgreSQL's
// transaction aborted (25P02 for what follows, COMMIT answered with a rollback).
func (dialectImpl) AbortsTxOnError() bool { return true }

func (dialectImpl) Name() string           { return "postgres" }
func (dialectImpl) Syntax() dialect.Syntax { return dialect.PostgresSyntax }
func (dialectImpl) NumberedParams() bool   { return true }
func (dialectImpl) QuoteIdent(name string) string {
	return `"` + strings.ReplaceAll(name, `"`, `""`) + `"`
}

// Classify maps pgconn errors: 23502 not_null_violation, 23505 unique_violation.
func (dialectImpl) Classify(err error) dialect.ErrorInfo {
	var pe *pgconn.PgError
	if !errors.As(err, &pe) {
		return dialect.ErrorInfo{}
	}
	switch pe.Code {
	case "23502":
		return dialect.ErrorInfo{Kind: dialect.ErrorNotNull, Column: pe.ColumnName, Table: pe.TableName, Schema: pe.SchemaName}
	case "23505":
		return dialect.ErrorInfo{Kind: dialect.ErrorUnique, Constraint: pe.ConstraintName, Table: pe.TableName, Words: uniqueWords(pe.ConstraintName)}
	case GuardSQLState:
		table := pe.TableName
		if table != "" && pe.SchemaName != "" {
			table = pe.SchemaName + "." + table
		}
		return dialect.ErrorInfo{Kind: dialect.ErrorGuard, Table: table}
	case "22P02":
		// The claim by row locator's own failure (a cast of a text carrying the mark).
		if strings.Contains(pe.Message, dialect.ClaimConflictMark) {
			return dialect.ErrorInfo{Kind: dialect.ErrorClaimConflict, Table: pe.TableName}
		}
	case FloorSQLState:
		table := pe.TableName
		if table != "" && pe.SchemaName != "" {
			table = pe.SchemaName + "." + table
		}
		return dialect.ErrorInfo{Kind: dialect.ErrorBelowFloor, Table: table}
	case "42703": // column "x" [of relation "t"] does not exist; column t.x does not exist
		return dialect.ErrorInfo{Kind: dialect.ErrorUnknownName, Column: unknownName(pe.Message, "column ")}
	case "42P01": // relation "s.t" does not exist
		return dialect.ErrorInfo{Kind: dialect.ErrorUnknownName, Table: unknownName(pe.Message, "relation ")}
	case "57014": // canceling statement due to statement timeout / user request
		return dialect.ErrorInfo{Kind: dialect.ErrorInterrupted}
	case "55P03", // lock_not_available: lock_timeout, NOWAIT
		"40P01": // deadlock_detected
		return dialect.ErrorInfo{Kind: dialect.ErrorLockWait, Table: pe.TableName, TombstoneWait: inTombstoneCheck(pe.Where)}
	}
	return dialect.ErrorInfo{}
}

// unknownName returns the name in PostgreSQL's "<what>"x" … does not exist" message
// (quotes removed; a qualified name as written), or "".
func unknownName(msg, what string) string {
	rest, ok := strings.CutPrefix(msg, what)
	if !ok {
		return ""
	}
	if strings.HasPrefix(rest, `"`) {
		if name, _, ok := strings.Cut(rest[1:], `"`); ok {
			return name
		}
		return ""
	}
	name, _, _ := strings.Cut(rest, " ")
	return name
}

// SystemName implements dialect.SystemNamer: OpenTelemetry's db.system.name for
// PostgreSQL.
func (dialectImpl) SystemName() string { return "postgresql" }

var _ dialect.SystemNamer = dialectImpl{}

// ExactQuotedIdents implements dialect.ExactIdenter: a quoted identifier is its exact
// spelling ("Fence_Token" is not fence_token), and the wrapper quotes column names.
func (dialectImpl) ExactQuotedIdents() bool { return true }

var _ dialect.ExactIdenter = dialectImpl{}

// ColumnsQuery resolves the table through the session's search_path (to_regclass), as
// the statements themselves do. A view (or materialized view) is noted as one, with
// the relations its rewrite rule reads (pg_depend), so that the refusal names the table
// to guard instead and proposes no ALTER TABLE that cannot run on a view (red-team
// rt31d F5). Any other relation that is not a table is noted with its kind: a foreign
// table (its rows live on the remote server: accepted, a stale write went through,
// red-team rt33a F4), a sequence (reported as a table missing columns, rt33a F7), an
// index, a composite type. (A generated fencing column is the lint's to report.)
func (dialectImpl) ColumnsQuery(table dialect.TableName) (query string, args []any) {
	return `SELECT a.attname::text, CASE WHEN a.attnotnull THEN 1 ELSE 0 END, ` +
		`CASE WHEN c.relkind IN ('v', 'm') THEN 'view:' || COALESCE((SELECT string_agg(DISTINCT d.refobjid::regclass::text, ', ') FROM pg_catalog.pg_rewrite r ` +
		`JOIN pg_catalog.pg_depend d ON d.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND d.objid = r.oid AND d.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass ` +
		`WHERE r.ev_class = c.oid AND d.refobjid <> c.oid), '') ` +
		`WHEN c.relkind = 'f' THEN 'foreign table' WHEN c.relkind = 'S' THEN 'sequence' WHEN c.relkind IN ('i', 'I') THEN 'index' WHEN c.relkind = 'c' THEN 'composite type' END ` +
		`FROM pg_catalog.pg_attribute a JOIN pg_catalog.pg_class c ON c.oid = a.attrelid WHERE a.attrelid = pg_catalog.to_regclass($1) AND a.attnum > 0 AND NOT a.attisdropped`, []any{regclass(table)}
}

// GuardColumnsDDL returns one ALTER TABLE adding the missing columns. The table name
// is left unquoted, so PostgreSQL folds it as it folds the statements' own names.
func (d dialectImpl) GuardColumnsDDL(table dialect.TableName, tokenCol, versionCol string, missingToken, missingVersion bool) []string {
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
	return []string{"ALTER TABLE " + table.Text(d.QuoteIdent) + " " + strings.Join(adds, ", ")}
}

// uniqueWords is pgconn's text of a 23505 error without its DETAIL (which quotes the
// duplicated key): PostgreSQL's message names only the constraint.
func uniqueWords(constraint string) string {
	words := "ERROR: duplicate key value violates unique constraint"
	if constraint != "" {
		words += ` "` + constraint + `"`
	}
	return words + " (SQLSTATE 23505)"
}
