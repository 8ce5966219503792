// Hand-written in the exact shape sqlc v1.30 generates for database/sql (engine
// "sqlite", sql_package "database/sql", query_parameter_limit: 6) from ../queries/sqlcsqlite.sql;
// sqlc itself is not run by the build. Used by internal/ormtest's TestSqlc.

package sqlcsqlite

import (
	"context"
	"database/sql"
)

type DBTX interface {
	ExecContext(context.Context, string, ...interface{}) (sql.Result, error)
	PrepareContext(context.Context, string) (*sql.Stmt, error)
	QueryContext(context.Context, string, ...interface{}) (*sql.Rows, error)
	QueryRowContext(context.Context, string, ...interface{}) *sql.Row
}

func New(db DBTX) *Queries {
	return &Queries{db: db}
}

type Queries struct {
	db DBTX
}

func (q *Queries) WithTx(tx *sql.Tx) *Queries {
	return &Queries{
		db: tx,
	}
}
