package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"hash/crc32"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// maxNamePart bounds each part of the table name, so that the derived names
// (<table>_token_seq, <table>_token, <table>_grant_v1) fit PostgreSQL's 63- and MySQL's
// 64-character identifier limits.
const maxNamePart = 48

type tableName struct {
	schema string // optional
	name   string
}

func (t tableName) String() string {
	if t.schema != "" {
		return t.schema + "." + t.name
	}
	return t.name
}

// with returns the name of an object that lives next to the table.
func (t tableName) with(suffix string) tableName {
	return tableName{schema: t.schema, name: t.name + suffix}
}

func parseTable(s string) (tableName, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return tableName{}, fmt.Errorf("sqllock: table name %q: at most one '.'", s)
	}
	for _, p := range parts {
		if !isIdent(p) {
			return tableName{}, fmt.Errorf("sqllock: table name %q: each part must be 1 to %d letters, digits or '_', not starting with a digit", s, maxNamePart)
		}
	}
	if len(parts) == 2 {
		return tableName{schema: parts[0], name: parts[1]}, nil
	}
	return tableName{name: parts[0]}, nil
}

func isIdent(s string) bool {
	if s == "" || len(s) > maxNamePart {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// quotePG quotes an identifier that isIdent accepted.
func quotePG(s string) string { return `"` + s + `"` }

func quoteMy(s string) string { return "`" + s + "`" }

func (t tableName) quoted(d Dialect) string {
	q := quotePG
	if d == MySQL {
		q = quoteMy
	}
	if t.schema != "" {
		return q(t.schema) + "." + q(t.name)
	}
	return q(t.name)
}

// DDL returns the statements that create the lease table for dialect d and the objects
// next to it, in order; each is one statement, to be executed on its own (the stored
// routines contain ';' in their bodies, so they are not joined). table "" means
// DefaultTable. Every statement is idempotent (IF NOT EXISTS, CREATE OR REPLACE, or an
// "already exists" error that CreateTable ignores), so running them on a table created
// by an earlier version upgrades it: the objects of schema version 1 are kept (clients
// of the previous release still call them during a rolling upgrade) and those of
// version 2 are added.
//
// Version 1 — PostgreSQL: the sequence <table>_token_seq (bigint, CACHE 1, NO CYCLE: one
// counter for all keys and sessions) and the table. MySQL/MariaDB: the table, the
// one-row counter table <table>_token, its row, and the procedure <table>_grant_v1.
//
// Version 2 (the waiter queue) — both: the table <table>_waiters (one row per waiting
// Acquire: ticket, key, waiter id, session id, owner, alive_until, gone) with indexes on
// (lock_key, ticket) and alive_until. PostgreSQL: the sequence <table>_ticket_seq
// (CACHE 1) for tickets and the PL/pgSQL functions <table>_grant_v2, _release_v2,
// _leave_v2, _abandon_v2 and _wake_v2; MySQL: an AUTO_INCREMENT ticket and the
// procedure <table>_grant_v2. The routines run with the caller's rights (SQL SECURITY
// INVOKER, PostgreSQL's default); creating them needs CREATE ROUTINE on MySQL (EXECUTE to
// call) and CREATE on the schema on PostgreSQL.
//
// Lease table columns: lock_key (primary key), owner, session_id, token (BIGINT),
// expires_at (timestamptz on PostgreSQL; DATETIME(6) in UTC on MySQL).
func DDL(d Dialect, table string) ([]string, error) {
	if table == "" {
		table = DefaultTable
	}
	tn, err := parseTable(table)
	if err != nil {
		return nil, err
	}
	switch d {
	case Postgres:
		return append(pgDDL(tn), pgDDLv2(tn)...), nil
	case MySQL:
		return append(myDDL(tn), myDDLv2(tn)...), nil
	}
	return nil, fmt.Errorf("sqllock: DDL: unknown dialect %v", d)
}

// DropDDL returns the statements that remove the lease table of dialect d and every
// object DDL creates next to it (table "" means DefaultTable), in an order that works:
// routines, then tables, then sequences. Each is IF EXISTS, so it also cleans up a
// table created by an older version. Nothing holding a lease must use the table then.
func DropDDL(d Dialect, table string) ([]string, error) {
	if table == "" {
		table = DefaultTable
	}
	tn, err := parseTable(table)
	if err != nil {
		return nil, err
	}
	switch d {
	case Postgres:
		q := func(suffix string) string { return tn.with(suffix).quoted(Postgres) }
		return []string{
			"DROP FUNCTION IF EXISTS " + q("_grant_v2"),
			"DROP FUNCTION IF EXISTS " + q("_release_v2"),
			"DROP FUNCTION IF EXISTS " + q("_leave_v2"),
			"DROP FUNCTION IF EXISTS " + q("_abandon_v2"),
			"DROP FUNCTION IF EXISTS " + q("_wake_v2"),
			"DROP TABLE IF EXISTS " + q("_waiters"),
			"DROP TABLE IF EXISTS " + tn.quoted(Postgres),
			"DROP SEQUENCE IF EXISTS " + q("_ticket_seq"),
			"DROP SEQUENCE IF EXISTS " + q("_token_seq"),
		}, nil
	case MySQL:
		q := func(suffix string) string { return tn.with(suffix).quoted(MySQL) }
		return []string{
			"DROP PROCEDURE IF EXISTS " + q("_grant_v2"),
			"DROP PROCEDURE IF EXISTS " + q("_grant_v1"),
			"DROP TABLE IF EXISTS " + q("_waiters"),
			"DROP TABLE IF EXISTS " + q("_token"),
			"DROP TABLE IF EXISTS " + tn.quoted(MySQL),
		}, nil
	}
	return nil, fmt.Errorf("sqllock: DropDDL: unknown dialect %v", d)
}

// CreateTable creates the lease table of dialect d and the objects next to it (see DDL)
// if they do not exist yet; table "" means DefaultTable. It is safe to run at every
// start, also from several processes at once. Run it before New's backend is used:
// lockclient does not create tables by itself.
func CreateTable(ctx context.Context, db *sql.DB, d Dialect, table string) error {
	stmts, err := DDL(d, table)
	if err != nil {
		return err
	}
	tn, _ := parseTable(orDefault(table))
	switch d {
	case Postgres:
		// Concurrent CREATE … IF NOT EXISTS can still collide in the catalog: serialise
		// them on an advisory lock, in one transaction.
		tx, err := db.BeginTx(ctx, nil)
		if err != nil {
			return fmt.Errorf("sqllock: create table: %w", err)
		}
		defer tx.Rollback()
		if _, err := tx.ExecContext(ctx, fmt.Sprintf("SELECT pg_advisory_xact_lock(%d, 0)", advisoryClass(tn))); err != nil {
			return fmt.Errorf("sqllock: create table: %w", err)
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("sqllock: create table: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqllock: create table: %w", err)
		}
		return nil
	default:
		for _, s := range stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				var me *mysql.MySQLError
				if errors.As(err, &me) && me.Number == 1304 { // ER_SP_ALREADY_EXISTS
					continue
				}
				return fmt.Errorf("sqllock: create table: %w", err)
			}
		}
		return nil
	}
}

func orDefault(table string) string {
	if table == "" {
		return DefaultTable
	}
	return table
}

// advisoryClass is the first key of the PostgreSQL advisory locks the backend takes
// (the two-int form, which never collides with the one-bigint form applications use).
func advisoryClass(tn tableName) int32 {
	return int32(crc32.ChecksumIEEE([]byte("fencedsql.sqllock:" + tn.String())))
}

func pgDDL(tn tableName) []string {
	return []string{
		fmt.Sprintf(`CREATE SEQUENCE IF NOT EXISTS %s AS bigint MINVALUE 1 START WITH 1 CACHE 1 NO CYCLE`,
			tn.with("_token_seq").quoted(Postgres)),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
    lock_key   text        NOT NULL PRIMARY KEY,
    owner      text        NOT NULL,
    session_id text        NOT NULL,
    token      bigint      NOT NULL,
    expires_at timestamptz NOT NULL
)`, tn.quoted(Postgres)),
	}
}

func myDDL(tn tableName) []string {
	t := tn.quoted(MySQL)
	c := tn.with("_token").quoted(MySQL)
	p := tn.with("_grant_v1").quoted(MySQL)
	return []string{
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n"+
			"    lock_key   VARBINARY(%d) NOT NULL PRIMARY KEY,\n"+
			"    owner      VARCHAR(255) CHARACTER SET utf8mb4 NOT NULL,\n"+
			"    session_id VARCHAR(64) CHARACTER SET ascii NOT NULL,\n"+
			"    token      BIGINT NOT NULL,\n"+
			"    expires_at DATETIME(6) NOT NULL COMMENT 'UTC, from UTC_TIMESTAMP(6)'\n"+
			") ENGINE=InnoDB", t, MaxKeyLen),
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n"+
			"    id TINYINT NOT NULL PRIMARY KEY,\n"+
			"    v  BIGINT  NOT NULL COMMENT 'last fencing token issued'\n"+
			") ENGINE=InnoDB", c),
		fmt.Sprintf("INSERT IGNORE INTO %s (id, v) VALUES (1, 0)", c),
		// One round trip, one short transaction at the server. The counter row lock
		// serialises grants, so tokens follow commit order; renew and release never
		// take it, and grants take it first, so there is no lock-order cycle.
		fmt.Sprintf("CREATE PROCEDURE %s(\n"+
			"    IN p_key VARBINARY(%d), IN p_owner VARCHAR(255) CHARACTER SET utf8mb4,\n"+
			"    IN p_session VARCHAR(64) CHARACTER SET ascii, IN p_ttl_us BIGINT)\n"+
			"    MODIFIES SQL DATA SQL SECURITY INVOKER\n"+
			"    COMMENT 'fencedsql sqllock: grant p_key if free or expired; returns the token, 0 if held'\n"+
			"BEGIN\n"+
			"    DECLARE v_token BIGINT DEFAULT NULL;\n"+
			"    DECLARE v_live INT DEFAULT 0;\n"+
			"    DECLARE EXIT HANDLER FOR SQLEXCEPTION\n"+
			"    BEGIN\n"+
			"        ROLLBACK;\n"+
			"        RESIGNAL;\n"+
			"    END;\n"+
			"    START TRANSACTION;\n"+
			"    SELECT v INTO v_token FROM %s WHERE id = 1 FOR UPDATE;\n"+
			"    IF v_token IS NULL THEN\n"+
			"        SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'fencedsql sqllock: the token counter row is missing';\n"+
			"    END IF;\n"+
			"    SELECT COUNT(*) INTO v_live FROM %s\n"+
			"        WHERE lock_key = p_key AND expires_at > UTC_TIMESTAMP(6) FOR UPDATE;\n"+
			"    IF v_live > 0 THEN\n"+
			"        COMMIT;\n"+
			"        SELECT CAST(0 AS SIGNED) AS token;\n"+
			"    ELSE\n"+
			"        SET v_token = v_token + 1;\n"+
			"        UPDATE %s SET v = v_token WHERE id = 1;\n"+
			"        INSERT INTO %s (lock_key, owner, session_id, token, expires_at)\n"+
			"            VALUES (p_key, p_owner, p_session, v_token, UTC_TIMESTAMP(6) + INTERVAL p_ttl_us MICROSECOND)\n"+
			"            ON DUPLICATE KEY UPDATE owner = p_owner, session_id = p_session, token = v_token,\n"+
			"                expires_at = UTC_TIMESTAMP(6) + INTERVAL p_ttl_us MICROSECOND;\n"+
			"        COMMIT;\n"+
			"        SELECT v_token AS token;\n"+
			"    END IF;\n"+
			"END", p, MaxKeyLen, c, t, c, t),
	}
}

// queries are the statements of one dialect and table.
type queries struct {
	grant          string
	renew          string
	renewCheck     string // MySQL only
	release        string
	releaseExpired string // MySQL only
	remaining      string // microseconds left on the key's lease; no row when free
	abandon        string // delete the row of an abandoned grant request (key, session_id)

	// Schema version 2 (the waiter queue).
	grant2      string // the grant routine: queue or try, grant to the first live waiter
	release2    string // PostgreSQL: release and wake the next waiter
	leave2      string // a waiter leaves the queue
	abandon2    string // PostgreSQL: mark an abandoned request and delete its grant
	abandonMark string // MySQL: mark an abandoned request (then abandon deletes its grant)
}

func buildQueries(d Dialect, tn tableName) queries {
	if d == MySQL {
		t := tn.quoted(MySQL)
		return queries{
			grant: fmt.Sprintf("CALL %s(?, ?, ?, ?)", tn.with("_grant_v1").quoted(MySQL)),
			renew: fmt.Sprintf("UPDATE %s SET expires_at = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND "+
				"WHERE lock_key = ? AND session_id = ? AND token = ? AND expires_at > UTC_TIMESTAMP(6)", t),
			renewCheck: fmt.Sprintf("SELECT expires_at > UTC_TIMESTAMP(6) FROM %s "+
				"WHERE lock_key = ? AND session_id = ? AND token = ?", t),
			release: fmt.Sprintf("DELETE FROM %s "+
				"WHERE lock_key = ? AND session_id = ? AND token = ? AND expires_at > UTC_TIMESTAMP(6)", t),
			releaseExpired: fmt.Sprintf("DELETE FROM %s WHERE lock_key = ? AND session_id = ? AND token = ?", t),
			remaining: fmt.Sprintf("SELECT TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at) FROM %s "+
				"WHERE lock_key = ?", t),
			abandon: fmt.Sprintf("DELETE FROM %s WHERE lock_key = ? AND session_id = ?", t),
			grant2:  fmt.Sprintf("CALL %s(?, ?, ?, ?, ?, ?)", tn.with("_grant_v2").quoted(MySQL)),
			leave2:  fmt.Sprintf("DELETE FROM %s WHERE waiter_id = ? AND gone = 0", tn.waiters().quoted(MySQL)),
			abandonMark: fmt.Sprintf("INSERT INTO %s (lock_key, waiter_id, session_id, owner, alive_until, gone) "+
				"VALUES (?, ?, ?, '', UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND, 1) "+
				"ON DUPLICATE KEY UPDATE gone = 1, alive_until = UTC_TIMESTAMP(6) + INTERVAL ? MICROSECOND",
				tn.waiters().quoted(MySQL)),
		}
	}
	t := tn.quoted(Postgres)
	seq := strings.ReplaceAll(tn.with("_token_seq").quoted(Postgres), "'", "''")
	return queries{
		// The advisory lock (held to the end of this one-statement transaction, one lock
		// for the whole table) makes "draw the token, then insert or take over the row,
		// then commit" one critical section for all grants, so tokens follow the order in
		// which grants take effect, across keys too: a grant that waits for the key's row
		// lock (a concurrent renewal or release) does so before any later grant draws its
		// token. OFFSET 0 keeps the planner from flattening the subquery, so it runs
		// before the select list draws nextval.
		grant: fmt.Sprintf(`INSERT INTO %[1]s AS l (lock_key, owner, session_id, token, expires_at)
SELECT $1::text, $2::text, $3::text, nextval('%[2]s'), clock_timestamp() + $4::bigint * interval '1 microsecond'
  FROM (SELECT pg_advisory_xact_lock(%[3]d, 1) OFFSET 0) AS serialise_grants
ON CONFLICT (lock_key) DO UPDATE
   SET owner = excluded.owner, session_id = excluded.session_id, token = excluded.token,
       expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond'
 WHERE l.expires_at <= clock_timestamp()
RETURNING l.token`, t, seq, advisoryClass(tn)),
		renew: fmt.Sprintf(`UPDATE %s SET expires_at = clock_timestamp() + $4::bigint * interval '1 microsecond'
 WHERE lock_key = $1 AND session_id = $2 AND token = $3 AND expires_at > clock_timestamp()`, t),
		release: fmt.Sprintf(`WITH d AS (
  DELETE FROM %s WHERE lock_key = $1 AND session_id = $2 AND token = $3
  RETURNING lock_key, expires_at > clock_timestamp() AS live
), n AS (
  SELECT pg_notify($4::text, d.lock_key) FROM d
)
SELECT d.live, (SELECT count(*) FROM n) FROM d`, t),
		remaining: fmt.Sprintf(`SELECT (extract(epoch FROM expires_at - clock_timestamp()) * 1000000)::bigint FROM %s WHERE lock_key = $1`, t),
		abandon: fmt.Sprintf(`WITH d AS (
  DELETE FROM %s WHERE lock_key = $1 AND session_id = $2 RETURNING lock_key
), n AS (
  SELECT pg_notify($3::text, d.lock_key) FROM d
)
SELECT (SELECT count(*) FROM d), (SELECT count(*) FROM n)`, t),
		grant2: fmt.Sprintf(`SELECT o_token, o_ahead, o_holder_us, o_ahead_us, o_holder
  FROM %s($1::text, $2::text, $3::text, $4::text, $5::bigint, $6::bigint <> 0, $7::text)`,
			tn.with("_grant_v2").quoted(Postgres)),
		release2: fmt.Sprintf(`SELECT o_found, o_live FROM %s($1::text, $2::text, $3::bigint)`,
			tn.with("_release_v2").quoted(Postgres)),
		leave2:   fmt.Sprintf(`SELECT %s($1::text, $2::text)`, tn.with("_leave_v2").quoted(Postgres)),
		abandon2: fmt.Sprintf(`SELECT %s($1::text, $2::text, $3::text, $4::bigint)`, tn.with("_abandon_v2").quoted(Postgres)),
	}
}

// ddlV1 returns the statements of schema version 1 only (what an earlier release
// created), for tests of the upgrade path.
func ddlV1(d Dialect, tn tableName) []string {
	if d == Postgres {
		return pgDDL(tn)
	}
	return myDDL(tn)
}

// Names of the version 2 objects next to the lease table.
func (t tableName) waiters() tableName { return t.with("_waiters") }

// pgDDLv2: the waiter queue on PostgreSQL.
//
// Every routine reads with a fresh snapshot per statement (PL/pgSQL, READ COMMITTED), so
// a statement that waited for a lock sees what the lock holder committed. The locks:
//   - grants take the table-wide advisory lock (class, 1) before drawing a token, as in
//     version 1, and hold it to commit: tokens follow grant order across keys;
//   - a waiter that finds the key held re-reads the lease row FOR KEY SHARE before it
//     returns, and release and leave delete or lock that row: a release therefore either
//     commits before the waiter's check (which then sees the key free) or waits for the
//     waiter's transaction (and then sees the waiter in the queue and notifies it);
//     renewals (FOR NO KEY UPDATE) are not blocked by it;
//   - abandon marks the request's waiter row gone first and then takes the advisory
//     lock: a late grant of that request either commits before (and abandon deletes it)
//     or sees the mark (and grants nothing);
//   - the garbage collection of lapsed waiter rows skips locked rows, so it never waits.
func pgDDLv2(tn tableName) []string {
	t := tn.quoted(Postgres)
	w := tn.waiters().quoted(Postgres)
	tseq := strings.ReplaceAll(tn.with("_token_seq").quoted(Postgres), "'", "''")
	wseq := tn.with("_ticket_seq").quoted(Postgres)
	wseqLit := strings.ReplaceAll(wseq, "'", "''")
	wake := tn.with("_wake_v2").quoted(Postgres)
	class := advisoryClass(tn)
	return []string{
		fmt.Sprintf(`CREATE SEQUENCE IF NOT EXISTS %s AS bigint MINVALUE 1 START WITH 1 CACHE 1 NO CYCLE`, wseq),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
    ticket      bigint      NOT NULL DEFAULT nextval('%s') PRIMARY KEY,
    lock_key    text        NOT NULL,
    waiter_id   text        NOT NULL UNIQUE,
    session_id  text        NOT NULL,
    owner       text        NOT NULL,
    channel     text        NOT NULL,
    alive_until timestamptz NOT NULL,
    gone        boolean     NOT NULL DEFAULT false
)`, w, wseqLit),
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (lock_key, ticket)`, quotePG(tn.name+"_wq"), w),
		fmt.Sprintf(`CREATE INDEX IF NOT EXISTS %s ON %s (alive_until)`, quotePG(tn.name+"_wa"), w),
		// wake notifies the first live waiter of p_key on its Backend's channel.
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s(p_key text) RETURNS void
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_ch text;
    v_w  text;
BEGIN
    SELECT w.channel, w.waiter_id INTO v_ch, v_w FROM %[2]s w
     WHERE w.lock_key = p_key AND NOT w.gone AND w.alive_until > clock_timestamp()
     ORDER BY w.ticket LIMIT 1;
    IF v_w IS NOT NULL AND v_ch <> '' THEN
        PERFORM pg_notify(v_ch, v_w);
    END IF;
END
$fn$`, wake, w),
		// grant: queue (p_queue) or check (TryAcquire) and grant p_key to p_waiter if it
		// is free and no live waiter is ahead. o_token > 0: granted; 0: not now (o_ahead
		// live waiters ahead, the holder's token and remaining µs, the longest remaining
		// liveness among those ahead); -1: the request was abandoned or left the queue.
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s(
    p_key text, p_owner text, p_session text, p_waiter text, p_ttl_us bigint, p_queue boolean, p_channel text,
    OUT o_token bigint, OUT o_ahead bigint, OUT o_holder_us bigint, OUT o_ahead_us bigint, OUT o_holder bigint)
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_ttl    interval := p_ttl_us * interval '1 microsecond';
    v_ticket bigint;
    v_gone   boolean;
    v_stale  boolean;
BEGIN
    o_token := 0; o_ahead := 0; o_holder_us := 0; o_ahead_us := 0; o_holder := 0;
    SELECT w.ticket, w.gone, w.alive_until < clock_timestamp() + v_ttl * 2 / 3
      INTO v_ticket, v_gone, v_stale FROM %[2]s w WHERE w.waiter_id = p_waiter;
    IF v_gone THEN
        o_token := -1;
        RETURN;
    END IF;
    IF p_queue THEN
        IF v_ticket IS NULL THEN
            INSERT INTO %[2]s AS w (lock_key, waiter_id, session_id, owner, channel, alive_until)
            VALUES (p_key, p_waiter, p_session, p_owner, p_channel, clock_timestamp() + v_ttl)
            ON CONFLICT (waiter_id) DO NOTHING
            RETURNING w.ticket INTO v_ticket;
            IF v_ticket IS NULL THEN
                o_token := -1;
                RETURN;
            END IF;
        ELSIF v_stale THEN
            UPDATE %[2]s w SET alive_until = clock_timestamp() + v_ttl, channel = p_channel
             WHERE w.waiter_id = p_waiter AND NOT w.gone;
            IF NOT FOUND THEN
                o_token := -1;
                RETURN;
            END IF;
        END IF;
    END IF;
    SELECT count(*), coalesce(max((extract(epoch FROM w.alive_until - clock_timestamp()) * 1000000)::bigint), 0)
      INTO o_ahead, o_ahead_us FROM %[2]s w
     WHERE w.lock_key = p_key AND NOT w.gone AND w.alive_until > clock_timestamp()
       AND (v_ticket IS NULL OR w.ticket < v_ticket);
    SELECT (extract(epoch FROM l.expires_at - clock_timestamp()) * 1000000)::bigint, l.token
      INTO o_holder_us, o_holder FROM %[3]s l WHERE l.lock_key = p_key;
    IF o_holder_us > 0 AND p_queue THEN
        -- Held: lock the row, so that a release in progress either commits first (the
        -- key is then free) or waits for this transaction (and then notifies this waiter).
        SELECT (extract(epoch FROM l.expires_at - clock_timestamp()) * 1000000)::bigint, l.token
          INTO o_holder_us, o_holder FROM %[3]s l WHERE l.lock_key = p_key FOR KEY SHARE;
    END IF;
    o_holder_us := coalesce(o_holder_us, 0);
    IF o_holder_us <= 0 THEN
        o_holder_us := 0; o_holder := 0;
    END IF;
    IF o_ahead > 0 OR o_holder_us > 0 THEN
        IF o_holder_us = 0 AND p_queue THEN
            PERFORM %[4]s(p_key); -- free, and the first waiter has not taken it yet: nudge it
        END IF;
        RETURN;
    END IF;
    -- Grant, serialised with every other grant of the table (tokens in grant order).
    PERFORM pg_advisory_xact_lock(%[5]d, 1);
    SELECT w.gone INTO v_gone FROM %[2]s w WHERE w.waiter_id = p_waiter;
    IF v_gone OR (p_queue AND v_gone IS NULL) THEN
        o_token := -1;
        RETURN;
    END IF;
    SELECT count(*) INTO o_ahead FROM %[2]s w
     WHERE w.lock_key = p_key AND NOT w.gone AND w.alive_until > clock_timestamp()
       AND (v_ticket IS NULL OR w.ticket < v_ticket);
    IF o_ahead > 0 THEN
        RETURN;
    END IF;
    INSERT INTO %[3]s AS l (lock_key, owner, session_id, token, expires_at)
    VALUES (p_key, p_owner, p_waiter, nextval('%[6]s'), clock_timestamp() + v_ttl)
    ON CONFLICT (lock_key) DO UPDATE
       SET owner = excluded.owner, session_id = excluded.session_id, token = excluded.token,
           expires_at = clock_timestamp() + v_ttl
     WHERE l.expires_at <= clock_timestamp()
    RETURNING l.token INTO o_token;
    IF o_token IS NULL THEN
        o_token := 0;
        SELECT (extract(epoch FROM l.expires_at - clock_timestamp()) * 1000000)::bigint, l.token
          INTO o_holder_us, o_holder FROM %[3]s l WHERE l.lock_key = p_key;
        o_holder_us := greatest(coalesce(o_holder_us, 0), 1);
        RETURN;
    END IF;
    IF p_queue THEN
        DELETE FROM %[2]s w WHERE w.waiter_id = p_waiter;
    END IF;
    o_holder := o_token; o_holder_us := p_ttl_us; o_ahead_us := 0;
    -- Garbage: waiters that lapsed (crashed) and marks of abandoned requests past their time.
    DELETE FROM %[2]s w WHERE w.ticket IN (
        SELECT g.ticket FROM %[2]s g WHERE g.alive_until < clock_timestamp()
         ORDER BY g.alive_until LIMIT 8 FOR UPDATE SKIP LOCKED);
END
$fn$`, tn.with("_grant_v2").quoted(Postgres), w, t, wake, class, tseq),
		// release: delete the grant (key, request, token); wake the first waiter.
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s(p_key text, p_waiter text, p_token bigint,
    OUT o_found boolean, OUT o_live boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    DELETE FROM %[2]s l WHERE l.lock_key = p_key AND l.session_id = p_waiter AND l.token = p_token
    RETURNING l.expires_at > clock_timestamp() INTO o_live;
    o_found := FOUND;
    IF o_found THEN
        PERFORM %[3]s(p_key);
    END IF;
END
$fn$`, tn.with("_release_v2").quoted(Postgres), t, wake),
		// leave: a waiter gives up; if the key is free, the next waiter is woken.
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s(p_key text, p_waiter text) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_n bigint;
BEGIN
    PERFORM 1 FROM %[2]s l WHERE l.lock_key = p_key FOR KEY SHARE; -- after a release in progress
    DELETE FROM %[3]s w WHERE w.waiter_id = p_waiter AND NOT w.gone;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF NOT EXISTS (SELECT 1 FROM %[2]s l WHERE l.lock_key = p_key AND l.expires_at > clock_timestamp()) THEN
        PERFORM %[4]s(p_key);
    END IF;
    RETURN v_n;
END
$fn$`, tn.with("_leave_v2").quoted(Postgres), t, w, wake),
		// abandon: the request p_waiter, whose outcome its client does not know, must
		// leave nothing: mark it gone (a late arrival then grants and queues nothing),
		// then delete the grant it may have got, waking the next waiter.
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s(p_key text, p_waiter text, p_session text, p_keep_us bigint) RETURNS bigint
LANGUAGE plpgsql VOLATILE AS $fn$
DECLARE
    v_n bigint;
BEGIN
    INSERT INTO %[2]s AS w (lock_key, waiter_id, session_id, owner, channel, alive_until, gone)
    VALUES (p_key, p_waiter, p_session, '', '', clock_timestamp() + p_keep_us * interval '1 microsecond', true)
    ON CONFLICT (waiter_id) DO UPDATE SET gone = true, alive_until = excluded.alive_until;
    PERFORM pg_advisory_xact_lock(%[4]d, 1);
    DELETE FROM %[3]s l WHERE l.lock_key = p_key AND l.session_id = p_waiter;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        PERFORM %[5]s(p_key);
    END IF;
    RETURN v_n;
END
$fn$`, tn.with("_abandon_v2").quoted(Postgres), w, t, class, wake),
	}
}

// myDDLv2: the waiter queue on MySQL/MariaDB, and the grant procedure that respects it.
//
// The procedure first joins or refreshes the queue and reads where the queue and the key
// stand, each an autocommit statement without the counter lock (most calls are waiters
// that are not first, and stop there). Only a caller that may be granted starts the
// grant transaction of version 1: lock the counter row, lock the request's waiter row
// (or its gap: an abandon mark inserted concurrently waits for this transaction, and is
// then followed by the delete of this grant), lock and test the key's row, re-check the
// queue, grant. A waiter's liveness (alive_until) is written only when a third of its
// TTL has passed, so that polls are reads. After a grant it deletes up to 8 lapsed
// waiter rows and abandon marks (READ COMMITTED, errors ignored).
func myDDLv2(tn tableName) []string {
	t := tn.quoted(MySQL)
	c := tn.with("_token").quoted(MySQL)
	w := tn.waiters().quoted(MySQL)
	p := tn.with("_grant_v2").quoted(MySQL)
	return []string{
		fmt.Sprintf("CREATE TABLE IF NOT EXISTS %s (\n"+
			"    ticket      BIGINT NOT NULL AUTO_INCREMENT PRIMARY KEY,\n"+
			"    lock_key    VARBINARY(%d) NOT NULL,\n"+
			"    waiter_id   VARCHAR(64) CHARACTER SET ascii NOT NULL,\n"+
			"    session_id  VARCHAR(64) CHARACTER SET ascii NOT NULL,\n"+
			"    owner       VARCHAR(255) CHARACTER SET utf8mb4 NOT NULL,\n"+
			"    alive_until DATETIME(6) NOT NULL COMMENT 'UTC, from UTC_TIMESTAMP(6)',\n"+
			"    gone        TINYINT NOT NULL DEFAULT 0 COMMENT '1: abandoned request, kept until alive_until',\n"+
			"    UNIQUE KEY waiter_id (waiter_id),\n"+
			"    KEY queue (lock_key, ticket),\n"+
			"    KEY alive (alive_until)\n"+
			") ENGINE=InnoDB", w, MaxKeyLen),
		fmt.Sprintf("CREATE PROCEDURE %[1]s(\n"+
			"    IN p_key VARBINARY(%[2]d), IN p_owner VARCHAR(255) CHARACTER SET utf8mb4,\n"+
			"    IN p_session VARCHAR(64) CHARACTER SET ascii, IN p_waiter VARCHAR(64) CHARACTER SET ascii,\n"+
			"    IN p_ttl_us BIGINT, IN p_queue TINYINT)\n"+
			"    MODIFIES SQL DATA SQL SECURITY INVOKER\n"+
			"    COMMENT 'fencedsql sqllock: queue for (p_queue) or try p_key; grant it to the first live waiter'\n"+
			"proc: BEGIN\n"+
			"    DECLARE v_count BIGINT DEFAULT NULL;\n"+
			"    DECLARE v_token BIGINT DEFAULT 0;\n"+
			"    DECLARE v_ticket BIGINT DEFAULT NULL;\n"+
			"    DECLARE v_gone INT DEFAULT 0;\n"+
			"    DECLARE v_stale INT DEFAULT 0;\n"+
			"    DECLARE v_n BIGINT DEFAULT 0;\n"+
			"    DECLARE v_ahead BIGINT DEFAULT 0;\n"+
			"    DECLARE v_ahead_us BIGINT DEFAULT 0;\n"+
			"    DECLARE v_holder_us BIGINT DEFAULT 0;\n"+
			"    DECLARE v_holder BIGINT DEFAULT 0;\n"+
			"    DECLARE EXIT HANDLER FOR SQLEXCEPTION\n"+
			"    BEGIN\n"+
			"        ROLLBACK;\n"+
			"        RESIGNAL;\n"+
			"    END;\n"+
			"    body: BEGIN\n"+
			"        SELECT MAX(ticket), COALESCE(MAX(gone), 0),\n"+
			"               COALESCE(MAX(alive_until < UTC_TIMESTAMP(6) + INTERVAL (p_ttl_us * 2 DIV 3) MICROSECOND), 0)\n"+
			"          INTO v_ticket, v_gone, v_stale FROM %[3]s WHERE waiter_id = p_waiter;\n"+
			"        IF v_gone THEN\n"+
			"            SET v_token = -1;\n"+
			"            LEAVE body;\n"+
			"        END IF;\n"+
			"        IF p_queue THEN\n"+
			"            IF v_ticket IS NULL THEN\n"+
			"                INSERT INTO %[3]s (lock_key, waiter_id, session_id, owner, alive_until)\n"+
			"                    VALUES (p_key, p_waiter, p_session, p_owner, UTC_TIMESTAMP(6) + INTERVAL p_ttl_us MICROSECOND);\n"+
			"                SELECT MAX(ticket) INTO v_ticket FROM %[3]s WHERE waiter_id = p_waiter;\n"+
			"            ELSEIF v_stale THEN\n"+
			"                UPDATE %[3]s SET alive_until = UTC_TIMESTAMP(6) + INTERVAL p_ttl_us MICROSECOND\n"+
			"                    WHERE waiter_id = p_waiter AND gone = 0;\n"+
			"            END IF;\n"+
			"        END IF;\n"+
			"        SELECT COUNT(*), COALESCE(MAX(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), alive_until)), 0)\n"+
			"          INTO v_ahead, v_ahead_us FROM %[3]s\n"+
			"         WHERE lock_key = p_key AND gone = 0 AND alive_until > UTC_TIMESTAMP(6)\n"+
			"           AND (v_ticket IS NULL OR ticket < v_ticket);\n"+
			"        SELECT COALESCE(MAX(TIMESTAMPDIFF(MICROSECOND, UTC_TIMESTAMP(6), expires_at)), 0), COALESCE(MAX(token), 0)\n"+
			"          INTO v_holder_us, v_holder FROM %[4]s WHERE lock_key = p_key AND expires_at > UTC_TIMESTAMP(6);\n"+
			"        IF v_ahead > 0 OR v_holder_us > 0 THEN\n"+
			"            LEAVE body;\n"+
			"        END IF;\n"+
			"        START TRANSACTION;\n"+
			"        SELECT v INTO v_count FROM %[5]s WHERE id = 1 FOR UPDATE;\n"+
			"        IF v_count IS NULL THEN\n"+
			"            SIGNAL SQLSTATE '45000' SET MESSAGE_TEXT = 'fencedsql sqllock: the token counter row is missing';\n"+
			"        END IF;\n"+
			"        SELECT COUNT(*), COALESCE(MAX(gone), 0) INTO v_n, v_gone FROM %[3]s WHERE waiter_id = p_waiter FOR UPDATE;\n"+
			"        IF v_gone OR (p_queue AND v_n = 0) THEN\n"+
			"            COMMIT;\n"+
			"            SET v_token = -1;\n"+
			"            LEAVE body;\n"+
			"        END IF;\n"+
			"        SELECT COUNT(*) INTO v_n FROM %[4]s\n"+
			"            WHERE lock_key = p_key AND expires_at > UTC_TIMESTAMP(6) FOR UPDATE;\n"+
			"        SELECT COUNT(*) INTO v_ahead FROM %[3]s\n"+
			"         WHERE lock_key = p_key AND gone = 0 AND alive_until > UTC_TIMESTAMP(6)\n"+
			"           AND (v_ticket IS NULL OR ticket < v_ticket);\n"+
			"        IF v_n > 0 OR v_ahead > 0 THEN\n"+
			"            COMMIT;\n"+
			"            SET v_holder_us = IF(v_n > 0, 1, 0);\n"+
			"            LEAVE body;\n"+
			"        END IF;\n"+
			"        SET v_token = v_count + 1;\n"+
			"        UPDATE %[5]s SET v = v_token WHERE id = 1;\n"+
			"        INSERT INTO %[4]s (lock_key, owner, session_id, token, expires_at)\n"+
			"            VALUES (p_key, p_owner, p_waiter, v_token, UTC_TIMESTAMP(6) + INTERVAL p_ttl_us MICROSECOND)\n"+
			"            ON DUPLICATE KEY UPDATE owner = p_owner, session_id = p_waiter, token = v_token,\n"+
			"                expires_at = UTC_TIMESTAMP(6) + INTERVAL p_ttl_us MICROSECOND;\n"+
			"        IF p_queue THEN\n"+
			"            DELETE FROM %[3]s WHERE waiter_id = p_waiter;\n"+
			"        END IF;\n"+
			"        COMMIT;\n"+
			"        SET v_holder = v_token, v_holder_us = p_ttl_us, v_ahead = 0, v_ahead_us = 0;\n"+
			"    END body;\n"+
			"    SELECT v_token AS token, v_ahead AS ahead, v_holder_us AS holder_us, v_ahead_us AS ahead_us, v_holder AS holder;\n"+
			"    IF v_token > 0 THEN\n"+
			"        gc: BEGIN\n"+
			"            DECLARE CONTINUE HANDLER FOR SQLEXCEPTION BEGIN END;\n"+
			"            SET TRANSACTION ISOLATION LEVEL READ COMMITTED;\n"+
			"            DELETE FROM %[3]s WHERE alive_until < UTC_TIMESTAMP(6) ORDER BY alive_until LIMIT 8;\n"+
			"        END gc;\n"+
			"    END IF;\n"+
			"END proc", p, MaxKeyLen, w, t, c),
	}
}
