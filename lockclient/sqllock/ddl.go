package sqllock

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/lockclient"
)

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
// one-row counter table <table>_token, its row (starting at the highest token of the
// lease table, 0 for a new one), and the procedure <table>_grant_v1.
//
// Version 2 (the waiter queue) — both: the table <table>_waiters (one row per waiting
// Acquire: ticket, key, waiter id, session id, owner, alive_until, gone) with indexes on
// (lock_key, ticket) and alive_until. PostgreSQL: the sequence <table>_ticket_seq
// (CACHE 1) for tickets and the PL/pgSQL functions <table>_grant_v2, _release_v2,
// _leave_v2, _abandon_v2 and _wake_v2; MySQL: an AUTO_INCREMENT ticket and the
// procedure <table>_grant_v2.
//
// Renewals, releases and the queue's clean-ups, MySQL/MariaDB: the procedures
// <table>_renew_v2, <table>_release_v2, <table>_leave_v2 and <table>_abandon_v2, which
// commit at the server whatever the session's autocommit (renew_mysql.go; added after
// version 2, red-team rt41c F3: a table without them keeps working with the plain
// statements of earlier releases until CreateTable adds them).
//
// The routines run with the caller's rights (SQL SECURITY INVOKER, PostgreSQL's
// default); creating them needs CREATE ROUTINE on MySQL (EXECUTE to call) and CREATE on
// the schema on PostgreSQL.
//
// Lease table columns: lock_key (primary key), owner, session_id, token (BIGINT),
// expires_at (timestamptz on PostgreSQL; DATETIME(6) in UTC on MySQL).
//
// A table name New refuses (WithTable), or an unknown dialect, is an error wrapping
// lockclient.ErrInvalidConfig; so in DropDDL and CreateTable, which send nothing then.
func DDL(d Dialect, table string) ([]string, error) {
	tn, err := parseTable(orDefault(table))
	if err != nil {
		return nil, err
	}
	switch d {
	case Postgres:
		return append(pgDDL(tn), pgDDLv2(tn)...), nil
	case MySQL:
		return append(append(myDDL(tn), myDDLv2(tn)...), myDDLRenew(tn)...), nil
	}
	return nil, fmt.Errorf("sqllock: %w: DDL: unknown dialect %v", lockclient.ErrInvalidConfig, d)
}

// DropDDL returns the statements that remove the lease table of dialect d and every
// object DDL creates next to it (table "" means DefaultTable), in an order that works:
// routines, then tables, then sequences. Each is IF EXISTS, so it also cleans up a
// table created by an older version. Nothing holding a lease must use the table then.
// A bad table name or dialect is an error wrapping lockclient.ErrInvalidConfig (DDL).
func DropDDL(d Dialect, table string) ([]string, error) {
	tn, err := parseTable(orDefault(table))
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
			"DROP PROCEDURE IF EXISTS " + q("_renew_v2"),
			"DROP PROCEDURE IF EXISTS " + q("_release_v2"),
			"DROP PROCEDURE IF EXISTS " + q("_leave_v2"),
			"DROP PROCEDURE IF EXISTS " + q("_abandon_v2"),
			"DROP PROCEDURE IF EXISTS " + q("_grant_v2"),
			"DROP PROCEDURE IF EXISTS " + q("_grant_v1"),
			"DROP TABLE IF EXISTS " + q("_waiters"),
			"DROP TABLE IF EXISTS " + q("_token"),
			"DROP TABLE IF EXISTS " + tn.quoted(MySQL),
		}, nil
	}
	return nil, fmt.Errorf("sqllock: %w: DropDDL: unknown dialect %v", lockclient.ErrInvalidConfig, d)
}

// CreateTable creates the lease table of dialect d and the objects next to it (see DDL)
// if they do not exist yet; table "" means DefaultTable. It is safe to run at every
// start, also from several processes at once. Run it before New's backend is used:
// lockclient does not create tables by itself.
//
// A token source it creates next to an existing lease table (the PostgreSQL sequence or
// the MySQL counter row was lost) starts at the highest token the lease table holds, so
// no later grant gets a token at or below a holder's there. Tokens of grants released
// since are not in the table: after such a loss raise the floor (Backend.RaiseFloor,
// lockfloor -raise) above the highest token the guarded tables hold before the
// application writes, as after a rebuilt lock service.
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
		seq := tn.with("_token_seq").quoted(Postgres)
		var seqMissing bool
		if err := tx.QueryRowContext(ctx, "SELECT to_regclass($1::text) IS NULL", seq).Scan(&seqMissing); err != nil {
			return fmt.Errorf("sqllock: create table: %w", err)
		}
		for _, s := range stmts {
			if _, err := tx.ExecContext(ctx, s); err != nil {
				return fmt.Errorf("sqllock: create table: %w", err)
			}
		}
		if seqMissing {
			// A token sequence created next to a lease table that holds grants (it was
			// lost: dropped, not restored) starts above their tokens, not at 1. Grants
			// cannot draw from it before this transaction commits.
			q := fmt.Sprintf("SELECT setval(%s::regclass, m, true) FROM (SELECT max(token) AS m FROM %s) AS lease_tokens WHERE m > 0",
				pgLiteral(seq), tn.quoted(Postgres))
			if _, err := tx.ExecContext(ctx, q); err != nil {
				return fmt.Errorf("sqllock: create table: start the token sequence above the lease table's tokens: %w", err)
			}
		}
		if err := tx.Commit(); err != nil {
			return fmt.Errorf("sqllock: create table: %w", err)
		}
		return nil
	default:
		for _, s := range stmts {
			if _, err := db.ExecContext(ctx, s); err != nil {
				if isMySQLErr(err, 1304) { // ER_SP_ALREADY_EXISTS
					continue
				}
				return fmt.Errorf("sqllock: create table: %w", err)
			}
		}
		// A procedure created by an earlier revision is replaced.
		if err := myReplaceProcs(ctx, db, tn, stmts); err != nil {
			return fmt.Errorf("sqllock: create table: upgrade the procedures: %w", err)
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

// ddlV1 returns the statements of schema version 1 only (what an earlier release
// created), for tests of the upgrade path.
func ddlV1(d Dialect, tn tableName) []string {
	if d == Postgres {
		return pgDDL(tn)
	}
	return myDDL(tn)
}
