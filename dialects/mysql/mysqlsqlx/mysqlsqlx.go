// Package mysqlsqlx is kept for programs that imported it before the dialect registered its
// sqlx bind style itself: importing it imports dialects/mysql, which registers the driver
// name "fenced-mysql" with database/sql and binds it to sqlx's bind style. New code imports the
// dialect alone:
//
//	import _ "github.com/fencedsql/fencedsql/dialects/mysql"
//	db, err := sqlx.Open("fenced-mysql", dsn)
//
// Deprecated: import github.com/fencedsql/fencedsql/dialects/mysql.
package mysqlsqlx

import _ "github.com/fencedsql/fencedsql/dialects/mysql" // registers "fenced-mysql" with database/sql and sqlx
