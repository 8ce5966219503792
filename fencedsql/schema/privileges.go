package schema

import (
	"context"
	"database/sql"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
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
// privileges keep those rights away from the application, so Check can check
// them: given roles with WithRoles, it adds to each table's report the application
// role's rights that lead around the guards, and where a statement can fix them, the
// statement (REVOKE, GRANT, ALTER … OWNER TO, triggers re-created with the owner as
// DEFINER).
//
// The check is opt-in, through the context, for two reasons: Check's verdict on
// a schema does not depend on who runs it (an administrator, often a superuser, runs
// it, and that is fine: the question is which role the application logs in as), and
// its signature (tables as variadic GuardSpecs) is public API. The context already
// carries the per-call parameters of this package (WithToken, ExpectVersion).

// WithRoles returns ctx carrying roles: Check called with it also checks the
// privileges of roles.App (and, when roles.Owner is set, the ownership of the guard
// objects), on dialects that implement Privileger. On a dialect without roles
// (SQLite) each report gets a note saying so.
func WithRoles(ctx context.Context, roles dialect.Roles) context.Context {
	return context.WithValue(ctx, rolesKey{}, roles)
}

type rolesKey struct{}

func rolesFrom(ctx context.Context) (dialect.Roles, bool) {
	r, ok := ctx.Value(rolesKey{}).(dialect.Roles)
	return r, ok
}

// checkPrivileges adds the roles' privilege problems to r when ctx carries Roles
// (WithRoles). It runs last: the ownership statements follow the DDL that creates
// the objects.
func checkPrivileges(ctx context.Context, db *sql.DB, d dialect.Dialect, spec GuardSpec, table dialect.TableName, r *TableReport) error {
	roles, ok := rolesFrom(ctx)
	if !ok {
		return nil
	}
	p, ok := d.(dialect.Privileger)
	if !ok {
		r.Notes = append(r.Notes, "privileges not checked: "+d.Name()+" has no roles (whoever can write the database file can drop the guards)")
		return nil
	}
	if roles.Owner != "" {
		r.Fix = p.OwnedDDL(r.Fix, roles.Owner)
	}
	_, guards := d.(dialect.Guarder)
	tombs := tombstones(ctx, d)
	found, err := p.PrivilegeProblems(ctx, catalogQuery(db), dialect.PrivilegeTable{
		Table: table, Roles: roles, Guard: guards, Tombstones: tombs && len(r.PrimaryKey) > 0, Fix: r.Fix,
	})
	if err != nil {
		return fmt.Errorf("fencedsql: schema.Check %s: the privilege query failed: %w", spec.Table, err)
	}
	for _, f := range found {
		if f.Problem != "" {
			r.Problems = append(r.Problems, f.Problem)
		}
		r.Fix = append(r.Fix, f.Fix...)
	}
	return nil
}
