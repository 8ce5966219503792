package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The roles the application role can act as (PrivilegeProblems).
//
// A member of a role may SET ROLE to it (PostgreSQL 15 and before: any member; 16 and
// later: unless the membership was granted SET FALSE), whether or not the membership
// is inherited. has_table_privilege(app, …) and the other has_*_privilege functions
// count inherited rights only, so a right granted to a role that a NOINHERIT
// application role is a member of was invisible to the check, and the application
// took it with SET ROLE (a red-team pass lowered the token floor that way). So every
// right the check must keep from the application is asked of every role the
// application is a MEMBER of (pg_has_role(app, r, 'MEMBER'), itself included), and
// the fix revokes it from each role that holds it.

// writeRights are the rights that write a table or put a trigger on it, in the order
// they are reported (pgWriteRights).
var writeRights = []string{"INSERT", "UPDATE", "DELETE", "TRUNCATE", "TRIGGER"}

// heldThrough returns the SQL condition that role m (a row of pg_catalog.pg_roles)
// is one the application role ($2) can act as, and holds right p on obj by check (a
// has_*_privilege function taking (role oid, object oid, privilege)). A role that
// owns obj, or is a member of its owner (ownerExpr), other than the application role
// itself, is left out: ownership is reported on its own, and revoking the owner's
// rights would break the SECURITY DEFINER functions that run as it.
func heldThrough(check, obj, ownerExpr string) string {
	return `pg_catalog.pg_has_role($2, m.oid, 'MEMBER') AND (m.rolname = $2 OR NOT pg_catalog.pg_has_role(m.oid, ` + ownerExpr + `, 'MEMBER')) AND ` + check + `(m.oid, ` + obj + `, p)`
}

// grants are the rights (privs) that the roles holders, which the application role
// app can act as, hold on one object.
type grants struct {
	app            string
	privs, holders []string
}

// grantsOf reads rows of (right, holder) (heldThrough), the rights in the order of
// order, the application role first among the holders.
func grantsOf(app string, rows [][]string, order ...string) grants {
	g := grants{app: app}
	has := map[string]bool{}
	for _, r := range rows {
		if len(r) != 2 {
			continue
		}
		has[r[0]] = true
		if r[1] == app || contains(g.holders, r[1]) {
			continue
		}
		g.holders = append(g.holders, r[1])
	}
	for _, p := range order {
		if has[p] {
			g.privs = append(g.privs, p)
		}
	}
	return g
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

// list is the rights, comma-separated.
func (g grants) list() string { return strings.Join(g.privs, ", ") }

// who names the application role, and the roles it holds the rights through.
func (g grants) who() string {
	if len(g.holders) == 0 {
		return "application role " + g.app
	}
	return "application role " + g.app + " (through " + strings.Join(g.holders, ", ") + ", which it is a member of and can SET ROLE to)"
}

// from is the REVOKE's grantee list: the application role, the roles it holds the
// rights through, and PUBLIC.
func (g grants) from(quote func(string) string) string {
	names := []string{quote(g.app)}
	for _, h := range g.holders {
		names = append(names, quote(h))
	}
	return strings.Join(append(names, "PUBLIC"), ", ")
}

// roleAttributeProblems reports the role attributes of the application role app, and
// of every role it is a member of (it can SET ROLE to one), that hand it the guards:
//
//   - SUPERUSER of a role it is a member of: as its own SUPERUSER, every check is
//     bypassed. No statement is proposed (the membership, or the role, must go).
//     super is then true and nothing else is worth checking.
//   - CREATEROLE: on PostgreSQL 15 and before, a CREATEROLE role may grant itself
//     membership in any role that is not a superuser — the owner of the guards
//     included — then SET ROLE to it and disable the guard's triggers (a red-team
//     pass did). From 16 it may grant only roles it has ADMIN OPTION on (a membership,
//     which the ownership checks see), but the application needs no CREATEROLE, and it
//     is reported on every version. Fix: ALTER ROLE … NOCREATEROLE.
//   - Membership in pg_execute_server_program or pg_write_server_files: a program run
//     or a file written as the server's operating-system user reaches the data
//     directory and the server's configuration. Fix: REVOKE … FROM app.
//
// REPLICATION and BYPASSRLS are not reported: neither alters nor bypasses a trigger
// (the guard's triggers fire ALWAYS, in replica mode too).
func (d dialectImpl) roleAttributeProblems(ctx context.Context, query dialect.CatalogQuery, app string, problem func(string, ...string)) (super bool, err error) {
	q := d.QuoteIdent
	rows, err := query(ctx, `SELECT m.rolname::text, m.rolsuper, m.rolcreaterole FROM pg_catalog.pg_roles m
WHERE pg_catalog.pg_has_role($1, m.oid, 'MEMBER') AND (m.rolsuper OR m.rolcreaterole OR m.rolname IN ('pg_execute_server_program', 'pg_write_server_files'))
ORDER BY m.rolname <> $1, 1`, app)
	if err != nil {
		return false, err
	}
	for _, r := range rows {
		if len(r) != 3 {
			continue
		}
		role := r[0]
		who := "application role " + app
		if role != app {
			who += " is a member of " + role + " (it can SET ROLE to it), which"
		}
		switch {
		case flag(r[1]):
			problem(who + " is a superuser: it can disable or drop every guard (ALTER TABLE … DISABLE TRIGGER, DROP FUNCTION, session_replication_role); log the application in as a role that is not a member of a superuser role")
			super = true
		case flag(r[2]):
			problem(who+" has CREATEROLE: it can grant itself membership in the role that owns the guards (PostgreSQL 15 and before: any role that is not a superuser), SET ROLE to it and disable or drop the guards; the application needs no CREATEROLE",
				"ALTER ROLE "+q(role)+" NOCREATEROLE")
		default:
			problem("application role "+app+" is a member of "+role+": a program run or a file written as the server's operating-system user reaches the data directory and the configuration, and the guards with them",
				"REVOKE "+q(role)+" FROM "+q(app))
		}
	}
	return super, nil
}
