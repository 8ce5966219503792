// Package dialects holds what differs per database for fencedsql, one sub-package per
// database: postgres (pgx v5), mysql (go-sql-driver/mysql, for MySQL and MariaDB) and
// sqlite (modernc.org/sqlite, pure Go). Importing a sub-package registers its fenced
// driver name with database/sql and its bind style with sqlx (sqlx.BindDriver), so
// sqlx.Open with a fenced name works unchanged. The older per-dialect sqlx packages
// (postgres/pgsqlx, mysql/mysqlsqlx, sqlite/sqlitesqlx) are kept for existing imports.
//
// Each dialect also implements the optional dialect.Guarder (database-side guard
// triggers), dialect.NotNullFixer and dialect.Tombstoner: tombstones for docs/design.md G9, no
// resurrection of a deleted row under an older token. Per guarded table a tombstone
// table fencedsql_tomb_<table> (the table's key columns, fence_token, deleted_at)
// lives in the guarded table's schema; an AFTER DELETE trigger records the deleted
// row's key and token (keeping the greater), and an INSERT trigger refuses a row whose
// key has a tombstone with a greater token, as a NOT NULL violation on the token
// column, which the wrapper reports as fencedsql.ErrFenced: PostgreSQL raises 23502
// with the column set, MySQL/MariaDB SIGNALs error 1048 (as strict mode would), SQLite
// RAISEs a message its Classify maps (sqlite.TombstoneMessagePrefix). An equal token
// passes. The INSERT trigger runs AFTER INSERT on all three: only there is NEW's key
// the stored one (a key the database chooses, such as SQLite's reused rowid, is not
// known before), and an upsert that inserts fires it like an INSERT. See each
// package's tombstone.go and
// schema.Check (which checks it), schema.PurgeTombstones.
package dialects
