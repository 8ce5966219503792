package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// SideDoors finds the database-level side doors of a guarded table
// (dialect.SideDoorFinder), which schema.Check reports:
//
//   - inheritance children and partitions, at any depth. The wrapper fences
//     statements naming the guarded table, not its children or partitions, and:
//     a parent's row triggers do not fire for an inheritance child's rows (not even
//     for a statement on the parent), so a child needs the guard's and the tombstone
//     guard's triggers of its own; a partition gets its parent's row triggers
//     (cloned by PostgreSQL, also for partitions attached later), but not the
//     statement-level TRUNCATE trigger, so TRUNCATE of a partition is not refused.
//     Fix: those triggers on the child or partition, calling the guarded table's
//     trigger functions (fencedsql_guard_<table>, fencedsql_tombstone_<table>): the
//     same checks, tombstones kept under the guarded table's name (so a row deleted
//     from a child cannot be re-inserted into the parent under an older token), and
//     UnguardDDL / UntombstoneDDL (DROP FUNCTION … CASCADE) remove them with the
//     parent's. A disabled cloned trigger is re-enabled. A partition attached after
//     the check gets the row triggers but again needs its TRUNCATE trigger: re-run
//     the check after attaching partitions.
//   - updatable views over the table, at any depth (auto-updatable, or writable
//     through INSTEAD OF triggers or rules): a write to the view does not name the
//     table, so the wrapper sends it unfenced. The table's triggers fire for an
//     auto-updatable view, so the guard refuses what it can see (an UPDATE that does
//     not advance the version, an unfenced DELETE), but it cannot check a token.
//     Fix: an INSTEAD OF INSERT OR UPDATE OR DELETE trigger fencedsql_refuse on the
//     view, calling fencedsql_refuse_write() (created in the view's schema), which
//     refuses every write through the view with SQLSTATE FNCD1 (IsGuardError); or
//     revoke INSERT, UPDATE, DELETE on the view from the writers. A rule on the view
//     that writes the table is reported as a rule.
//   - rules (CREATE RULE) on the table, or on another relation with an action that
//     names the table (except views' SELECT rules): the statement the wrapper fenced
//     is rewritten into another one (DO INSTEAD), or another statement writes the
//     table (DO ALSO). Fix: DROP RULE; statements prepared under the rule (pgx
//     prepares and caches them per connection) keep its rewriting on PostgreSQL 15
//     after the rule is dropped, so reconnect the pools afterwards.
//   - foreign keys of the table with ON DELETE or ON UPDATE CASCADE, SET NULL or SET
//     DEFAULT (cascades, one of TriggerDoors): PostgreSQL runs the table's row
//     triggers for the cascade, so an installed guard refuses it (a DELETE of rows
//     the transaction did not fence first, an UPDATE that does not advance the
//     version) and the write to the referenced table fails; tombstones are recorded.
//     A note, not a problem — unless the action writes the token or version column
//     (red-team rt45b F8), where a version set higher passes the guard, or the
//     guard's trigger that would refuse it is not installed (wrapper-only fencing,
//     red-team rt65a F1), where nothing does.
//   - the doors a statement through the pool opens (TriggerDoors, which the lazy
//     check also runs): the updatable views and the rules above, triggers on other
//     relations, guarded or not, whose function writes the table, the table's own
//     BEFORE row triggers that may assign its token or version column, or whose WHEN
//     clause names one or whose function writes the table itself (ownTriggers),
//     a guard a table swap lost (lostGuard), and the guards' own tables — the
//     tombstone table and the floor — not as the guards created them
//     (guardTables), or changed by a trigger, a rule, a view over them, an event
//     trigger or a SECURITY DEFINER routine (otherTriggers' guard writers);
//   - routines carrying the name of one of the guard's functions but another
//     signature or kind (guardNamesakes, red-team rt57b F1, rt58a F1/F2): reported
//     here only, as the guard's calls cannot be taken by them.
//
// It first judges the session it reads the catalog through (catalogTrust, red-team
// rt52a).
func (d dialectImpl) SideDoors(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	return dialect.FindDoors(ctx, query, t, d.catalogTrust, d.descendants, d.childKeys, d.foreignTables, d.triggerDoors, d.guardNamesakes)
}

const (
	refuseTrigger  = "fencedsql_refuse"
	refuseFunction = "fencedsql_refuse_write"
	// refuseBody is the body of the view's refusing function: a view counts as closed
	// only when its fencedsql_refuse trigger calls a PL/pgSQL function of this name, in
	// the view's schema, with exactly this body (a function of the same name that
	// writes the table is no refusal: red-team rt20g F2).
	refuseBody = `
BEGIN
  RAISE EXCEPTION USING ERRCODE = '` + GuardSQLState + `',
    MESSAGE = pg_catalog.format('fencedsql: guard on %I.%I: %s through this view refused: it writes a fenced table the wrapper cannot see', TG_TABLE_SCHEMA, TG_TABLE_NAME, TG_OP),
    HINT = 'write to the fenced table through the fencedsql driver wrapper';
END
`
)

// descendants: inheritance children and partitions without the guard's triggers.
func (d dialectImpl) descendants(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	table := fold(t.Table)
	gfn, tfn := guardFunc(table.Name), tombFunc(table.Name)
	// One row per descendant and trigger name: (schema, name, is partition,
	// trigger, state), state 'c' cloned and enabled, 'o' own and enabled, 'd' disabled,
	// '' missing. A trigger counts when it calls the guarded table's function or the
	// descendant's own (a descendant that is itself a guarded table).
	rows, err := query(ctx, `WITH RECURSIVE d(oid) AS (
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent = pg_catalog.to_regclass($1)
  UNION
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid)
SELECT n.nspname::text, c.relname::text, CASE WHEN c.relispartition THEN 1 ELSE 0 END, w.tgname,
  COALESCE((SELECT CASE WHEN t.tgenabled <> 'A' THEN 'd' WHEN t.tgparentid <> 0 THEN 'c' ELSE 'o' END
    FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
    WHERE t.tgrelid = c.oid AND t.tgname = w.tgname
      AND p.proname IN (w.fn, CASE WHEN w.tomb THEN 'fencedsql_tombstone_' ELSE 'fencedsql_guard_' END || c.relname)), ''),
  (SELECT pn.nspname::text FROM pg_catalog.pg_class pc JOIN pg_catalog.pg_namespace pn ON pn.oid = pc.relnamespace WHERE pc.oid = pg_catalog.to_regclass($1))
FROM d JOIN pg_catalog.pg_class c ON c.oid = d.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
CROSS JOIN (VALUES ($2, $6, false, 1), ($9, $6, false, 2), ($3, $6, false, 3), ($4, $7, true, 4), ($5, $7, true, 5), ($8, $7, true, 6)) AS w(tgname, fn, tomb, ord)
ORDER BY 1, 2, w.ord`,
		regclass(t.Table), guardTrigger, guardTruncateTrigger, tombDeleteTrigger, tombInsertTrigger, gfn, tfn, tombRekeyTrigger, guardDeleteTrigger)
	if err != nil {
		return nil, err
	}
	type desc struct {
		tbl       dialect.TableName
		partition bool
		state     map[string]string
	}
	var order []*desc
	byName := map[string]*desc{}
	parentSchema := table.Schema
	for _, r := range rows {
		if len(r) < 6 {
			continue
		}
		parentSchema = r[5]
		key := r[0] + "." + r[1]
		ds := byName[key]
		if ds == nil {
			ds = &desc{tbl: dialect.CatalogName(r[0], r[1]), partition: r[2] == "1", state: map[string]string{}}
			byName[key] = ds
			order = append(order, ds)
		}
		ds.state[r[3]] = r[4]
	}
	fnName := func(fn string) string {
		if fn == tfn { // the tombstone function lives in the parent's schema
			return dialect.TableName{Schema: parentSchema, Name: fn}.Quote(d.QuoteIdent)
		}
		return dialect.TableName{Schema: table.Schema, Name: fn}.Quote(d.QuoteIdent)
	}
	var doors []dialect.SideDoor
	for _, ds := range order {
		tbl := ds.tbl.Quote(d.QuoteIdent)
		var missing, fix []string
		want := []struct {
			trg, fn, when string
			row           bool
		}{
			{guardTrigger, gfn, "BEFORE INSERT OR UPDATE", true},
			{guardDeleteTrigger, gfn, "AFTER DELETE", true},
			{guardTruncateTrigger, gfn, "BEFORE TRUNCATE", false},
		}
		if t.Tombstones {
			want = append(want, struct {
				trg, fn, when string
				row           bool
			}{tombDeleteTrigger, tfn, "AFTER DELETE", true}, struct {
				trg, fn, when string
				row           bool
			}{tombInsertTrigger, tfn, "AFTER INSERT", true}, struct {
				trg, fn, when string
				row           bool
			}{tombRekeyTrigger, tfn, "AFTER UPDATE", true})
		}
		for _, w := range want {
			st := ds.state[w.trg]
			switch {
			case st == "c" || st == "o":
				continue
			case st == "d":
				missing = append(missing, w.trg+" (disabled)")
				fix = append(fix, "ALTER TABLE "+tbl+" ENABLE ALWAYS TRIGGER "+w.trg)
			case ds.partition && w.row:
				// Cloned from the parent by PostgreSQL when the parent's trigger is
				// created (the parent's own Fix): nothing to do here.
				continue
			default:
				each := " FOR EACH STATEMENT"
				if w.row {
					each = " FOR EACH ROW"
				}
				missing = append(missing, w.trg)
				fix = append(fix, "DROP TRIGGER IF EXISTS "+w.trg+" ON "+tbl,
					"CREATE TRIGGER "+w.trg+" "+w.when+" ON "+tbl+each+" "+d.triggerWhen(w.trg, t.Table, t.TokenColumn, dialect.KeyColumnsNamed(t.PrimaryKey))+"EXECUTE FUNCTION "+fnName(w.fn)+"()",
					"ALTER TABLE "+tbl+" ENABLE ALWAYS TRIGGER "+w.trg)
			}
		}
		if len(missing) == 0 {
			continue
		}
		sd := dialect.SideDoor{Kind: dialect.SideDoorChild, Object: ds.tbl.String(), Fix: fix}
		if ds.partition {
			sd.Kind = dialect.SideDoorPartition
			sd.Problem = "partition of " + t.Table.String() + " without the trigger(s) " + strings.Join(missing, ", ") +
				": statements naming the partition are not fenced by the wrapper, and TRUNCATE of it fires only its own triggers"
		} else {
			sd.Problem = "inheritance child of " + t.Table.String() + " without the trigger(s) " + strings.Join(missing, ", ") +
				": the parent's row triggers do not fire for its rows (not even for statements on the parent), and statements naming it are not fenced by the wrapper"
		}
		doors = append(doors, sd)
	}
	return doors, nil
}

// childKeys: the inheritance children of a table with tombstones. A child shares its
// parent's tombstone table, keyed on the parent's key, but no unique index: PostgreSQL
// enforces no uniqueness across an inheritance hierarchy. So a key can live in the
// parent and a child at once, and an INSERT into one never waits for a concurrent
// DELETE of the key in the other — the tombstone check (READ COMMITTED) reads before
// that DELETE commits and a stale holder's INSERT brings the deleted key back (a
// red-team pass, with a child keyed like its parent); a child keyed on other columns
// lets a deleted row come back under another value of the parent's key at once (an
// earlier pass). Every such child is reported, with no fix statement: use declarative
// partitioning (partitions share their root's key and are not judged) or separate
// tables. Only with the tombstones.
func (d dialectImpl) childKeys(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if !t.Tombstones || len(t.PrimaryKey) == 0 {
		return nil, nil
	}
	rows, err := query(ctx, `WITH RECURSIVE d(oid) AS (
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i WHERE i.inhparent = pg_catalog.to_regclass($1)
  UNION
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid)
SELECT n.nspname::text, c.relname::text, COALESCE((SELECT pg_catalog.string_agg(a.attname::text, ',' ORDER BY k.ord)
    FROM pg_catalog.pg_index i CROSS JOIN LATERAL pg_catalog.unnest(i.indkey::pg_catalog.int2[]) WITH ORDINALITY k(attnum, ord)
    JOIN pg_catalog.pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = k.attnum
    WHERE i.indrelid = c.oid AND i.indisprimary AND k.ord <= i.indnkeyatts), '')
FROM d JOIN pg_catalog.pg_class c ON c.oid = d.oid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE NOT c.relispartition ORDER BY 1, 2`, regclass(t.Table))
	if err != nil {
		return nil, err
	}
	want := strings.Join(t.PrimaryKey, ",")
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) != 3 {
			continue
		}
		child := dialect.CatalogName(r[0], r[1])
		problem := "inheritance child of " + t.Table.String() + ": PostgreSQL enforces no unique key across an inheritance hierarchy, so a key can live in the child and the parent at once, and an INSERT into one does not wait for a concurrent DELETE of the key in the other — a stale holder's INSERT races past the tombstone of a DELETE under a newer token; use declarative partitioning (PARTITION BY, whose partitions share the root's key) or separate tables"
		if r[2] != want {
			key := r[2]
			if key == "" {
				key = "no primary key"
			}
			problem = "inheritance child of " + t.Table.String() + " keyed on (" + key + "), not on the guarded table's key (" + want + "): its rows' tombstones key on (" + want +
				"), so after a DELETE under a newer token a stale holder can insert the row again under another (" + want + "); and " + problem[len("inheritance child of "+t.Table.String()+": "):]
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorChild, Object: child.String(), Problem: problem})
	}
	return doors, nil
}

// foreignTables: foreign tables whose table_name option names the table (any server:
// whether a server loops back to this database is not knowable from the catalog, so
// every one is reported). A red-team pass wrote the guarded table under a stale token
// through a postgres_fdw loopback foreign table created outside the wrapper.
func (d dialectImpl) foreignTables(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `SELECT n.nspname::text, c.relname::text, s.srvname::text FROM pg_catalog.pg_foreign_table ft
  JOIN pg_catalog.pg_class c ON c.oid = ft.ftrelid JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
  JOIN pg_catalog.pg_foreign_server s ON s.oid = ft.ftserver
WHERE EXISTS (SELECT 1 FROM pg_catalog.unnest(ft.ftoptions) o(opt) WHERE pg_catalog.lower(o.opt) = 'table_name=' || pg_catalog.lower($1))
ORDER BY 1, 2`, t.Table.Name)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) != 3 {
			continue
		}
		ft := dialect.CatalogName(r[0], r[1])
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorForeign, Object: ft.String(),
			Problem: "foreign table " + ft.String() + " on server " + r[2] + " names a remote table " + t.Table.Name + ": if the server is this database (a loopback), writes to it change " + t.Table.String() + " without naming it, so without the wrapper's fence; drop it, or point it elsewhere",
			Fix:     []string{"DROP FOREIGN TABLE IF EXISTS " + ft.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}

// views: updatable views over the table (through other views too) not refused by the
// fencedsql_refuse trigger, and views over it whose definition holds a row-locking
// clause anywhere (the view's rule tree holds a RowMarkClause: a top-level FOR UPDATE,
// one in a subquery or a CTE), which lock the table's rows on a plain SELECT of the
// view, where the planner sees no locking clause to claim (G10). A view over one of
// the table's partitions or inheritance children, at any depth (d: the table and its
// pg_inherits descendants), is a view over the table's rows too: a plain SELECT of a
// locking one locks them, and a write through an updatable one writes them, unfenced
// (a red-team pass found a locking view over a partition, and one over an inheritance
// child, let a fresh pool's guarded writes through).
func (d dialectImpl) views(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `WITH RECURSIVE d(oid) AS (
  SELECT pg_catalog.to_regclass($1)::pg_catalog.oid
  UNION
  SELECT i.inhrelid FROM pg_catalog.pg_inherits i JOIN d ON i.inhparent = d.oid),
v(oid) AS (
  SELECT r.ev_class FROM d JOIN pg_catalog.pg_depend dep ON dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND dep.refobjid = d.oid
    JOIN pg_catalog.pg_rewrite r ON dep.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND dep.objid = r.oid
  WHERE r.ev_type = '1' AND r.ev_class <> dep.refobjid
  UNION
  SELECT r.ev_class FROM v JOIN pg_catalog.pg_depend dep ON dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND dep.refobjid = v.oid
    JOIN pg_catalog.pg_rewrite r ON dep.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND dep.objid = r.oid
  WHERE r.ev_type = '1' AND r.ev_class <> v.oid)
SELECT n.nspname::text, c.relname::text, pg_catalog.pg_relation_is_updatable(c.oid, true),
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_trigger t JOIN pg_catalog.pg_proc p ON p.oid = t.tgfoid
    WHERE t.tgrelid = c.oid AND t.tgname = $2 AND p.proname = $3 AND t.tgenabled IN ('O', 'A')
      AND t.tgtype OPERATOR(pg_catalog.&) 92 = 92 AND p.pronamespace = c.relnamespace AND p.prosrc = $4
      AND p.prolang = (SELECT l.oid FROM pg_catalog.pg_language l WHERE l.lanname = 'plpgsql')) THEN 1 ELSE 0 END,
  CASE WHEN EXISTS (SELECT 1 FROM pg_catalog.pg_rewrite lr WHERE lr.ev_class = c.oid AND lr.ev_type = '1'
    AND lr.ev_action::text LIKE '%{ROWMARKCLAUSE :%') THEN 1 ELSE 0 END
FROM v JOIN pg_catalog.pg_class c ON c.oid = v.oid AND c.relkind = 'v' JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
ORDER BY 1, 2`, regclass(t.Table), refuseTrigger, refuseFunction, refuseBody)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) >= 5 && r[4] == "1" {
			view := dialect.CatalogName(r[0], r[1])
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorLockingView, Object: view.String(),
				Problem: "view over " + t.Table.String() + " whose definition holds a locking clause (FOR UPDATE, FOR SHARE, …): a plain SELECT of the view locks the table's rows without the statement showing it, so the wrapper cannot claim them for the reader's token (a locking read must name the fenced table); drop the view and create it without the locking clause"})
		}
		// pg_relation_is_updatable: INSERT 8, UPDATE 4, DELETE 16; 0 read-only.
		if len(r) < 4 || r[3] == "1" || r[2] == "" || r[2] == "0" {
			continue
		}
		view := dialect.CatalogName(r[0], r[1])
		fn := dialect.TableName{Schema: r[0], Name: refuseFunction}.Quote(d.QuoteIdent)
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorView, Object: view.String(),
			Problem: "updatable view over " + t.Table.String() + ": a write to the view does not name the table, so the wrapper sends it unfenced " +
				"(the table's triggers still fire, but cannot check a token); the fix makes the view refuse writes (or revoke INSERT, UPDATE, DELETE on it from the writers)",
			Fix: []string{
				d.refuseFunctionDDL(r[0]),
				"DROP TRIGGER IF EXISTS " + refuseTrigger + " ON " + view.Quote(d.QuoteIdent),
				"CREATE TRIGGER " + refuseTrigger + " INSTEAD OF INSERT OR UPDATE OR DELETE ON " + view.Quote(d.QuoteIdent) + " FOR EACH ROW EXECUTE FUNCTION " + fn + "()",
			}})
	}
	return doors, nil
}

// refuseFunctionDDL returns the statement that creates (or restores) the views'
// refusing function in schema.
func (d dialectImpl) refuseFunctionDDL(schema string) string {
	fn := dialect.TableName{Schema: schema, Name: refuseFunction}.Quote(d.QuoteIdent)
	tag := dollarTag(refuseBody)
	return "CREATE OR REPLACE FUNCTION " + fn + "() RETURNS trigger LANGUAGE plpgsql SET search_path = pg_catalog, pg_temp AS " + tag + refuseBody + tag
}

// rules: non-SELECT rules on the table or one of its partitions or inheritance
// children, or on other relations whose action depends on one of them (pg_depend over
// familySQL: a rule writing a partition by its own name writes the table's rows,
// red-team rt44d F2). A disabled rule counts (red-team rt44d F1): one ALTER TABLE …
// ENABLE RULE by the relation's owner switches it on, and a pool whose verdict was
// taken while it was off keeps it; the planner refuses that statement through a pool.
func (d dialectImpl) rules(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, `WITH RECURSIVE `+familySQL(1)+`
SELECT r.rulename::text, n.nspname::text, c.relname::text, CASE WHEN r.ev_class IN (SELECT fam.oid FROM fam) THEN 1 ELSE 0 END,
  CASE r.ev_type WHEN '2' THEN 'UPDATE' WHEN '3' THEN 'INSERT' WHEN '4' THEN 'DELETE' ELSE 'SELECT' END, CASE WHEN r.is_instead THEN 1 ELSE 0 END,
  CASE WHEN r.ev_enabled = 'D' THEN 'D' ELSE '' END
FROM pg_catalog.pg_rewrite r JOIN pg_catalog.pg_class c ON c.oid = r.ev_class JOIN pg_catalog.pg_namespace n ON n.oid = c.relnamespace
WHERE r.ev_type <> '1' AND (r.ev_class IN (SELECT fam.oid FROM fam) OR EXISTS (
  SELECT 1 FROM pg_catalog.pg_depend dep WHERE dep.classid = 'pg_catalog.pg_rewrite'::pg_catalog.regclass AND dep.objid = r.oid
    AND dep.refclassid = 'pg_catalog.pg_class'::pg_catalog.regclass AND dep.refobjid IN (SELECT fam.oid FROM fam)))
ORDER BY 2, 3, 1`, regclass(t.Table))
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if len(r) < 7 {
			continue
		}
		rel := dialect.CatalogName(r[1], r[2])
		kind := "ALSO"
		if r[5] == "1" {
			kind = "INSTEAD"
		}
		off := disabledNote(r[6], "ALTER TABLE … ENABLE RULE")
		p := "rule ON " + r[4] + " DO " + kind + off + " on the guarded table (or one of its partitions or children): the statement the wrapper fenced is rewritten by the rule, so the fence may not apply; drop the rule"
		if r[3] != "1" {
			p = "rule ON " + r[4] + " TO " + rel.String() + " DO " + kind + off + " names " + t.Table.String() + " (or one of its partitions or children): a statement on " + rel.String() +
				" (not fenced by the wrapper) may write the guarded table through it; drop the rule"
		}
		p += " (statements prepared under the rule keep its rewriting after DROP RULE: reconnect the pools)"
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorRule, Object: r[0] + " on " + rel.String(), Problem: p,
			Fix: []string{"DROP RULE IF EXISTS " + d.QuoteIdent(r[0]) + " ON " + rel.Quote(d.QuoteIdent)}})
	}
	return doors, nil
}

var _ dialect.SideDoorFinder = dialectImpl{}
