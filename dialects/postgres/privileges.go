package postgres

import (
	"context"
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Privileges (dialect.Privileger; the threat model and least-privilege set-up of
// docs/design.md, G15).
//
// What only privileges can keep from the application role, and what
// PrivilegeProblems therefore reports for a guarded table:
//
//   - SUPERUSER: a superuser bypasses every check (and may SET
//     session_replication_role, though the guard's triggers are ENABLE ALWAYS and fire
//     in replica mode too). No statement is proposed: the application must log in as
//     another role (ALTER ROLE … NOSUPERUSER is for another superuser to run).
//   - SUPERUSER or CREATEROLE of the application role or of a role it is a member of,
//     and membership in pg_execute_server_program or pg_write_server_files
//     (roleAttributeProblems). Fix: ALTER ROLE … NOCREATEROLE, REVOKE … FROM app.
//
// Every right below that the application must not have is asked of every role the
// application role is a MEMBER of, inherited or not (it can SET ROLE to one:
// heldThrough, privileges_members.go), and its REVOKE names the roles that hold it.
//   - Ownership of the guarded table, of its guard function, of its tombstone table or
//     tombstone function, or membership in the role that owns one (an owner may ALTER
//     TABLE … DISABLE TRIGGER, DROP or CREATE OR REPLACE the function, write the
//     tombstone table), and ownership of the table's schema (DROP SCHEMA … CASCADE
//     drops objects owned by others). Fix, with an owner role named: ALTER … OWNER TO
//     the owner, or REVOKE owner FROM app.
//   - TRIGGER on the guarded table: a trigger of the application's own, firing before
//     the guard (triggers fire in name order), could rewrite NEW so that a stale write
//     passes. TRUNCATE: the guard's statement trigger refuses it, but it deletes
//     without row triggers (no tombstones). Fix: REVOKE.
//   - Any write (INSERT, UPDATE, DELETE, TRUNCATE) or TRIGGER on the tombstone table,
//     INSERT or UPDATE granted on one of its columns included (has_table_privilege
//     does not see those). The tombstone function is SECURITY DEFINER: it runs as its
//     owner, and the application needs no right on the table at all. Fix: REVOKE ALL.
//   - The token floor (FloorDDL; with the guard): any write or TRIGGER on the floor
//     table (column rights included), UPDATE or USAGE on its copy, the sequence
//     (setval), EXECUTE on the SECURITY DEFINER sync function, ownership of any of
//     them (or membership in their owner). Fix: REVOKE of those rights from the
//     application and PUBLIC (SELECT, which the guards need, stays); ALTER … OWNER TO
//     the owner role when the application owns one. A floor owned by another role is
//     not handed to the owner role (it is shared by every guarded table).
//   - CREATE on any schema, or on the database (which lets it create a schema): the
//     guard function's operators and type names resolve through the caller's
//     search_path, so a role that can create an operator (say bigint >= bigint,
//     always true) in a schema it puts before pg_catalog makes the guard's comparisons
//     its own. Fix: REVOKE CREATE (from PUBLIC too where PUBLIC has it).
//   - Missing SELECT, INSERT, UPDATE or DELETE on the guarded table, or USAGE on its
//     schema: fenced writes need them. Fix: GRANT.
//
// EXECUTE on the trigger functions is not needed (it is checked when a trigger is
// created, not when it fires: which is why the SECURITY DEFINER ones, the tombstone
// function and the floor's sync function, are not PUBLIC's); REFERENCES is not needed. BYPASSRLS is irrelevant (the
// guards are triggers, not policies).
//
// With Roles.Owner set it also reports the guarded table, the guard function, the
// tombstone table and the tombstone function owned by another role, and proposes
// ALTER … OWNER TO for them, including those the Fix is about to create (those without
// a problem of their own). Inheritance children and partitions (DescendantsQuery) keep
// their owners, but one owned by the application role, or by a role it is a member
// of, is reported: its owner can disable the guard's triggers cloned to it, or drop
// it (a red-team pass: the check was silent). Fix, with an owner role named: ALTER
// TABLE … OWNER TO the owner (or REVOKE owner FROM app).

// OwnedDDL returns ddl unchanged: on PostgreSQL, ownership is handed over afterwards
// (ALTER … OWNER TO, proposed by PrivilegeProblems).
func (dialectImpl) OwnedDDL(ddl []string, owner string) []string { return ddl }

type pgObject struct {
	kind, name string // kind: "table", "function", "schema"; name as the DDL spells it (quoted; a function's with its argument types)
	what       string // in words
	lookup     string // query yielding (owner, app is a member of the owner) for $1 = name, $2 = app
	// shared: an object of every guarded table's (the floor's): reported when the
	// application role owns it, but not handed to the owner role otherwise.
	shared bool
}

const (
	pgRelOwner  = `SELECT pg_catalog.pg_get_userbyid(c.relowner)::text, pg_catalog.pg_has_role($2, c.relowner, 'MEMBER') FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1)`
	pgFuncOwner = `SELECT pg_catalog.pg_get_userbyid(p.proowner)::text, pg_catalog.pg_has_role($2, p.proowner, 'MEMBER') FROM pg_catalog.pg_proc p WHERE p.oid = pg_catalog.to_regprocedure($1)`
)

// PrivilegeProblems implements dialect.Privileger.
func (d dialectImpl) PrivilegeProblems(ctx context.Context, query dialect.CatalogQuery, t dialect.PrivilegeTable) ([]dialect.PrivilegeProblem, error) {
	var out []dialect.PrivilegeProblem
	problem := func(p string, fix ...string) {
		out = append(out, dialect.PrivilegeProblem{Problem: p, Fix: fix})
	}
	q := d.QuoteIdent
	rows, err := query(ctx, `SELECT r.rolname::text, r.rolsuper FROM pg_catalog.pg_roles r WHERE r.rolname = COALESCE(NULLIF($1, ''), current_user)`, t.Roles.App)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		problem("application role " + t.Roles.App + " does not exist")
		return out, nil
	}
	app := rows[0][0]
	if flag(rows[0][1]) {
		problem("application role " + app + " is a superuser: it can disable or drop every guard (ALTER TABLE … DISABLE TRIGGER, DROP FUNCTION, session_replication_role); log the application in as a role without SUPERUSER that does not own the tables or the guards")
		return out, nil
	}
	if super, err := d.roleAttributeProblems(ctx, query, app, problem); err != nil || super {
		return out, err
	}
	owner := t.Roles.Owner
	if owner != "" {
		rows, err := query(ctx, `SELECT 1 FROM pg_catalog.pg_roles WHERE rolname = $1`, owner)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 {
			problem("owner role " + owner + " does not exist (CREATE ROLE " + q(owner) + " NOLOGIN)")
			owner = ""
		}
		if owner == app {
			problem("the application role " + app + " is the owner role: the guards need an owner the application does not log in as")
			owner = ""
		}
	}

	// The table, resolved: its schema and name.
	rows, err = query(ctx, `SELECT n.nspname::text, c.relname::text FROM pg_catalog.pg_class c JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace WHERE c.oid = pg_catalog.to_regclass($1)`, regclass(t.Table))
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 {
		return out, nil // no such table: schema.Check reports it
	}
	resolved := dialect.CatalogName(rows[0][0], rows[0][1])
	tbl := resolved.Quote(q)
	tomb := tombTable(resolved).Quote(q)

	// Owned objects: the table, its guard function, its tombstone table and function.
	objects := []pgObject{{kind: "TABLE", name: tbl, what: "the guarded table " + resolved.String(), lookup: pgRelOwner}}
	if t.Guard {
		// GuardDDL names the function as the table was configured (unqualified: the
		// first schema of the search path); resolve it the same way.
		objects = append(objects,
			pgObject{kind: "FUNCTION", name: guardFuncName(fold(t.Table)).Quote(q) + "()", what: "the guard function", lookup: pgFuncOwner},
			pgObject{kind: "FUNCTION", name: fenceFuncName(fold(t.Table)).Quote(q) + "(bigint, bigint)", what: "the fence function (the one-statement DELETE's)", lookup: pgFuncOwner},
			pgObject{kind: "FUNCTION", name: fencedFuncName(fold(t.Table)).Quote(q) + "(bigint, bigint)", what: "the fence's refusing function (the one-statement DELETE's)", lookup: pgFuncOwner})
	}
	if t.Tombstones {
		objects = append(objects,
			pgObject{kind: "TABLE", name: tomb, what: "the tombstone table " + tombTable(resolved).String(), lookup: pgRelOwner},
			pgObject{kind: "FUNCTION", name: tombFuncName(resolved).Quote(q) + "()", what: "the tombstone function", lookup: pgFuncOwner})
	}
	if t.Guard {
		// The floor (FloorDDL), where the table's guard functions read it (floorSchema;
		// RaiseTokenFloor raises it).
		where, err := d.floorSchema(ctx, query, resolved)
		if err != nil {
			return nil, err
		}
		floorRel := dialect.TableName{Schema: where, Name: dialect.FloorTable}
		objects = append(objects,
			pgObject{kind: "TABLE", name: floorRel.Quote(q), what: "the token floor table " + dialect.FloorTable, lookup: pgRelOwner, shared: true},
			pgObject{kind: "SEQUENCE", name: dialect.TableName{Schema: where, Name: floorSeq}.Quote(q), what: "the token floor's copy " + floorSeq, lookup: pgRelOwner, shared: true},
			pgObject{kind: "FUNCTION", name: dialect.TableName{Schema: where, Name: floorSyncTrigger}.Quote(q) + "()", what: "the token floor's sync function", lookup: pgFuncOwner, shared: true})
	}
	memberFixed := false
	for _, o := range objects {
		rows, err := query(ctx, o.lookup, o.name, app)
		if err != nil {
			return nil, err
		}
		alter := "ALTER " + o.kind + " " + o.name // a function's name carries its signature
		alter += " OWNER TO " + q(owner)
		if len(rows) == 0 {
			// Not there yet: the Fix creates it, as the role that runs the Fix.
			if owner != "" && !o.shared {
				out = append(out, dialect.PrivilegeProblem{Fix: []string{alter}})
			}
			continue
		}
		objOwner, member := rows[0][0], flag(rows[0][1])
		var fix []string
		if owner != "" && objOwner != owner && (!o.shared || member) {
			fix = append(fix, alter)
		}
		switch {
		case member && objOwner == app:
			problem("application role "+app+" owns "+o.what+": an owner can disable or drop the guards (ALTER TABLE … DISABLE TRIGGER, DROP FUNCTION); give it to a role the application does not log in as (fencedsql-schema -owner)", fix...)
			continue
		case member:
			if owner != "" && objOwner == owner && !memberFixed {
				fix = append(fix, "REVOKE "+q(owner)+" FROM "+q(app))
				memberFixed = true
			}
			problem("application role "+app+" is a member of "+objOwner+", which owns "+o.what+": it can act as the owner and disable or drop the guards", fix...)
			continue
		}
		if len(fix) > 0 {
			problem(o.what+" is owned by "+objOwner+", not by the owner role "+owner, fix...)
		}
	}

	// Partitions and inheritance children (DescendantsQuery, the wrapper's own notion):
	// the guard's triggers are cloned to them, and their owner can disable those, or
	// ALTER or DROP the descendant (its rows go without tombstones).
	dq, dargs := d.DescendantsQuery(resolved)
	descendants, err := query(ctx, dq, dargs...)
	if err != nil {
		return nil, err
	}
	for _, r := range descendants {
		child := dialect.CatalogName(r[0], r[1])
		// TRIGGER and TRUNCATE on the descendant itself (rights on a partition are its
		// own, not its root's): a trigger of the application's own fires there before
		// the cloned guard; a TRUNCATE of a partition fires none of the root's
		// statement triggers (only row triggers are cloned), so it deletes without
		// the guard's refusal and without tombstones.
		rights, err := query(ctx, `SELECT p, m.rolname::text FROM unnest(ARRAY['TRIGGER', 'TRUNCATE']) p, pg_catalog.pg_class c, pg_catalog.pg_roles m
WHERE c.oid = pg_catalog.to_regclass($1) AND `+heldThrough("pg_catalog.has_table_privilege", "c.oid", "c.relowner"), child.Quote(q), app)
		if err != nil {
			return nil, err
		}
		if g := grantsOf(app, rights, "TRIGGER", "TRUNCATE"); len(g.privs) > 0 {
			problem(g.who()+" has "+g.list()+" on "+child.String()+", a partition or inheritance child of the guarded table "+resolved.String()+": TRIGGER lets it add a trigger that fires before the guard's; a TRUNCATE of a partition fires none of the guard's statement triggers and leaves no tombstones",
				"REVOKE "+g.list()+" ON "+child.Quote(q)+" FROM "+g.from(q))
		}
		rows, err := query(ctx, pgRelOwner, child.Quote(q), app)
		if err != nil {
			return nil, err
		}
		if len(rows) == 0 || !flag(rows[0][1]) {
			continue
		}
		childOwner := rows[0][0]
		var fix []string
		switch {
		case owner != "" && childOwner != owner:
			fix = append(fix, "ALTER TABLE "+child.Quote(q)+" OWNER TO "+q(owner))
		case owner != "" && childOwner == owner && !memberFixed:
			fix = append(fix, "REVOKE "+q(owner)+" FROM "+q(app))
			memberFixed = true
		}
		who := "application role " + app + " owns"
		if childOwner != app {
			who = "application role " + app + " is a member of " + childOwner + ", which owns"
		}
		problem(who+" "+child.String()+", a partition or inheritance child of the guarded table "+resolved.String()+": an owner can disable the guard's triggers cloned to it (ALTER TABLE … DISABLE TRIGGER), or alter or drop it; give it to a role the application does not log in as (fencedsql-schema -owner)", fix...)
	}

	// The schema: its owner can DROP SCHEMA … CASCADE.
	rows, err = query(ctx, `SELECT pg_catalog.pg_get_userbyid(n.nspowner)::text, pg_catalog.pg_has_role($2, n.nspowner, 'MEMBER'), pg_catalog.has_schema_privilege($2, n.oid, 'USAGE') FROM pg_catalog.pg_namespace n WHERE n.nspname = $1`, resolved.Schema, app)
	if err != nil {
		return nil, err
	}
	if len(rows) > 0 {
		if flag(rows[0][1]) {
			problem("application role " + app + " owns schema " + resolved.Schema + " (or is a member of its owner " + rows[0][0] + "): DROP SCHEMA … CASCADE drops the guards with it; give the schema to another role (ALTER SCHEMA " + q(resolved.Schema) + " OWNER TO …)")
		} else if !flag(rows[0][2]) {
			problem("application role "+app+" lacks USAGE on schema "+resolved.Schema+": it cannot reach the guarded table", "GRANT USAGE ON SCHEMA "+q(resolved.Schema)+" TO "+q(app))
		}
	}

	// Rights on the guarded table: what it needs, what it must not have.
	// What it needs is asked of the role itself (its own and inherited rights: the
	// wrapper does not SET ROLE); what it must not have, of every role it can act as.
	rows, err = query(ctx, `SELECT pg_catalog.has_table_privilege($2, c.oid, 'SELECT'), pg_catalog.has_table_privilege($2, c.oid, 'INSERT'),
  pg_catalog.has_table_privilege($2, c.oid, 'UPDATE'), pg_catalog.has_table_privilege($2, c.oid, 'DELETE')
FROM pg_catalog.pg_class c WHERE c.oid = pg_catalog.to_regclass($1)`, tbl, app)
	if err != nil {
		return nil, err
	}
	if len(rows) > 0 {
		var missing []string
		for i, p := range []string{"SELECT", "INSERT", "UPDATE", "DELETE"} {
			if !flag(rows[0][i]) {
				missing = append(missing, p)
			}
		}
		if len(missing) > 0 {
			problem("application role "+app+" lacks "+strings.Join(missing, ", ")+" on "+resolved.String()+": fenced writes need SELECT, INSERT, UPDATE and DELETE",
				"GRANT "+strings.Join(missing, ", ")+" ON "+tbl+" TO "+q(app))
		}
	}
	rows, err = query(ctx, `SELECT p, m.rolname::text FROM unnest(ARRAY['TRIGGER', 'TRUNCATE']) p, pg_catalog.pg_class c, pg_catalog.pg_roles m
WHERE c.oid = pg_catalog.to_regclass($1) AND `+heldThrough("pg_catalog.has_table_privilege", "c.oid", "c.relowner"), tbl, app)
	if err != nil {
		return nil, err
	}
	if g := grantsOf(app, rows, "TRIGGER", "TRUNCATE"); len(g.privs) > 0 {
		problem(g.who()+" has "+g.list()+" on "+resolved.String()+": TRIGGER lets it add a trigger that fires before the guard and rewrites the row; TRUNCATE deletes without row triggers (the guard's statement trigger refuses it)",
			"REVOKE "+g.list()+" ON "+tbl+" FROM "+g.from(q))
	}

	// The tombstone table: nothing but through the SECURITY DEFINER function.
	if t.Tombstones {
		rows, err = query(ctx, pgWriteRights, tomb, app)
		if err != nil {
			return nil, err
		}
		if g := grantsOf(app, rows, writeRights...); len(g.privs) > 0 {
			problem(g.who()+" has "+g.list()+" on the tombstone table "+tombTable(resolved).String()+": it could erase or forge tombstones (the tombstone function runs as its owner; the application needs no right on the table)",
				"REVOKE ALL ON "+tomb+" FROM "+g.from(q))
		}
	}

	if t.Guard {
		if err := d.floorPrivilegeProblems(ctx, query, resolved, app, problem); err != nil {
			return nil, err
		}
	}

	// CREATE on a schema or on the database: operators and types of its own that the
	// guard function would resolve through a search_path of the caller's choosing. Each
	// query yields (object, whether PUBLIC has CREATE too).
	for _, c := range []struct {
		query, why, revoke string
	}{
		{`SELECT n.nspname::text, pg_catalog.has_schema_privilege('public', n.oid, 'CREATE') FROM pg_catalog.pg_namespace n
WHERE n.nspname NOT LIKE 'pg\_%' AND n.nspname <> 'information_schema' AND EXISTS (SELECT 1 FROM pg_catalog.pg_roles m WHERE pg_catalog.pg_has_role($1, m.oid, 'MEMBER') AND pg_catalog.has_schema_privilege(m.oid, n.oid, 'CREATE')) ORDER BY 1`,
			"can CREATE in schema %s: an operator or type of its own, put first in its search_path, would take the place of the ones the guard function compares with",
			"REVOKE CREATE ON SCHEMA %s FROM %s"},
		{`SELECT pg_catalog.current_database()::text, pg_catalog.has_database_privilege('public', pg_catalog.current_database(), 'CREATE') WHERE EXISTS (SELECT 1 FROM pg_catalog.pg_roles m WHERE pg_catalog.pg_has_role($1, m.oid, 'MEMBER') AND pg_catalog.has_database_privilege(m.oid, pg_catalog.current_database(), 'CREATE'))`,
			"can CREATE schemas in database %s: see CREATE on a schema",
			"REVOKE CREATE ON DATABASE %s FROM %s"},
	} {
		rows, err := query(ctx, c.query, app)
		if err != nil {
			return nil, err
		}
		for _, r := range rows {
			from := q(app)
			if flag(r[1]) {
				from += ", PUBLIC"
			}
			problem("application role "+app+" "+fmt.Sprintf(c.why, r[0]), fmt.Sprintf(c.revoke, q(r[0]), from))
		}
	}
	return out, nil
}

// pgWriteRights lists the rights of role $2 that write table $1 or put a trigger on it
// (the table's name and the rights, one a row): INSERT and UPDATE granted on a column
// only count too (has_table_privilege is false for those, has_any_column_privilege
// true; a red-team pass zeroed every tombstone's token through UPDATE (fence_token)).
// A table-level REVOKE takes the column rights with it.
// Rows: (right, a role holding it that $2 can act as: heldThrough).
var pgWriteRights = `SELECT p, m.rolname::text FROM unnest(ARRAY['INSERT', 'UPDATE', 'DELETE', 'TRUNCATE', 'TRIGGER']) p, pg_catalog.pg_class c, pg_catalog.pg_roles m
WHERE c.oid = pg_catalog.to_regclass($1) AND ` + heldThrough("pg_catalog.has_any_column_privilege", "c.oid", "c.relowner") + ` AND p IN ('INSERT', 'UPDATE')
UNION ALL
SELECT p, m.rolname::text FROM unnest(ARRAY['DELETE', 'TRUNCATE', 'TRIGGER']) p, pg_catalog.pg_class c, pg_catalog.pg_roles m
WHERE c.oid = pg_catalog.to_regclass($1) AND ` + heldThrough("pg_catalog.has_table_privilege", "c.oid", "c.relowner")

// floorPrivilegeProblems reports the application role's rights (those of every role
// it can act as: heldThrough) that change the token floor (FloorDDL) the guarded
// table's guard functions read (floorSchema, whatever the session's search_path): any write or TRIGGER on the floor
// table, column rights included (a floor lowered or deleted — an empty floor table is
// no floor — lets stale tokens through); UPDATE or USAGE on the floor's copy, the
// sequence (setval lowers the copy, which the guards' fast path trusts; nextval moves
// it); EXECUTE on the SECURITY DEFINER sync function (FloorDDL revokes it from
// PUBLIC; the function acts only as the floor table's own trigger, but EXECUTE is what
// lets a role attach it anywhere). The application needs SELECT on the table and the
// sequence only, which every role has. Fix: REVOKE of those rights from the
// application, the roles it holds them through, and PUBLIC (SELECT stays).
func (d dialectImpl) floorPrivilegeProblems(ctx context.Context, query dialect.CatalogQuery, table dialect.TableName, app string, problem func(string, ...string)) error {
	q := d.QuoteIdent
	// Where the floor is: the schema the table's guard functions name (nothing
	// before the guard is installed).
	where, err := d.floorSchema(ctx, query, table)
	if err != nil || where == "" {
		return err
	}
	floorTable := dialect.TableName{Schema: where, Name: dialect.FloorTable}
	seq := dialect.TableName{Schema: where, Name: floorSeq}
	fn := dialect.TableName{Schema: where, Name: floorSyncTrigger}.Quote(q) + "()"

	rows, err := query(ctx, pgWriteRights, floorTable.Quote(q), app)
	if err != nil {
		return err
	}
	if g := grantsOf(app, rows, writeRights...); len(g.privs) > 0 {
		problem(g.who()+" has "+g.list()+" on the token floor table "+floorTable.String()+": it could lower or remove the floor (an empty floor table is no floor) and let tokens below it write; the application needs SELECT only",
			"REVOKE "+g.list()+" ON "+floorTable.Quote(q)+" FROM "+g.from(q))
	}
	rows, err = query(ctx, `SELECT p, m.rolname::text FROM unnest(ARRAY['UPDATE', 'USAGE']) p, pg_catalog.pg_class c, pg_catalog.pg_roles m
WHERE c.oid = pg_catalog.to_regclass($1) AND c.relkind = 'S' AND `+heldThrough("pg_catalog.has_sequence_privilege", "c.oid", "c.relowner"), seq.Quote(q), app)
	if err != nil {
		return err
	}
	if g := grantsOf(app, rows, "UPDATE", "USAGE"); len(g.privs) > 0 {
		problem(g.who()+" has "+g.list()+" on the token floor's copy "+seq.String()+": setval lowers the copy the guards accept tokens by without reading the floor table (nextval moves it); the application needs SELECT only",
			"REVOKE "+g.list()+" ON SEQUENCE "+seq.Quote(q)+" FROM "+g.from(q))
	}
	rows, err = query(ctx, `SELECT p, m.rolname::text FROM unnest(ARRAY['EXECUTE']) p, pg_catalog.pg_proc f, pg_catalog.pg_roles m
WHERE f.oid = pg_catalog.to_regprocedure($1) AND `+heldThrough("pg_catalog.has_function_privilege", "f.oid", "f.proowner"), fn, app)
	if err != nil {
		return err
	}
	if g := grantsOf(app, rows, "EXECUTE"); len(g.privs) > 0 {
		problem(g.who()+" has EXECUTE on "+floorSyncTrigger+"(), the token floor's SECURITY DEFINER sync function: with it a role may attach the function as a trigger of a table of its own (the function refuses to act there; the install revokes EXECUTE from PUBLIC)",
			"REVOKE ALL ON FUNCTION "+fn+" FROM "+g.from(q))
	}
	return nil
}

// flag reads a catalog boolean (CatalogQuery renders booleans as "1"/"0").
func flag(s string) bool {
	s = strings.TrimSpace(s)
	return s == "1" || strings.EqualFold(s, "t") || strings.EqualFold(s, "true")
}

var _ dialect.Privileger = dialectImpl{}
