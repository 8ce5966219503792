package sqllock

import (
	"fmt"
	"hash/crc32"
	"strings"
)

// PostgreSQL's lease table, token sequence and functions: schema version 1 (pgDDL)
// and the waiter queue of version 2 (pgDDLv2).

// The backend's PostgreSQL advisory locks use the two-int form, which never collides
// with the one-bigint form applications use. Grants, RaiseFloor and LastToken are
// serialised by the table-wide lock (tableClass, 1); they first take (advisoryClass, 1),
// the lock earlier releases took alone, so that their clients stay serialised with this
// one during a rolling upgrade. CreateTable serialises on (advisoryClass, 0).

// advisoryClass is the class derived from the table's name as spelled: two spellings
// of one table ("t", "public.t") give two classes, so it orders nothing between them.
func advisoryClass(tn tableName) int32 {
	return int32(crc32.ChecksumIEEE([]byte("fencedsql.sqllock:" + tn.String())))
}

// tableClassSalt is mixed into the table's OID by tableClass, so that the class is not
// a small number another user of two-int advisory locks may have picked.
var tableClassSalt = int32(crc32.ChecksumIEEE([]byte("fencedsql.sqllock.table")))

// tableClass returns the SQL expression of the class of the grants' table-wide advisory
// lock, for name, an SQL expression of type text that names the lease table: the OID of
// the table the name resolves to when the expression runs (by the session's
// search_path for an unqualified name), XOR tableClassSalt. Every spelling of one table
// therefore takes the same lock. It fails with undefined_table (42P01) when name resolves
// to no table.
func tableClass(name string) string {
	return fmt.Sprintf("(%s::text::regclass::oid::int4 # (%d))", name, tableClassSalt)
}

// pgLiteral quotes s as a PostgreSQL string literal.
func pgLiteral(s string) string { return "'" + strings.ReplaceAll(s, "'", "''") + "'" }

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

// pgDDLv2: the waiter queue on PostgreSQL.
//
// Every routine reads with a fresh snapshot per statement (PL/pgSQL, READ COMMITTED), so
// a statement that waited for a lock sees what the lock holder committed. The locks:
//   - grants take the table-wide advisory lock (tableClass, 1), after (advisoryClass, 1),
//     before drawing a token, as in version 1, and hold it to commit: tokens follow
//     grant order across keys, whatever the spelling of the table's name;
//   - lock order: the request's waiter row, then the key's lease row, then the advisory
//     lock. A grant (and abandon) waits for the row locks before it takes the advisory
//     lock, never while holding it: a row lock held on one key (a slow renewal or
//     release, an operator's SELECT … FOR UPDATE) delays the grants of that key only.
//     A row that did not exist when the grant looked is locked NOWAIT under the
//     advisory lock; if another transaction holds it the function fails with
//     lock_not_available (55P03), nothing happened, and the session calls again;
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
	tclass := tableClass(pgLiteral(t))
	return []string{
		fmt.Sprintf(`CREATE SEQUENCE IF NOT EXISTS %s AS bigint MINVALUE 1 START WITH 1 CACHE 1 NO CYCLE`, wseq),
		fmt.Sprintf(`CREATE TABLE IF NOT EXISTS %s (
    ticket      bigint      NOT NULL DEFAULT pg_catalog.nextval('%s') PRIMARY KEY,
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
     WHERE w.lock_key = p_key AND NOT w.gone AND w.alive_until > pg_catalog.clock_timestamp()
     ORDER BY w.ticket LIMIT 1;
    IF v_w IS NOT NULL AND v_ch <> '' THEN
        PERFORM pg_catalog.pg_notify(v_ch, v_w);
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
    v_locked boolean;
BEGIN
    o_token := 0; o_ahead := 0; o_holder_us := 0; o_ahead_us := 0; o_holder := 0;
    SELECT w.ticket, w.gone, w.alive_until < pg_catalog.clock_timestamp() + v_ttl * 2 / 3
      INTO v_ticket, v_gone, v_stale FROM %[2]s w WHERE w.waiter_id = p_waiter;
    IF v_gone THEN
        o_token := -1;
        RETURN;
    END IF;
    IF p_queue THEN
        IF v_ticket IS NULL THEN
            INSERT INTO %[2]s AS w (lock_key, waiter_id, session_id, owner, channel, alive_until)
            VALUES (p_key, p_waiter, p_session, p_owner, p_channel, pg_catalog.clock_timestamp() + v_ttl)
            ON CONFLICT (waiter_id) DO NOTHING
            RETURNING w.ticket INTO v_ticket;
            IF v_ticket IS NULL THEN
                o_token := -1;
                RETURN;
            END IF;
        ELSIF v_stale THEN
            UPDATE %[2]s w SET alive_until = pg_catalog.clock_timestamp() + v_ttl, channel = p_channel
             WHERE w.waiter_id = p_waiter AND NOT w.gone;
            IF NOT FOUND THEN
                o_token := -1;
                RETURN;
            END IF;
        END IF;
    END IF;
    SELECT pg_catalog.count(*), coalesce(pg_catalog.max((extract(epoch FROM w.alive_until - pg_catalog.clock_timestamp()) * 1000000)::bigint), 0)
      INTO o_ahead, o_ahead_us FROM %[2]s w
     WHERE w.lock_key = p_key AND NOT w.gone AND w.alive_until > pg_catalog.clock_timestamp()
       AND (v_ticket IS NULL OR w.ticket < v_ticket);
    SELECT (extract(epoch FROM l.expires_at - pg_catalog.clock_timestamp()) * 1000000)::bigint, l.token
      INTO o_holder_us, o_holder FROM %[3]s l WHERE l.lock_key = p_key;
    IF o_holder_us > 0 AND p_queue THEN
        -- Held: lock the row, so that a release in progress either commits first (the
        -- key is then free) or waits for this transaction (and then notifies this waiter).
        SELECT (extract(epoch FROM l.expires_at - pg_catalog.clock_timestamp()) * 1000000)::bigint, l.token
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
    -- Row locks first, then the table-wide lock: wait here for the request's waiter row
    -- and the key's lease row (a renewal or release in progress, an operator's query),
    -- so that a grant never waits for a row lock while it holds the table-wide lock and
    -- a row lock on one key delays only that key's grants.
    IF p_queue THEN
        PERFORM 1 FROM %[2]s w WHERE w.waiter_id = p_waiter FOR UPDATE;
    END IF;
    PERFORM 1 FROM %[3]s l WHERE l.lock_key = p_key FOR NO KEY UPDATE;
    v_locked := FOUND;
    -- Grant, serialised with every other grant of the table (tokens in grant order).
    PERFORM pg_catalog.pg_advisory_xact_lock(%[5]d, 1);
    PERFORM pg_catalog.pg_advisory_xact_lock(%[7]s, 1);
    IF NOT v_locked THEN
        -- The key had no row: one that a grant inserted since must not be waited for
        -- here (lock_not_available, 55P03: nothing happened, the client calls again).
        PERFORM 1 FROM %[3]s l WHERE l.lock_key = p_key FOR NO KEY UPDATE NOWAIT;
    END IF;
    SELECT w.gone INTO v_gone FROM %[2]s w WHERE w.waiter_id = p_waiter;
    IF v_gone OR (p_queue AND v_gone IS NULL) THEN
        o_token := -1;
        RETURN;
    END IF;
    SELECT pg_catalog.count(*) INTO o_ahead FROM %[2]s w
     WHERE w.lock_key = p_key AND NOT w.gone AND w.alive_until > pg_catalog.clock_timestamp()
       AND (v_ticket IS NULL OR w.ticket < v_ticket);
    IF o_ahead > 0 THEN
        RETURN;
    END IF;
    INSERT INTO %[3]s AS l (lock_key, owner, session_id, token, expires_at)
    VALUES (p_key, p_owner, p_waiter, pg_catalog.nextval('%[6]s'), pg_catalog.clock_timestamp() + v_ttl)
    ON CONFLICT (lock_key) DO UPDATE
       SET owner = excluded.owner, session_id = excluded.session_id, token = excluded.token,
           expires_at = pg_catalog.clock_timestamp() + v_ttl
     WHERE l.expires_at <= pg_catalog.clock_timestamp()
    RETURNING l.token INTO o_token;
    IF o_token IS NULL THEN
        o_token := 0;
        SELECT (extract(epoch FROM l.expires_at - pg_catalog.clock_timestamp()) * 1000000)::bigint, l.token
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
        SELECT g.ticket FROM %[2]s g WHERE g.alive_until < pg_catalog.clock_timestamp()
         ORDER BY g.alive_until LIMIT 8 FOR UPDATE SKIP LOCKED);
END
$fn$`, tn.with("_grant_v2").quoted(Postgres), w, t, wake, class, tseq, tclass),
		// release: delete the grant (key, request, token); wake the first waiter.
		fmt.Sprintf(`CREATE OR REPLACE FUNCTION %[1]s(p_key text, p_waiter text, p_token bigint,
    OUT o_found boolean, OUT o_live boolean)
LANGUAGE plpgsql VOLATILE AS $fn$
BEGIN
    DELETE FROM %[2]s l WHERE l.lock_key = p_key AND l.session_id = p_waiter AND l.token = p_token
    RETURNING l.expires_at > pg_catalog.clock_timestamp() INTO o_live;
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
    IF NOT EXISTS (SELECT 1 FROM %[2]s l WHERE l.lock_key = p_key AND l.expires_at > pg_catalog.clock_timestamp()) THEN
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
    v_n      bigint;
    v_locked boolean;
BEGIN
    INSERT INTO %[2]s AS w (lock_key, waiter_id, session_id, owner, channel, alive_until, gone)
    VALUES (p_key, p_waiter, p_session, '', '', pg_catalog.clock_timestamp() + p_keep_us * interval '1 microsecond', true)
    ON CONFLICT (waiter_id) DO UPDATE SET gone = true, alive_until = excluded.alive_until;
    -- As in grant: the row lock before the table-wide lock, never the other way round.
    PERFORM 1 FROM %[3]s l WHERE l.lock_key = p_key AND l.session_id = p_waiter FOR UPDATE;
    v_locked := FOUND;
    PERFORM pg_catalog.pg_advisory_xact_lock(%[4]d, 1);
    PERFORM pg_catalog.pg_advisory_xact_lock(%[6]s, 1);
    IF NOT v_locked THEN
        PERFORM 1 FROM %[3]s l WHERE l.lock_key = p_key AND l.session_id = p_waiter FOR UPDATE NOWAIT;
    END IF;
    DELETE FROM %[3]s l WHERE l.lock_key = p_key AND l.session_id = p_waiter;
    GET DIAGNOSTICS v_n = ROW_COUNT;
    IF v_n > 0 THEN
        PERFORM %[5]s(p_key);
    END IF;
    RETURN v_n;
END
$fn$`, tn.with("_abandon_v2").quoted(Postgres), w, t, class, wake, tclass),
	}
}
