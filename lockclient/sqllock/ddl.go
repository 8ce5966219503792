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
// next to it, in order; each is one statement, to be executed on its own (MySQL's
// stored procedure contains ';' in its body, so they are not joined). table "" means
// DefaultTable.
//
// PostgreSQL: the sequence <table>_token_seq (bigint, CACHE 1, NO CYCLE: one counter for
// all keys and sessions) and the table. MySQL/MariaDB: the table, the one-row counter
// table <table>_token, its row, and the procedure <table>_grant_v1 that grants a lease
// in one round trip (it needs the CREATE ROUTINE privilege to be created and EXECUTE
// to be called; it runs with the caller's rights, SQL SECURITY INVOKER).
//
// Columns: lock_key (primary key), owner, session_id, token (BIGINT), expires_at
// (timestamptz on PostgreSQL; DATETIME(6) in UTC on MySQL).
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
		return pgDDL(tn), nil
	case MySQL:
		return myDDL(tn), nil
	}
	return nil, fmt.Errorf("sqllock: DDL: unknown dialect %v", d)
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
	}
}
