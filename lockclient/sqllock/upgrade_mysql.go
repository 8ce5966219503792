package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
)

// MySQL's CREATE PROCEDURE does not replace an existing procedure, so a change of the
// grant procedure's body within schema version 2 is recognised by its COMMENT
// (myGrantComment) and replaced by CreateTable: CREATE OR REPLACE PROCEDURE on MariaDB
// (atomic), DROP and CREATE on MySQL (during the moment in between, a grant finds the
// procedure missing and that backend grants with schema version 1's statements for a
// minute, see legacy.go).

// myGrantCurrent reports whether the grant procedure of tn exists with the current
// body (its comment is myGrantComment). A missing procedure is not current.
func myGrantCurrent(ctx context.Context, db *sql.DB, tn tableName) (bool, error) {
	var schema sql.NullString
	if tn.schema != "" {
		schema = sql.NullString{String: tn.schema, Valid: true}
	}
	var comment string
	err := db.QueryRowContext(ctx, "SELECT routine_comment FROM information_schema.routines "+
		"WHERE routine_schema = COALESCE(?, DATABASE()) AND routine_type = 'PROCEDURE' AND routine_name = ?",
		schema, tn.with("_grant_v2").name).Scan(&comment)
	switch {
	case errors.Is(err, sql.ErrNoRows):
		return false, nil
	case err != nil:
		return false, err
	}
	return comment == myGrantComment, nil
}

// myReplaceGrant replaces an outdated grant procedure of tn by stmt, the current
// CREATE PROCEDURE statement.
func myReplaceGrant(ctx context.Context, db *sql.DB, tn tableName, stmt string) error {
	ok, err := myGrantCurrent(ctx, db, tn)
	if err != nil || ok {
		return err
	}
	orReplace := strings.Replace(stmt, "CREATE PROCEDURE", "CREATE OR REPLACE PROCEDURE", 1)
	_, err = db.ExecContext(ctx, orReplace)
	if !isMySQLErr(err, 1064) { // ER_PARSE_ERROR: MySQL, no OR REPLACE
		return err
	}
	if _, err := db.ExecContext(ctx, "DROP PROCEDURE IF EXISTS "+tn.with("_grant_v2").quoted(MySQL)); err != nil {
		return err
	}
	if _, err = db.ExecContext(ctx, stmt); isMySQLErr(err, 1304) {
		return nil // another CreateTable created it meanwhile
	}
	return err
}

// myGrantStmt returns the CREATE PROCEDURE statement of the grant procedure among stmts.
func myGrantStmt(stmts []string, tn tableName) (string, error) {
	prefix := "CREATE PROCEDURE " + tn.with("_grant_v2").quoted(MySQL) + "("
	for _, s := range stmts {
		if strings.HasPrefix(s, prefix) {
			return s, nil
		}
	}
	return "", fmt.Errorf("sqllock: internal error: no grant procedure in the DDL of %s", tn)
}
