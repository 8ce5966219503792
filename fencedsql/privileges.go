package fencedsql

import (
	"context"
	"database/sql"
	"fmt"
)

// Privileges: the least-privilege set-up of the threat model (docs/design.md, G15).
//
// The guards defend against everyone who writes through ordinary DML: the application,
// its ORMs, stale holders, other services, hostile SQL sent through the fenced pool.
// They cannot defend against a role that may change them: a superuser, the owner of the
// guarded table or of a guard object (PostgreSQL: ALTER TABLE … DISABLE TRIGGER, DROP
// FUNCTION; owners need no privilege for that), a holder of the TRIGGER privilege
// (MySQL/MariaDB: DROP TRIGGER; PostgreSQL: a trigger of its own that fires before the
// guard and rewrites NEW), a role that can write a tombstone table directly. Only
// privileges keep those rights away from the application, so CheckSchema can check
// them: given roles with WithRoles, it adds to each table's report the application
// role's rights that lead around the guards, and where a statement can fix them, the
// statement (REVOKE, GRANT, ALTER … OWNER TO, triggers re-created with the owner as
// DEFINER).
//
// The check is opt-in, through the context, for two reasons: CheckSchema's verdict on
// a schema does not depend on who runs it (an administrator, often a superuser, runs
// it, and that is fine: the question is which role the application logs in as), and
// its signature (tables as variadic GuardSpecs) is public API. The context already
// carries the per-call parameters of this package (WithToken, ExpectVersion).

// Roles names the roles of the least-privilege set-up, for CheckSchema (WithRoles).
type Roles struct {
	// App is the role (PostgreSQL) or account (MySQL/MariaDB: "user@host", or "user"
	// for "user@%") the application's fenced pool logs in as. "" is the role of the
	// connection CheckSchema is given (current_user, CURRENT_USER()).
	App string
	// Owner, when not "", is the role that should own the guarded tables and the guard
	// objects (PostgreSQL), or be the DEFINER of the guard's triggers (MySQL/MariaDB):
	// CheckSchema then reports objects owned by another role, proposes the statements
	// that hand them over, and makes the guard DDL it proposes create them so.
	Owner string
}

// WithRoles returns ctx carrying roles: CheckSchema called with it also checks the
// privileges of roles.App (and, when roles.Owner is set, the ownership of the guard
// objects), on dialects that implement Privileger. On a dialect without roles
// (SQLite) each report gets a note saying so.
func WithRoles(ctx context.Context, roles Roles) context.Context {
	return context.WithValue(ctx, rolesKey{}, roles)
}

type rolesKey struct{}

func rolesFrom(ctx context.Context) (Roles, bool) {
	r, ok := ctx.Value(rolesKey{}).(Roles)
	return r, ok
}

// Privileger is implemented by dialects whose databases have roles and privileges
// (PostgreSQL, MySQL/MariaDB; SQLite has none: whoever can write the database file
// can drop the guards, and file permissions are the only defence there).
type Privileger interface {
	// OwnedDDL returns ddl (statements of a CheckSchema Fix) rewritten so that the
	// guard objects they create belong to owner: MySQL/MariaDB create the triggers
	// with DEFINER = owner; PostgreSQL returns ddl unchanged (PrivilegeProblems
	// proposes ALTER … OWNER TO for the objects the Fix creates).
	OwnedDDL(ddl []string, owner string) []string
	// PrivilegeProblems inspects the catalog through query (read-only) and returns
	// what in t.Roles' privileges leads around the guards of t.Table, each with the
	// statements that fix it where statements can, and the statements that complete
	// the set-up without a problem (ownership of objects the Fix is about to create).
	PrivilegeProblems(ctx context.Context, query CatalogQuery, t PrivilegeTable) ([]PrivilegeProblem, error)
}

// PrivilegeTable is what a Privileger is told about a guarded table.
type PrivilegeTable struct {
	Table TableName
	Roles Roles
	// Guard, Tombstones: the guard (the tombstone guard) is installed on the table
	// or the report's Fix installs it, so its objects exist once the Fix ran.
	Guard, Tombstones bool
	// Fix is the report's Fix so far (after OwnedDDL): statements proposed here run
	// after it, and need not repeat what it re-creates.
	Fix []string
}

// PrivilegeProblem is one finding of a Privileger. Problem "" is no problem: Fix
// only completes the set-up (say, hands an object the Fix creates to the owner).
type PrivilegeProblem struct {
	Problem string
	Fix     []string
}

// checkPrivileges adds the roles' privilege problems to r when ctx carries Roles
// (WithRoles). It runs last: the ownership statements follow the DDL that creates
// the objects.
func checkPrivileges(ctx context.Context, db *sql.DB, d Dialect, spec GuardSpec, table TableName, r *TableReport) error {
	roles, ok := rolesFrom(ctx)
	if !ok {
		return nil
	}
	p, ok := d.(Privileger)
	if !ok {
		r.Notes = append(r.Notes, "privileges not checked: "+d.Name()+" has no roles (whoever can write the database file can drop the guards)")
		return nil
	}
	if roles.Owner != "" {
		r.Fix = p.OwnedDDL(r.Fix, roles.Owner)
	}
	_, guards := d.(Guarder)
	_, tombs := d.(Tombstoner)
	found, err := p.PrivilegeProblems(ctx, catalogQuery(db), PrivilegeTable{
		Table: table, Roles: roles, Guard: guards, Tombstones: tombs && len(r.PrimaryKey) > 0, Fix: r.Fix,
	})
	if err != nil {
		return fmt.Errorf("fencedsql: CheckSchema %s: the privilege query failed: %w", spec.Table, err)
	}
	for _, f := range found {
		if f.Problem != "" {
			r.Problems = append(r.Problems, f.Problem)
		}
		r.Fix = append(r.Fix, f.Fix...)
	}
	return nil
}
