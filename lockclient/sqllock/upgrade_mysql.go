package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// MySQL's CREATE PROCEDURE does not replace an existing procedure, so a change of a
// procedure's body is recognised by its COMMENT (myGrantComment, myGrantV1Comment,
// myRenewComment, myReleaseComment) and replaced by CreateTable: CREATE OR REPLACE PROCEDURE on MariaDB
// (atomic), DROP and CREATE on MySQL (during the moment in between, a grant finds the
// version-2 procedure missing and that backend grants with schema version 1's
// statements for a minute, see legacy.go; a version-1 call finds its procedure missing
// and fails, nothing granted; a renewal or release finds its procedure missing and
// that backend uses the plain statements for a minute, see renew_mysql.go).

// myProc is one of the procedures, the COMMENT of its current revision, and what an
// earlier revision (or its absence) gets wrong, for CheckTable's report.
type myProc struct {
	suffix  string // of the table's name: "_grant_v1", "_grant_v2", …
	comment string
	why     string
}

// myProcs are the procedures CreateTable keeps at their current revision, version 2 first.
var myProcs = [...]myProc{
	{"_grant_v2", myGrantComment, "an earlier one grants on a replica, judges expiry by the session's clock, waits for a key's row lock while holding the token counter, or reads the counter and the lease table as of a session's system_versioning_asof"},
	{"_grant_v1", myGrantV1Comment, "an earlier one grants on a replica, judges expiry by the session's clock, or reads the counter and the lease table as of a session's system_versioning_asof"},
	{"_renew_v2", myRenewComment, "without it renewals are plain statements, left uncommitted on a session with autocommit=0 or in a stray transaction; an earlier one reads the lease table as of a session's system_versioning_asof"},
	{"_release_v2", myReleaseComment, "without it releases are plain statements, left uncommitted on a session with autocommit=0 or in a stray transaction; an earlier one reads the lease table as of a session's system_versioning_asof"},
	{"_leave_v2", myLeaveComment, "without it a waiter leaves the queue by a plain statement, left uncommitted on a session with autocommit=0"},
	{"_abandon_v2", myAbandonComment, "without it abandoned requests are cleaned up by plain statements, left uncommitted on a session with autocommit=0"},
}

// myProcCurrent reports whether procedure p of tn exists with its current body (its
// comment is p.comment). A missing procedure is not current.
func myProcCurrent(ctx context.Context, db *sql.DB, tn tableName, p myProc) (bool, error) {
	var schema sql.NullString
	if tn.schema != "" {
		schema = sql.NullString{String: tn.schema, Valid: true}
	}
	var comment string
	err := db.QueryRowContext(ctx, "SELECT routine_comment FROM information_schema.routines "+
		"WHERE routine_schema = COALESCE(?, DATABASE()) AND routine_type = 'PROCEDURE' AND routine_name = ?",
		schema, tn.with(p.suffix).name).Scan(&comment)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return comment == p.comment, nil
}

// myOutdatedProcs returns the procedures of tn that are missing or not at their
// current revision.
func myOutdatedProcs(ctx context.Context, db *sql.DB, tn tableName) ([]myProc, error) {
	var out []myProc
	for _, p := range myProcs {
		ok, err := myProcCurrent(ctx, db, tn, p)
		if err != nil {
			return nil, err
		}
		if !ok {
			out = append(out, p)
		}
	}
	return out, nil
}

// myReplaceProcs replaces every outdated procedure of tn by its CREATE PROCEDURE
// statement among stmts (the DDL).
func myReplaceProcs(ctx context.Context, db *sql.DB, tn tableName, stmts []string) error {
	for _, p := range myProcs {
		ok, err := myProcCurrent(ctx, db, tn, p)
		if err != nil {
			return err
		}
		if ok {
			continue
		}
		stmt, err := myProcStmt(stmts, tn, p.suffix)
		if err != nil {
			return err
		}
		if err := myReplaceProc(ctx, db, tn, p.suffix, stmt); err != nil {
			return fmt.Errorf("procedure %s: %w", tn.with(p.suffix), err)
		}
	}
	return nil
}

// myReplaceProc replaces the procedure <tn><suffix> by stmt, its current CREATE
// PROCEDURE statement.
func myReplaceProc(ctx context.Context, db *sql.DB, tn tableName, suffix, stmt string) error {
	orReplace := strings.Replace(stmt, "CREATE PROCEDURE", "CREATE OR REPLACE PROCEDURE", 1)
	_, err := db.ExecContext(ctx, orReplace)
	if !isMySQLErr(err, 1064) { // ER_PARSE_ERROR: MySQL, no OR REPLACE
		return err
	}
	if _, err := db.ExecContext(ctx, "DROP PROCEDURE IF EXISTS "+tn.with(suffix).quoted(MySQL)); err != nil {
		return err
	}
	if _, err = db.ExecContext(ctx, stmt); isMySQLErr(err, 1304) {
		return nil // another CreateTable created it meanwhile
	}
	return err
}

// myProcStmt returns the CREATE PROCEDURE statement of <tn><suffix> among stmts.
func myProcStmt(stmts []string, tn tableName, suffix string) (string, error) {
	prefix := "CREATE PROCEDURE " + tn.with(suffix).quoted(MySQL) + "("
	for _, s := range stmts {
		if strings.HasPrefix(s, prefix) {
			return s, nil
		}
	}
	return "", fmt.Errorf("sqllock: internal error: no procedure %s in the DDL of %s", suffix, tn)
}
