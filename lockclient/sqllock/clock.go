package sqllock

// myClock is the clock of every MySQL/MariaDB lease-table statement and stored
// procedure: the server's clock in UTC, read when the expression is evaluated.
// UTC_TIMESTAMP(6) and NOW(6), used before, are the statement's start as the session's
// @@timestamp says, which any session may SET (no privilege; a DSN parameter
// timestamp=… does it for a whole pool): a backend whose session clock was an hour
// ahead took a live lease of another holder, and one an hour behind got grants that had
// already expired for everybody else while its client trusted them for a TTL (red-team
// rt41c F1). SYSDATE(6) is not moved by SET timestamp; it is in the session's time zone,
// which CONVERT_TZ from @@session.time_zone turns into UTC, as the lease table stores
// (the tombstone clock of dialects/mysql, red-team rt10t F2). It is NULL only for a named
// zone CONVERT_TZ cannot read: the grant procedure then refuses (myNoClock), a renewal
// matches no row (the lease is lost), and a wait sees no end. A server started with
// --sysdate-is-now makes SYSDATE an alias of NOW and the session clock judges expiry
// again (docs/design.md, "Known open findings").
const myClock = "CONVERT_TZ(SYSDATE(6), @@session.time_zone, '+00:00')"

// myNoClock is the first statement of the MySQL grant procedures: it refuses a session
// whose time zone CONVERT_TZ cannot read (myClock is NULL), which would otherwise see
// every lease as expired.
const myNoClock = "    IF " + myClock + " IS NULL THEN\n" +
	"        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'fencedsql sqllock: no server clock (CONVERT_TZ of SYSDATE gave NULL)';\n" +
	"    END IF;\n"

// pgClock is the clock of every PostgreSQL lease-table statement and function, qualified
// so that a session's search_path cannot put another clock_timestamp before
// pg_catalog's (red-team rt41c F2).
const pgClock = "pg_catalog.clock_timestamp()"
