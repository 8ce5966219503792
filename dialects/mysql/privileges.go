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
// looking at its global (*.*), database (db.*) and table grants, and at those of
// MariaDB's PUBLIC (10.11 and later: GRANT … TO PUBLIC gives every account the rights),
// which count as the account's own and are reported as PUBLIC's, fixed FROM PUBLIC:
//
//   - SUPER: a superuser (no statement proposed: log the application in as another
//     account);
//   - the global privileges split from SUPER (MariaDB 10.5) or dynamic (MySQL 8)
//     that hand the guards over (handOver): SET USER / SET_USER_ID /
//     SET_ANY_DEFINER name any DEFINER, so a routine, trigger, view or event the
//     account creates in any database runs as the owner or an administrator (a
//     DEFINER procedure lowers the floor); BINLOG REPLAY (MySQL BINLOG_ADMIN,
//     REPLICATION_APPLIER) applies row events and REPLICATION SLAVE ADMIN points the
//     server at a primary of its choosing, whose row events fire no trigger; BINLOG
//     ADMIN (MySQL SYSTEM_VARIABLES_ADMIN, SESSION_VARIABLES_ADMIN) turns binary
//     logging off in the session, so its writes and their tombstones never reach a
//     replica. Fix: REVOKE … ON *.*. The other parts of SUPER (CONNECTION ADMIN,
//     READ_ONLY ADMIN, FEDERATED ADMIN, REPLICATION MASTER ADMIN, the MONITOR
//     ones) do not reach the guards and are not reported;
//   - ALTER ROUTINE globally or on the database: it drops the guard's fence
//     function, and with CREATE ROUTINE replaces it with one that passes every token
//     (the one-statement DELETE trusts it). Fix: REVOKE at the level granted. CREATE
//     ROUTINE alone is not reported: without SET USER a routine runs as its creator;
//   - TRIGGER, DROP or ALTER reaching the guarded table (globally, on its database or
//     on the table): it could drop the guard's triggers, or the table with them.
//     Fix: REVOKE at the level granted;
//   - CREATE TEMPORARY TABLES (globally or on the database): a temporary table named
//     like the tombstone table hides it from the triggers in that session. Fix: REVOKE;
//   - INSERT, UPDATE or DELETE granted globally or on the whole database: they reach
//     the tombstone table, which the application must not write. No statement is
//     proposed (a database-wide REVOKE would take its other tables too): grant the
//     application its tables one by one;
//   - any write, DROP, ALTER or TRIGGER granted on the tombstone table, or INSERT or
//     UPDATE on some of its columns (information_schema.COLUMN_PRIVILEGES: UPDATE
//     (fence_token) disarms every tombstone). Fix: REVOKE ALL PRIVILEGES on it;
//   - any write, DROP or ALTER granted on the token floor, or INSERT or UPDATE on some
//     of its columns. Fix: REVOKE of exactly those (the application may read the
//     floor);
//   - EXECUTE missing on the guard's fence function, or SELECT on the token floor
//     (the one-statement DELETE calls the one and reads the other; EXECUTE is read
//     from mysql.procs_priv where the connection may). Fix: GRANT EXECUTE ON
//     FUNCTION, GRANT SELECT on the floor;
//   - EXECUTE missing on the tombstone guard's absence recorder
//     fencedsql_tombclaim_<table> (absence.go: without it a claim of an absent key
//     fails with the server's permission error). Fix: GRANT EXECUTE ON PROCEDURE.
//   - SELECT, INSERT, UPDATE or DELETE missing on the guarded table. Fix: GRANT on
//     the table;
//   - guard triggers whose DEFINER is the application account, or (Roles.Owner set)
//     not the owner account. Fix: the trigger re-created with the owner as DEFINER.
//
// With Roles.Owner set it also checks the owner account's rights, which the triggers
// need when they fire: TRIGGER and SELECT on the guarded table, SELECT, INSERT and
// UPDATE on the tombstone table, and EXECUTE on the absence recorder, which MariaDB
// requires of a SQL SECURITY DEFINER routine's DEFINER (GRANT proposed for what is
// missing).
//
// Limits: privileges the account receives through MariaDB/MySQL roles other than
// PUBLIC (MySQL's mandatory_roles included), and database grants with wildcards
// (GRANT … ON `app\_%`.*), are not followed; the account's
// grants must be readable by the connection (its own, or SELECT on the mysql
// database). A re-created trigger fires after other triggers of the same timing and
// event (MariaDB orders triggers by creation).

// OwnedDDL rewrites each CREATE TRIGGER, CREATE FUNCTION and CREATE PROCEDURE of ddl
// into CREATE DEFINER = owner TRIGGER (FUNCTION, PROCEDURE).
func (dialectImpl) OwnedDDL(ddl []string, owner string) []string {
	def := "CREATE DEFINER = " + accountSQL(parseAccount(owner)) + " "
	out := make([]string, len(ddl))
	for i, s := range ddl {
		for _, kind := range []string{"TRIGGER ", "FUNCTION ", "PROCEDURE "} {
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
	rows, err = query(ctx, "SELECT PRIVILEGE_TYPE FROM information_schema.SCHEMA_PRIVILEGES WHERE GRANTEE = ? AND TABLE_SCHEMA = ? AND "+exactDatabase("TABLE_SCHEMA", db), a.grantee(), db)
	if err != nil {
		return g, exists, err
	}
	for _, r := range rows {
		g.db[r[0]] = true
	}
	rows, err = query(ctx, "SELECT PRIVILEGE_TYPE FROM information_schema.TABLE_PRIVILEGES WHERE GRANTEE = ? AND TABLE_SCHEMA = ? AND "+exactDatabase("TABLE_SCHEMA", db)+" AND TABLE_NAME = ?", a.grantee(), db, table)
	if err != nil {
		return g, exists, err
	}
	for _, r := range rows {
		g.table[r[0]] = true
	}
	return g, exists, nil
}

func (g grants) has(p string) bool { return g.global[p] || g.db[p] || g.table[p] }

// publicAccount is MariaDB's PUBLIC (10.11 and later), as information_schema's GRANTEE
// columns spell it ('PUBLIC'@”): the rights granted to it are every account's. MySQL
// and older MariaDB have none, and no account of that name and empty host: reading
// its grants finds nothing there.
var publicAccount = account{user: "PUBLIC"}

// holder is one grantee whose rights the application account holds: the account
// itself, or PUBLIC.
type holder struct {
	name string // as the problems name it
	sql  string // as REVOKE … FROM names it
	a    account
}

// holders are the application account app and PUBLIC.
func holders(app account) []holder {
	return []holder{
		{"application account " + app.String(), accountSQL(app), app},
		{"PUBLIC (every account)", "PUBLIC", publicAccount},
	}
}

// readBoth reads the grants of each of hs on database db and table tbl, and their
// union (what the application account holds); exists is whether the first (the
// application account) exists.
func readBoth(ctx context.Context, query dialect.CatalogQuery, hs []holder, db, tbl string) (own []grants, union grants, exists bool, err error) {
	union = grants{map[string]bool{}, map[string]bool{}, map[string]bool{}}
	for i, h := range hs {
		g, ok, err := readGrants(ctx, query, h.a, db, tbl)
		if err != nil {
			return nil, union, false, err
		}
		if i == 0 {
			exists = ok
		}
		for _, lv := range [][2]map[string]bool{{union.global, g.global}, {union.db, g.db}, {union.table, g.table}} {
			for p := range lv[1] {
				lv[0][p] = true
			}
		}
		own = append(own, g)
	}
	return own, union, exists, nil
}

// guardObject is a table of the guards' own that the application must not write: what
// the problems call it, why, the grants of each holder on it, the table-level rights
// that are refused, and whether the fix keeps the holder's other rights (the token
// floor, which the application may read) rather than revoking all.
type guardObject struct {
	obj     dialect.TableName
	what    string
	rule    string
	own     []grants
	bad     []string
	precise bool
}

// columnWrites lists the column-level INSERT and UPDATE rights of account a on table
// tbl of database db (information_schema.COLUMN_PRIVILEGES, where a grant like GRANT
// UPDATE (fence_token) ON t shows; TABLE_PRIVILEGES does not list it), each as the
// privilege and its columns in name order: they let a write the columns named, which
// for the tombstone table or the token floor is as bad as the table-level right.
func columnWrites(ctx context.Context, query dialect.CatalogQuery, a account, db, tbl string) ([]columnGrant, error) {
	rows, err := query(ctx, "SELECT PRIVILEGE_TYPE, COLUMN_NAME FROM information_schema.COLUMN_PRIVILEGES WHERE GRANTEE = ? AND TABLE_SCHEMA = ? AND "+exactDatabase("TABLE_SCHEMA", db)+" AND TABLE_NAME = ? AND PRIVILEGE_TYPE IN ('INSERT', 'UPDATE') ORDER BY PRIVILEGE_TYPE, COLUMN_NAME", a.grantee(), db, tbl)
	if err != nil {
		return nil, err
	}
	var out []columnGrant
	for _, r := range rows {
		if n := len(out); n > 0 && out[n-1].priv == r[0] {
			out[n-1].cols = append(out[n-1].cols, r[1])
		} else {
			out = append(out, columnGrant{r[0], []string{r[1]}})
		}
	}
	return out, nil
}

// columnGrant is one column-level privilege and the columns it is granted on.
type columnGrant struct {
	priv string
	cols []string
}

// sql is the grant as a GRANT or REVOKE lists it, the columns quoted by quote.
func (c columnGrant) sql(quote func(string) string) string {
	q := make([]string, len(c.cols))
	for i, col := range c.cols {
		q[i] = quote(col)
	}
	return c.priv + " (" + strings.Join(q, ", ") + ")"
}

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
	rows, err := query(ctx, "SELECT CURRENT_USER(), COALESCE(NULLIF(?, _binary''), DATABASE())", t.Table.Schema)
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

	// What the account holds: its own grants and PUBLIC's (MariaDB 10.11 and later),
	// each reported with the REVOKE that removes it from its grantee.
	hs := holders(app)
	own, g, exists, err := readBoth(ctx, query, hs, db, table.Name)
	if err != nil {
		return nil, err
	}
	if !exists {
		problem("application account " + app.String() + " does not exist, or its grants are not visible to this connection (SELECT on the mysql database shows them)")
		return out, nil
	}
	if own[0].global["SUPER"] {
		problem("application account " + app.String() + " has SUPER (a superuser): it can drop every guard; log the application in as an account with SELECT, INSERT, UPDATE, DELETE on its tables only")
		return out, nil
	}
	acct := accountSQL(app)
	for i, h := range hs {
		if p := pick(own[i].global, handOver...); len(p) > 0 {
			why := make([]string, len(p))
			for j, priv := range p {
				why[j] = priv + " " + handOverWhy[priv]
			}
			problem(h.name+" has "+strings.Join(p, ", ")+" on *.*, which hands it the guards: "+strings.Join(why, "; "), "REVOKE "+strings.Join(p, ", ")+" ON *.* FROM "+h.sql)
		}
		routineWhy := ": it can drop the guard's fence function " + fenceFuncName(table).String() + " and, with CREATE ROUTINE, put in its place one that passes every token, which the one-statement fenced DELETE trusts"
		if own[i].global["ALTER ROUTINE"] {
			problem(h.name+" has ALTER ROUTINE on *.*"+routineWhy, "REVOKE ALTER ROUTINE ON *.* FROM "+h.sql)
		}
		if own[i].db["ALTER ROUTINE"] {
			problem(h.name+" has ALTER ROUTINE on database "+db+routineWhy, "REVOKE ALTER ROUTINE ON "+q(db)+".* FROM "+h.sql)
		}
	}
	danger := []string{"TRIGGER", "DROP", "ALTER", "CREATE TEMPORARY TABLES"}
	why := "TRIGGER lets it drop the guard's triggers, DROP and ALTER the table under them, CREATE TEMPORARY TABLES hide the tombstone table in its session"
	dml := []string{"INSERT", "UPDATE", "DELETE"}
	for i, h := range hs {
		hg := own[i]
		if p := pick(hg.global, danger...); len(p) > 0 {
			problem(h.name+" has "+strings.Join(p, ", ")+" on *.*: "+why, "REVOKE "+strings.Join(p, ", ")+" ON *.* FROM "+h.sql)
		}
		if p := pick(hg.db, danger...); len(p) > 0 {
			problem(h.name+" has "+strings.Join(p, ", ")+" on database "+db+": "+why, "REVOKE "+strings.Join(p, ", ")+" ON "+q(db)+".* FROM "+h.sql)
		}
		if p := pick(hg.table, "TRIGGER", "DROP", "ALTER"); len(p) > 0 {
			problem(h.name+" has "+strings.Join(p, ", ")+" on "+table.String()+": "+why, "REVOKE "+strings.Join(p, ", ")+" ON "+tbl+" FROM "+h.sql)
		}
		// No statement proposed for a write granted globally or on the whole
		// database: a REVOKE at that level would take the other tables too.
		if p := pick(hg.global, dml...); len(p) > 0 {
			problem(h.name + " has " + strings.Join(p, ", ") + " on *.*, which reaches the tombstone tables and the token floor: revoke it (REVOKE " + strings.Join(p, ", ") + " ON *.* FROM " + h.sql + ") and grant the application its tables one by one (GRANT SELECT, INSERT, UPDATE, DELETE ON " + tbl + " TO " + acct + ")")
		}
		if p := pick(hg.db, dml...); len(p) > 0 {
			problem(h.name + " has " + strings.Join(p, ", ") + " on database " + db + ", which reaches the tombstone tables and the token floor: revoke it (REVOKE " + strings.Join(p, ", ") + " ON " + q(db) + ".* FROM " + h.sql + ") and grant the application its tables one by one (GRANT SELECT, INSERT, UPDATE, DELETE ON " + tbl + " TO " + acct + ")")
		}
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
		rows, err := query(ctx, "SELECT 1 FROM mysql.procs_priv WHERE (User = ? AND Host = ? OR User = ? AND Host = ?) AND Db = ? AND Routine_name = ? AND Routine_type = 'FUNCTION' AND FIND_IN_SET('Execute', Proc_priv) > 0", app.user, app.host, publicAccount.user, publicAccount.host, db, fenceFunc(table.Name))
		if err == nil && len(rows) == 0 {
			problem("application account "+app.String()+" lacks EXECUTE on the guard's fence function "+fenceFuncName(table).String()+": fenced DELETEs run as two statements instead of one",
				"GRANT EXECUTE ON FUNCTION "+fenceFuncName(table).Quote(q)+" TO "+acct)
		}
	}
	// The tombstone guard's absence recorder (absence.go): EXECUTE, read as the fence
	// function's. Without it a claim of an absent key fails with the server's
	// permission error (1370), a denial.
	// MariaDB also checks EXECUTE for the procedure's DEFINER when it runs (the owner
	// account, below).
	recorderDenied := func(a account) bool {
		rows, err := query(ctx, "SELECT 1 FROM mysql.procs_priv WHERE (User = ? AND Host = ? OR User = ? AND Host = ?) AND Db = ? AND Routine_name = ? AND Routine_type = 'PROCEDURE' AND FIND_IN_SET('Execute', Proc_priv) > 0", a.user, a.host, publicAccount.user, publicAccount.host, db, absenceProc(table.Name))
		return err == nil && len(rows) == 0
	}
	if t.Tombstones && !g.has("EXECUTE") {
		if recorderDenied(app) {
			problem("application account "+app.String()+" lacks EXECUTE on the tombstone guard's absence recorder "+absenceProcName(table).String()+": a SELECT … FOR UPDATE that pins the key of "+table.String()+" and finds no row fails with the server's permission error (a claim of an absent key records the key through it)",
				"GRANT EXECUTE ON PROCEDURE "+absenceProcName(table).Quote(q)+" TO "+acct)
		}
	}
	// The registry of guarded tables (schema.RegisterTables), when there is one: a
	// fenced pool reads it at its first connection and refuses to open without it.
	if reg, err := query(ctx, "SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND TABLE_NAME = ?", db, dialect.RegistryTable); err != nil {
		return nil, err
	} else if len(reg) > 0 {
		_, rg, _, err := readBoth(ctx, query, hs, db, dialect.RegistryTable)
		if err != nil {
			return nil, err
		}
		if !rg.has("SELECT") {
			problem("application account "+app.String()+" cannot read the registry of guarded tables "+db+"."+dialect.RegistryTable+": a fenced pool refuses to open without it",
				"GRANT SELECT ON "+dialect.TableName{Schema: db, Name: dialect.RegistryTable}.Quote(d.QuoteIdent)+" TO "+acct)
		}
	}
	// The token floor and the tombstone table: reading the floor is harmless (the
	// one-statement DELETE reads it itself and passes it to the fence function,
	// deletefence.go); writing either, at the table level or to some of its columns,
	// is not: the triggers run as their DEFINER, the application needs no such right.
	floor := floorTable(db)
	fown, fg, _, err := readBoth(ctx, query, hs, db, floor.Name)
	if err != nil {
		return nil, err
	}
	if t.Guard && !fg.has("SELECT") {
		problem("application account "+app.String()+" cannot read the token floor "+floor.String()+": fenced DELETEs run as two statements instead of one",
			"GRANT SELECT ON "+floor.Quote(q)+" TO "+acct)
	}
	guarded := []guardObject{{floor, "the token floor " + floor.String(), "it could lower the floor", fown, []string{"INSERT", "UPDATE", "DELETE", "DROP", "ALTER"}, true}}
	if t.Tombstones {
		town, _, _, err := readBoth(ctx, query, hs, db, tomb.Name)
		if err != nil {
			return nil, err
		}
		guarded = append(guarded, guardObject{tomb, "the tombstone table " + tomb.String(), "it could erase or forge tombstones", town, []string{"INSERT", "UPDATE", "DELETE", "DROP", "ALTER", "TRIGGER"}, false})
	}
	for _, o := range guarded {
		for i, h := range hs {
			p := pick(o.own[i].table, o.bad...)
			cols, err := columnWrites(ctx, query, h.a, db, o.obj.Name)
			if err != nil {
				return nil, err
			}
			shown, revoked := append([]string(nil), p...), append([]string(nil), p...)
			for _, c := range cols {
				shown = append(shown, c.priv+" ("+strings.Join(c.cols, ", ")+")")
				revoked = append(revoked, c.sql(q))
			}
			if len(shown) == 0 {
				continue
			}
			fix := "REVOKE ALL PRIVILEGES ON " + o.obj.Quote(q) + " FROM " + h.sql
			if o.precise {
				fix = "REVOKE " + strings.Join(revoked, ", ") + " ON " + o.obj.Quote(q) + " FROM " + h.sql
			}
			problem(h.name+" has "+strings.Join(shown, ", ")+" on "+o.what+": "+o.rule+" (the triggers run as their DEFINER; the application needs no such right)", fix)
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
				if !og.has("EXECUTE") && recorderDenied(o) {
					problem("owner account "+o.String()+" lacks EXECUTE on the tombstone guard's absence recorder "+absenceProcName(table).String()+", which MariaDB requires of its DEFINER when it runs: a claim of an absent key of "+table.String()+" fails with the server's permission error",
						"GRANT EXECUTE ON PROCEDURE "+absenceProcName(table).Quote(q)+" TO "+accountSQL(o))
				}
			}
		}
	}

	// The guard's triggers: who they run as.
	rows, err = query(ctx, "SELECT TRIGGER_NAME, DEFINER, ACTION_TIMING, EVENT_MANIPULATION, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = ? AND "+exactDatabase("TRIGGER_SCHEMA", db)+" AND EVENT_OBJECT_TABLE = ? AND TRIGGER_NAME LIKE 'fencedsql\\_%' ORDER BY TRIGGER_NAME", db, table.Name)
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
			fix = d.replaceTrigger("CREATE DEFINER = "+accountSQL(*owner),
				triggerDef{dialect.TableName{Schema: db, Name: name}, r[2] + " " + r[3] + " ON " + tbl + " FOR EACH ROW\n" + r[4]})
		}
		problem("trigger "+name+" "+bad, fix...)
	}
	return out, nil
}

// handOver are the global privileges (those MariaDB 10.5 split from SUPER, and MySQL
// 8's dynamic ones) that let an account run statements as another account or past
// the guards' triggers, whatever else it holds; handOverWhy says how, by privilege.
var handOver = []string{
	"SET USER", "SET_USER_ID", "SET_ANY_DEFINER",
	"BINLOG REPLAY", "BINLOG_ADMIN", "REPLICATION_APPLIER",
	"REPLICATION SLAVE ADMIN", "REPLICATION_SLAVE_ADMIN",
	"BINLOG ADMIN", "SYSTEM_VARIABLES_ADMIN", "SESSION_VARIABLES_ADMIN",
}

var handOverWhy = func() map[string]string {
	definer := "names any DEFINER: a routine, trigger, view or event it creates (wherever it has CREATE ROUTINE, TRIGGER, CREATE VIEW or EVENT) runs as the owner or an administrator, which can lower the token floor, erase tombstones or drop the guard's triggers"
	replay := "applies binary-log row events (the BINLOG statement), which fire no trigger"
	replica := "points the server at a primary of its choosing (CHANGE MASTER, START SLAVE), whose row events fire no trigger"
	binlog := "turns off binary logging in its session (SET sql_log_bin = 0): its writes and the tombstones they leave never reach a replica, which is promoted without them"
	return map[string]string{
		"SET USER": definer, "SET_USER_ID": definer, "SET_ANY_DEFINER": definer,
		"BINLOG REPLAY": replay, "BINLOG_ADMIN": replay + ", and " + binlog, "REPLICATION_APPLIER": replay,
		"REPLICATION SLAVE ADMIN": replica, "REPLICATION_SLAVE_ADMIN": replica,
		"BINLOG ADMIN": binlog, "SYSTEM_VARIABLES_ADMIN": binlog, "SESSION_VARIABLES_ADMIN": binlog,
	}
}()

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
