// Package pgsqlx registers the PostgreSQL dialect of fencedsql for sqlx: importing it
// imports dialects/postgres (which registers the driver name "fenced-pgx" with
// database/sql) and binds "fenced-pgx" to sqlx's $n bind style, so that sqlx's Rebind,
// named queries and In expand placeholders as the database expects. A sqlx user
// imports this package instead of the dialect, one import:
//
//	import _ "github.com/fencedsql/fencedsql/dialects/postgres/pgsqlx"
//	db, err := sqlx.Open("fenced-pgx", dsn)
//
// The dialect alone does not import sqlx, so applications that do not use it do not
// link it.
package pgsqlx

import (
	"github.com/jmoiron/sqlx"

	"github.com/fencedsql/fencedsql/dialects/postgres"
)

func init() {
	sqlx.BindDriver(postgres.DriverName, sqlx.DOLLAR)
}
