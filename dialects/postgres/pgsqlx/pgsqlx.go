// Package pgsqlx is kept for programs that imported it before the dialect registered its
// sqlx bind style itself: importing it imports dialects/postgres, which registers the driver
// name "fenced-pgx" with database/sql and binds it to sqlx's bind style. New code imports the
// dialect alone:
//
//	import _ "github.com/fencedsql/fencedsql/dialects/postgres"
//	db, err := sqlx.Open("fenced-pgx", dsn)
//
// Deprecated: import github.com/fencedsql/fencedsql/dialects/postgres.
package pgsqlx

import _ "github.com/fencedsql/fencedsql/dialects/postgres" // registers "fenced-pgx" with database/sql and sqlx
