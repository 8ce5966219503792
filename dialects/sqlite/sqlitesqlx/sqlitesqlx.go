// Package sqlitesqlx is kept for programs that imported it before the dialect registered its
// sqlx bind style itself: importing it imports dialects/sqlite, which registers the driver
// name "fenced-sqlite" with database/sql and binds it to sqlx's bind style. New code imports the
// dialect alone:
//
//	import _ "github.com/fencedsql/fencedsql/dialects/sqlite"
//	db, err := sqlx.Open("fenced-sqlite", dsn)
//
// Deprecated: import github.com/fencedsql/fencedsql/dialects/sqlite.
package sqlitesqlx

import _ "github.com/fencedsql/fencedsql/dialects/sqlite" // registers "fenced-sqlite" with database/sql and sqlx
