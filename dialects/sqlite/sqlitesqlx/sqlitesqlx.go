// Package sqlitesqlx registers the SQLite dialect of fencedsql for sqlx: importing it
// imports dialects/sqlite (which registers the driver name "fenced-sqlite" with
// database/sql) and binds "fenced-sqlite" to sqlx's ? bind style, so that sqlx's Rebind,
// named queries and In expand placeholders as the database expects. A sqlx user
// imports this package instead of the dialect, one import:
//
//	import _ "github.com/fencedsql/fencedsql/dialects/sqlite/sqlitesqlx"
//	db, err := sqlx.Open("fenced-sqlite", dsn)
//
// The dialect alone does not import sqlx, so applications that do not use it do not
// link it.
package sqlitesqlx

import (
	"github.com/jmoiron/sqlx"

	sqlitedialect "github.com/fencedsql/fencedsql/dialects/sqlite"
)

func init() {
	sqlx.BindDriver(sqlitedialect.DriverName, sqlx.QUESTION)
}
