// Package dialects holds what differs per database for fencedsql, one sub-package per
// database: postgres (pgx v5), mysql (go-sql-driver/mysql, for MySQL and MariaDB) and
// sqlite (modernc.org/sqlite, pure Go). Importing a sub-package registers its fenced
// driver name with database/sql and its bind style with sqlx.
package dialects
