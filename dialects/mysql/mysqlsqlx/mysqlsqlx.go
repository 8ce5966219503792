// Package mysqlsqlx registers the MySQL/MariaDB dialect of fencedsql for sqlx: importing it
// imports dialects/mysql (which registers the driver name "fenced-mysql" with
// database/sql) and binds "fenced-mysql" to sqlx's ? bind style, so that sqlx's Rebind,
// named queries and In expand placeholders as the database expects. A sqlx user
// imports this package instead of the dialect, one import:
//
//	import _ "github.com/fencedsql/fencedsql/dialects/mysql/mysqlsqlx"
//	db, err := sqlx.Open("fenced-mysql", dsn)
//
// The dialect alone does not import sqlx, so applications that do not use it do not
// link it.
package mysqlsqlx

import (
	"github.com/jmoiron/sqlx"

	mysqldialect "github.com/fencedsql/fencedsql/dialects/mysql"
)

func init() {
	sqlx.BindDriver(mysqldialect.DriverName, sqlx.QUESTION)
}
