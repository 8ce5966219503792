package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Privileges (dialect.Privileger; the threat model and least-privilege set-up of
// docs/design.md, G15).
//
// MySQL/MariaDB triggers have no owner that could disable them: whoever holds the
// TRIGGER privilege on a table can DROP and CREATE its triggers, and DROP or ALTER on
// it can remove or change the table under them. A trigger runs with the rights of its
// DEFINER, so the guard's and the tombstone guard's triggers, created with an owner
// account as DEFINER (OwnedDDL), write the tombstone table while the application
// account has no right on it at all. PrivilegeProblems reports, for the application
// account (Roles.App: "user@host", "user" for "user@%", "" for CURRENT_USER()),
// looking at its global (*.*), database (db.*) and table grants:
//
//   - SUPER: a superuser (no statement proposed: log the application in as another
//     account);
//   - TRIGGER, DROP or ALTER reaching the guarded table (globally, on its database or
//     on the table): it could drop the guard's triggers, or the table with them.
//     Fix: REVOKE at the level granted;
//   - CREATE TEMPORARY TABLES (globally or on the database): a temporary table named
//     like the tombstone table hides it from the triggers in that session. Fix: REVOKE;
//   - INSERT, UPDATE or DELETE granted globally or on the whole database: they reach
//     the tombstone table, which the application must not write. No statement is
//     proposed (a database-wide REVOKE would take its other tables too): grant the
//     application its tables one by one;
//   - any write, DROP, ALTER or TRIGGER granted on the tombstone table. Fix: REVOKE
//     ALL PRIVILEGES on it;
//   - EXECUTE missing on the guard's fence function, or SELECT on the token floor
//     (the one-statement DELETE calls the one and reads the other; EXECUTE is read
//     from mysql.procs_priv where the connection may). Fix: GRANT EXECUTE ON
//     FUNCTION, GRANT SELECT on the floor.
//   - SELECT, INSERT, UPDATE or DELETE missing on the guarded table. Fix: GRANT on
//     the table;
//   - guard triggers whose DEFINER is the application account, or (Roles.Owner set)
//     not the owner account. Fix: the trigger re-created with the owner as DEFINER.
//
// With Roles.Owner set it also checks the owner account's rights, which the triggers
// need when they fire: TRIGGER and SELECT on the guarded table, SELECT, INSERT and
// UPDATE on the tombstone table (GRANT proposed for what is missing).
//
// Limits: privileges the account receives through MariaDB/MySQL roles, and database
// grants with wildcards (GRANT … ON `app\_%`.*), are not followed; the account's
// grants must be readable by the connection (its own, or SELECT on the mysql
// database). A re-created trigger fires after other triggers of the same timing and
// event (MariaDB orders triggers by creation).

// OwnedDDL rewrites each CREATE TRIGGER and CREATE FUNCTION of ddl into CREATE
// DEFINER = owner TRIGGER (FUNCTION).
func (dialectImpl) OwnedDDL(ddl []string, owner string) []string {
	def := "CREATE DEFINER = " + accountSQL(parseAccount(owner)) + " "
	out := make([]string, len(ddl))
	for i, s := range ddl {
		for _, kind := range []string{"TRIGGER ", "FUNCTION "} {
			if rest, ok := strings.CutPrefix(s, "CREATE "+kind); ok {
				s = def + kind + rest
			}
		}
		out[i] = s
	}
	return out
}

type account struct{ user, host string }

// parseAccount splits "user@host" (quoted with ' or ` or not), "user" meaning user@%.
func parseAccount(s string) account {
	s = strings.TrimSpace(s)
	user, host := s, "%"
	if i := strings.LastIndex(s, "@"); i > 0 {
		user, host = s[:i], s[i+1:]
	}
	return account{unquoteAccount(user), unquoteAccount(host)}
}

func unquoteAccount(s string) string {
	if len(s) >= 2 && (s[0] == '\'' || s[0] == '`' || s[0] == '"') && s[len(s)-1] == s[0] {
		q := s[:1]
		return strings.ReplaceAll(s[1:len(s)-1], q+q, q)
	}
	return s
}

func accountSQL(a account) string { return literal(a.user) + "@" + literal(a.host) }

// grantee is the account as information_schema's GRANTEE columns spell it.
func (a account) grantee() string { return "'" + a.user + "'@'" + a.host + "'" }

func (a account) String() string { return a.user + "@" + a.host }

// privileges reads the account's grants: global, on database db, on table tbl.
type grants struct{ global, db, table map[string]bool }

func readGrants(ctx context.Context, query dialect.CatalogQuery, a account, db, table string) (grants, bool, error) {
	g := grants{map[string]bool{}, map[string]bool{}, map[string]bool{}}
	rows, err := query(ctx, "SELECT PRIVILEGE_TYPE FROM information_schema.USER_PRIVILEGES WHERE GRANTEE = ?", a.grantee())
	if err != nil {
		return g, false, err
	}
	for _, r := range rows {
		g.global[r[0]] = true
	}
	exists := len(rows) > 0 // every account has at least USAGE
	rows, err = query(ctx, "SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ? AND TABLE_SCHEMA = ?", a.grantee(), db)
	if err != nil {
		return g, exists, err
	}
	for _, r := range rows {
		g.db[r[0]] = true
	}
	rows, err = query(ctx, "SELECT PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = ? AND TABLE_SCHEMA = ? AND TABLE_NAME = ?", a.grantee(), db, table)
	if err != nil {
		return g, exists, err
	}
	for _, r := range rows {
		g.table[r[0]] = true
	}
	return g, exists, nil
}

func (g grants) has(p string) bool { return g.global[p] || g.db[p] || g.table[p] }

func pick(set map[string]bool, privs ...string) []string {
	var out []string
	for _, p := range privs {
		if set[p] {
			out = append(out, p)
		}
	}
	return out
}

// PrivilegeProblems implements dialect.Privileger.
func (d dialectImpl) PrivilegeProblems(ctx context.Context, query dialect.CatalogQuery, t dialect.PrivilegeTable) ([]dialect.PrivilegeProblem, error) {
	var out []dialect.PrivilegeProblem
	problem := func(p string, fix ...string) {
		out = append(out, dialect.PrivilegeProblem{Problem: p, Fix: fix})
	}
	q := d.QuoteIdent
	rows, err := query(ctx, "SELECT CURRENT_USER(), COALESCE(NULLIF(?, ''), DATABASE())", t.Table.Schema)
	if err != nil {
		return nil, err
	}
	if len(rows) == 0 || rows[0][1] == "" {
		return out, nil // no database: schema.Check reported the table missing
	}
	appName := t.Roles.App
	if appName == "" {
		appName = rows[0][0]
	}
	app := parseAccount(appName)
	db := rows[0][1]
	table := dialect.TableName{Schema: db, Name: t.Table.Name}
	tbl := table.Quote(q)
	tomb := tombTable(table)

	g, exists, err := readGrants(ctx, query, app, db, table.Name)
	if err != nil {
		return nil, err
	}
	if !exists {
		problem("application account " + app.String() + " does not exist, or its grants are not visible to this connection (SELECT on the mysql database shows them)")
		return out, nil
	}
	if g.global["SUPER"] {
		problem("application account " + app.String() + " has SUPER (a superuser): it can drop every guard; log the application in as an account with SELECT, INSERT, UPDATE, DELETE on its tables only")
		return out, nil
	}
	acct := accountSQL(app)
	danger := []string{"TRIGGER", "DROP", "ALTER", "CREATE TEMPORARY TABLES"}
	why := "TRIGGER lets it drop the guard's triggers, DROP and ALTER the table under them, CREATE TEMPORARY TABLES hide the tombstone table in its session"
	if p := pick(g.global, danger...); len(p) > 0 {
		problem("application account "+app.String()+" has "+strings.Join(p, ", ")+" on *.*: "+why, "REVOKE "+strings.Join(p, ", ")+" ON *.* FROM "+acct)
	}
	if p := pick(g.db, danger...); len(p) > 0 {
		problem("application account "+app.String()+" has "+strings.Join(p, ", ")+" on database "+db+": "+why, "REVOKE "+strings.Join(p, ", ")+" ON "+q(db)+".* FROM "+acct)
	}
	if p := pick(g.table, "TRIGGER", "DROP", "ALTER"); len(p) > 0 {
		problem("application account "+app.String()+" has "+strings.Join(p, ", ")+" on "+table.String()+": "+why, "REVOKE "+strings.Join(p, ", ")+" ON "+tbl+" FROM "+acct)
	}
	dml := []string{"INSERT", "UPDATE", "DELETE"}
	if p := pick(g.global, dml...); len(p) > 0 {
		problem("application account " + app.String() + " has " + strings.Join(p, ", ") + " on *.*, which reaches the tombstone tables: revoke it and grant the application its tables one by one (GRANT SELECT, INSERT, UPDATE, DELETE ON " + tbl + " TO " + acct + ")")
	}
	if p := pick(g.db, dml...); len(p) > 0 {
		problem("application account " + app.String() + " has " + strings.Join(p, ", ") + " on database " + db + ", which reaches the tombstone tables: revoke it and grant the application its tables one by one (GRANT SELECT, INSERT, UPDATE, DELETE ON " + tbl + " TO " + acct + ")")
	}
	var missing []string
	for _, p := range []string{"SELECT", "INSERT", "UPDATE", "DELETE"} {
		if !g.has(p) {
			missing = append(missing, p)
		}
	}
	if len(missing) > 0 {
		problem("application account "+app.String()+" lacks "+strings.Join(missing, ", ")+" on "+table.String()+": fenced writes need SELECT, INSERT, UPDATE and DELETE",
			"GRANT "+strings.Join(missing, ", ")+" ON "+tbl+" TO "+acct)
	}
	// The guard's fence function (the one-statement DELETE, deletefence.go): EXECUTE,
	// at the database or global level or on the function, which MariaDB keeps in
	// mysql.procs_priv (no information_schema view): judged when this connection may
	// read it. Without it fenced DELETEs run as two statements.
	if t.Guard && !g.has("EXECUTE") {
		rows, err := query(ctx, "SELECT 1 FROM mysql.procs_priv WHERE User = ? AND Host = ? AND Db = ? AND Routine_name = ? AND Routine_type = 'FUNCTION' AND FIND_IN_SET('Execute', Proc_priv) > 0", app.user, app.host, db, fenceFunc(table.Name))
		if err == nil && len(rows) == 0 {
			problem("application account "+app.String()+" lacks EXECUTE on the guard's fence function "+fenceFuncName(table).String()+": fenced DELETEs run as two statements instead of one",
				"GRANT EXECUTE ON FUNCTION "+fenceFuncName(table).Quote(q)+" TO "+acct)
		}
	}
	// The registry of guarded tables (schema.RegisterTables), when there is one: a
	// fenced pool reads it at its first connection and refuses to open without it.
	if reg, err := query(ctx, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, dialect.RegistryTable); err != nil {
		return nil, err
	} else if len(reg) > 0 {
		rg, _, err := readGrants(ctx, query, app, db, dialect.RegistryTable)
		if err != nil {
			return nil, err
		}
		if !rg.has("SELECT") {
			problem("application account "+app.String()+" cannot read the registry of guarded tables "+db+"."+dialect.RegistryTable+": a fenced pool refuses to open without it",
				"GRANT SELECT ON "+dialect.TableName{Schema: db, Name: dialect.RegistryTable}.Quote(d.QuoteIdent)+" TO "+acct)
		}
	}
	if fg, _, err := readGrants(ctx, query, app, db, dialect.FloorTable); err != nil {
		return nil, err
	} else if t.Guard && !fg.has("SELECT") {
		// The one-statement DELETE reads the floor itself and passes it to the fence
		// function (deletefence.go). Reading it is harmless; writing it is not (below).
		floor := floorTable(db)
		problem("application account "+app.String()+" cannot read the token floor "+floor.String()+": fenced DELETEs run as two statements instead of one",
			"GRANT SELECT ON "+floor.Quote(q)+" TO "+acct)
	} else if p := pick(fg.table, "INSERT", "UPDATE", "DELETE", "DROP", "ALTER"); len(p) > 0 {
		floor := floorTable(db)
		problem("application account "+app.String()+" has "+strings.Join(p, ", ")+" on the token floor "+floor.String()+": it could lower the floor (the triggers run as their DEFINER; the application needs no right on the table)",
			"REVOKE ALL PRIVILEGES ON "+floor.Quote(q)+" FROM "+acct)
	}
	if t.Tombstones {
		tg, _, err := readGrants(ctx, query, app, db, tomb.Name)
		if err != nil {
			return nil, err
		}
		if p := pick(tg.table, "INSERT", "UPDATE", "DELETE", "DROP", "ALTER", "TRIGGER"); len(p) > 0 {
			problem("application account "+app.String()+" has "+strings.Join(p, ", ")+" on the tombstone table "+tomb.String()+": it could erase or forge tombstones (the triggers run as their DEFINER; the application needs no right on the table)",
				"REVOKE ALL PRIVILEGES ON "+tomb.Quote(q)+" FROM "+acct)
		}
	}

	// The owner account: exists, and holds what its triggers need when they fire.
	var owner *account
	if t.Roles.Owner != "" {
		o := parseAccount(t.Roles.Owner)
		og, exists, err := readGrants(ctx, query, o, db, table.Name)
		if err != nil {
			return nil, err
		}
		switch {
		case !exists:
			problem("owner account " + o.String() + " does not exist, or its grants are not visible to this connection (CREATE USER " + accountSQL(o) + " ACCOUNT LOCK)")
		case o == app:
			problem("the application account " + app.String() + " is the owner account: the guards' DEFINER must be an account the application does not log in as")
		default:
			owner = &o
			if p := missingOf(og, "TRIGGER", "SELECT"); len(p) > 0 {
				problem("owner account "+o.String()+" lacks "+strings.Join(p, ", ")+" on "+table.String()+", which the guard's triggers need when they fire as their DEFINER",
					"GRANT "+strings.Join(p, ", ")+" ON "+tbl+" TO "+accountSQL(o))
			}
			// The token floor, read by both guard triggers.
			floor := floorTable(db)
			if fg, _, err := readGrants(ctx, query, o, db, floor.Name); err != nil {
				return nil, err
			} else if !fg.has("SELECT") {
				problem("owner account "+o.String()+" lacks SELECT on the token floor "+floor.String()+", which the guard's triggers read when they fire as their DEFINER",
					"GRANT SELECT ON "+floor.Quote(q)+" TO "+accountSQL(o))
			}
			if t.Tombstones {
				tg, _, err := readGrants(ctx, query, o, db, tomb.Name)
				if err != nil {
					return nil, err
				}
				if p := missingOf(tg, "SELECT", "INSERT", "UPDATE"); len(p) > 0 {
					problem("owner account "+o.String()+" lacks "+strings.Join(p, ", ")+" on the tombstone table "+tomb.String()+", which the tombstone triggers need when they fire as their DEFINER",
						"GRANT "+strings.Join(p, ", ")+" ON "+tomb.Quote(q)+" TO "+accountSQL(o))
				}
			}
		}
	}

	// The guard's triggers: who they run as.
	rows, err = query(ctx, "SELECT TRIGGER_NAME, DEFINER, ACTION_TIMING, EVENT_MANIPULATION, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND EVENT_OBJECT_TABLE = ? AND TRIGGER_NAME LIKE 'fencedsql\\_%' ORDER BY TRIGGER_NAME", db, table.Name)
	if err != nil {
		return nil, err
	}
	for _, r := range rows {
		name, definer := r[0], parseAccount(r[1])
		if recreated(t.Fix, q(name)) {
			continue
		}
		bad := ""
		switch {
		case definer == app:
			bad = "runs as the application account " + app.String() + " (its DEFINER), which then needs the rights the guard keeps from it"
		case owner != nil && definer != *owner:
			bad = "runs as " + definer.String() + ", not as the owner account " + owner.String()
		}
		if bad == "" {
			continue
		}
		var fix []string
		if owner != nil {
			trg := dialect.TableName{Schema: db, Name: name}.Quote(q)
			fix = []string{
				"DROP TRIGGER IF EXISTS " + trg,
				"CREATE DEFINER = " + accountSQL(*owner) + " TRIGGER " + trg + " " + r[2] + " " + r[3] + " ON " + tbl + " FOR EACH ROW\n" + r[4],
			}
		}
		problem("trigger "+name+" "+bad, fix...)
	}
	return out, nil
}

func missingOf(g grants, privs ...string) []string {
	var out []string
	for _, p := range privs {
		if !g.has(p) {
			out = append(out, p)
		}
	}
	return out
}

// recreated reports whether fix creates the trigger quoted as name.
func recreated(fix []string, name string) bool {
	for _, s := range fix {
		if strings.HasPrefix(s, "CREATE ") && strings.Contains(s, " TRIGGER ") && strings.Contains(s, name+" ") {
			return true
		}
	}
	return false
}

var _ dialect.Privileger = dialectImpl{}
