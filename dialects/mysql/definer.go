package mysql

import (
	"context"
	"errors"
	"strings"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Guard objects whose DEFINER does not exist (red-team rt57b F4).
//
// The guard's and the tombstone guard's triggers, and the tombstone guard's absence
// recorder (SQL SECURITY DEFINER), run as their DEFINER: the account that ran
// fencedsql-schema -apply, or the owner account (OwnedDDL). When that account no
// longer exists — dropped since (MariaDB and MySQL keep the objects, DROP USER only
// warns), or a dump restored on a server without it — every statement that fires
// the trigger (or calls the recorder) fails with error 1449 "The user specified as a
// definer (…) does not exist", the current holder's too. The guard's fence function
// is SQL SECURITY INVOKER: its definer is never used, and is not judged.
//
// guardTriggers and routines (through ownRecorder's verdict) report each such object
// (dialect.SideDoorGuardDefiner) with the statements that re-create it as the
// account that applies the fix (CREATE without DEFINER, as the install does; the
// owner account under schema.WithRoles, OwnedDDL), so schema.Check reports it and
// the lazy check refuses the table with a *SchemaError naming the object and the
// account instead of letting writes meet the raw 1449. Whether the definer exists
// is asked of the server (goneDefiners: SHOW GRANTS FOR it, one query per distinct
// definer, usually one, at the check only), which answers only an account that may
// read the mysql database: for any other (the application account of the
// least-privilege layout, which does not see the triggers either) nothing is judged,
// and the wrapper reads a 1449 on a guarded write as this problem (Classify:
// dialect.ErrorDefinerGone; the *SchemaError drops the table's cached verdict).
//
// Whether an existing definer holds the rights its objects need when they fire is
// not judged here: PrivilegeProblems checks the owner account's under
// schema.WithRoles (its limits: roles other than PUBLIC, wildcard grants); without
// them a write that fires an object whose definer lacks a right fails with the
// server's permission error.

// goneDefiners returns, of the DEFINER values definers (information_schema's
// spelling: user@host, or role@ for a role), those naming no account or role of
// the server: SHOW GRANTS FOR each distinct one (usually one) answers error 1141
// (ER_NONEXISTING_GRANT: every account and role holds at least USAGE). It reads the
// server's grant cache, not mysql.user: a read of that Aria table inside a
// transaction makes its later SAVEPOINTs fail (1178), and the lazy check may run
// inside the caller's transaction. None when the connection may not read others'
// grants (SELECT on the mysql database: 1044, nothing judged); another failure is
// returned. Names are quoted with backquotes (no sql_mode changes their reading).
//
// A role definer (MariaDB: role@, no host — an account's empty host is stored as
// '%', so a definer without a host is always a role) must be answered as the role:
// MariaDB reads SHOW GRANTS FOR name as the role when one exists, else as the
// account name@'%', which the trigger never runs as — it fails with 1449 (red-team
// rt58a F3: a role dropped and an account of its name created). So the answer counts
// only when it is the role's (roleGrants); any other answer is gone.
func (d dialectImpl) goneDefiners(ctx context.Context, query dialect.CatalogQuery, definers []string) (map[string]bool, error) {
	gone := map[string]bool{}
	seen := map[string]bool{}
	for _, def := range definers {
		if def == "" || seen[def] {
			continue
		}
		seen[def] = true
		user, host, isAccount := definerAccount(def)
		who := d.QuoteIdent(user)
		if isAccount {
			who += "@" + d.QuoteIdent(host)
		}
		rows, err := query(ctx, "SHOW GRANTS FOR "+who)
		var me *mysql.MySQLError
		switch {
		case err == nil:
			if !isAccount && !roleGrants(rows, user) {
				gone[def] = true
			}
		case errors.As(err, &me) && me.Number == 1141:
			gone[def] = true
		case d.Denied(err):
			return nil, nil
		default:
			return nil, err
		}
	}
	return gone, nil
}

// roleGrants reports whether rows, the answer of SHOW GRANTS FOR role, are the role's:
// its global line grants to the role itself — "… ON *.* TO `role`", the name quoted
// with backquotes, or double quotes under ANSI_QUOTES, ending the line or followed by
// a space — where an account's reads "… TO `role`@`host`".
func roleGrants(rows [][]string, role string) bool {
	for _, q := range []string{"`", `"`} {
		grantee := " ON *.* TO " + q + strings.ReplaceAll(role, q, q+q) + q
		for _, r := range rows {
			if len(r) == 0 {
				continue
			}
			if i := strings.Index(r[0], grantee); i >= 0 {
				if rest := r[0][i+len(grantee):]; rest == "" || rest[0] == ' ' {
					return true
				}
			}
		}
	}
	return false
}

// definerAccount splits a DEFINER as information_schema shows it: user@host at the
// last '@' (a user name may hold one, a host name may not); a role (MariaDB shows
// role@, with no host) is not an account.
func definerAccount(def string) (user, host string, isAccount bool) {
	if i := strings.LastIndexByte(def, '@'); i >= 0 {
		return def[:i], def[i+1:], def[i+1:] != ""
	}
	return def, "", false
}

// definerDoor is the report of the guard object what (e.g. "the BEFORE UPDATE
// trigger db.fencedsql_guard_t"), of table, whose DEFINER definer does not exist;
// fix re-creates it (nil when its text is hidden from this account).
func definerDoor(what, object string, table dialect.TableName, definer string, fix []string) dialect.SideDoor {
	problem := what + " of the guard of " + table.String() + " runs as its DEFINER " + definer + ", an account or role that does not exist (dropped since the install, or a dump restored on a server without it): " +
		"every write that fires it fails with error 1449, the current holder's too; re-create it as an existing account (fencedsql-schema -apply)"
	return dialect.SideDoor{Kind: dialect.SideDoorGuardDefiner, Object: object, Problem: problem, Fix: fix}
}
