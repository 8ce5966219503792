package sqllock

// Reads of the present on MariaDB: the lease table, its token counter and its waiter
// table are read as they are now, whatever the session's system_versioning_asof
// (red-team rt50b F1).
//
// On MariaDB (10.3.4 and later) a session's system_versioning_asof — a SET, a DSN
// parameter (go-sql-driver/mysql sends it as SET), init_connect, or a pooled connection
// shared with code that set it — makes every SELECT of a system-versioned table read the
// table as of that time: a locking read (FOR UPDATE, LOCK IN SHARE MODE) too, and inside
// a stored procedure too, as the procedure's statements see the caller's session. Only
// SELECT statements are moved: UPDATE, DELETE, INSERT … SELECT and the subqueries of IF,
// SET and those statements read the current rows (MariaDB 10.11). With the counter
// table made system-versioned (ALTER TABLE … ADD SYSTEM VERSIONING: an audit migration
// that versions every table), the grant read the counter as it was and handed out a
// token below one already granted (G14); with the lease table versioned, it read a held
// key's row as it was before the grant and granted the key to a second owner; LastToken,
// RaiseFloor and Retire read an old counter as the last token.
//
// myAsOfNow is therefore the prefix of every SELECT of those tables, in the stored
// procedures and in the statements the backend sends: the statement reads as of now
// (DEFAULT) whatever the session says, and the session keeps its own setting. It rides
// in the statement (no extra statement or round trip), and a versioned table is
// accepted: it only keeps history. It is a MariaDB executable comment: MySQL, which
// has no system versioning, and MariaDB before 10.3.4 (no system_versioning_asof) read
// a comment. Every SELECT of the tables must carry it (TestMySQLSelectsReadNow);
// statements that read no row (LIMIT 0, WHERE 1 = 0) need not. PostgreSQL has no
// system versioning, nor any session setting that moves a read in time.
const myAsOfNow = "/*M!100304 SET STATEMENT system_versioning_asof = DEFAULT FOR */ "
