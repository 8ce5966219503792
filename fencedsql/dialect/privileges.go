package dialect

import "context"

// Roles names the roles of the least-privilege set-up, for schema.Check (WithRoles).
type Roles struct {
	// App is the role (PostgreSQL) or account (MySQL/MariaDB: "user@host", or "user"
	// for "user@%") the application's fenced pool logs in as. "" is the role of the
	// connection schema.Check is given (current_user, CURRENT_USER()).
	App string
	// Owner, when not "", is the role that should own the guarded tables and the guard
	// objects (PostgreSQL), or be the DEFINER of the guard's triggers (MySQL/MariaDB):
	// schema.Check then reports objects owned by another role, proposes the statements
	// that hand them over, and makes the guard DDL it proposes create them so.
	Owner string
}

// Privileger is implemented by dialects whose databases have roles and privileges
// (PostgreSQL, MySQL/MariaDB; SQLite has none: whoever can write the database file
// can drop the guards, and file permissions are the only defence there).
type Privileger interface {
	// OwnedDDL returns ddl (statements of a schema.Check Fix) rewritten so that the
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
