package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// cascades finds the foreign keys of the table whose referential action (ON DELETE or
// ON UPDATE CASCADE, SET NULL, SET DEFAULT) changes its rows: a write of the referenced
// table (which the wrapper does not fence for this table's rows, or at all) deletes or
// rewrites them. One rule, the trigger door's (otherTriggers): a door the lazy check
// refuses, unless the table's installed row guard refuses the cascaded write itself.
//
//   - An action that writes the token or the version column (red-team rt45b F8): a
//     problem always; a version set higher passes the guard, so a stale holder may
//     rewrite rows written under a newer token. No Fix statement (the key is the
//     schema's): re-create it with NO ACTION or RESTRICT, or without the fencing
//     columns.
//   - Another action: PostgreSQL runs the table's row triggers for the cascade, so
//     where the guard's triggers are installed and enabled — fencedsql_guard (BEFORE
//     UPDATE: the cascaded UPDATE does not advance the version) for SET NULL, SET
//     DEFAULT and ON UPDATE CASCADE, fencedsql_guard_delete (AFTER DELETE: rows the
//     transaction did not fence first) for ON DELETE CASCADE — the write of the
//     referenced table fails: a note. Where one is missing (wrapper-only fencing, the
//     minimal set-up, or a guard not installed yet), nothing refuses it: a problem,
//     which the lazy check refuses as it does a user trigger on the referenced table
//     doing the same write (red-team rt65a F1: a stale or token-less DELETE of the
//     unguarded parent through the pool deleted or rewrote rows written under a newer
//     token). Fix: install the guard (fencedsql-schema -apply), or re-create the key
//     with NO ACTION or RESTRICT.
//
// One catalog query (cascadeKeys).
func (d dialectImpl) cascades(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := d.cascadeKeys(ctx, query, t)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		obj := r.name + " REFERENCES " + r.ref
		switch {
		case r.fencing:
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj,
				Problem: strings.Join(r.rules, ", ") + " writes the fencing column " + strings.Join(r.cols, ", ") + " of " + t.Table.String() +
					": a write of " + r.ref + " (which the wrapper does not fence) sets it in the rows it reaches, and a version set higher passes the guard, " +
					"so a stale holder may rewrite rows written under a newer token; re-create the foreign key with NO ACTION or RESTRICT, or without the fencing columns"})
		case len(r.unguarded) > 0:
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj,
				Problem: strings.Join(r.rules, ", ") + ": a write of " + r.ref + " (which the wrapper does not fence for the rows of " + t.Table.String() +
					"), through the pool too, with a stale token or none, deletes or rewrites rows of " + t.Table.String() + " written under a newer token, and no installed guard trigger (" +
					strings.Join(r.unguarded, ", ") + ", enabled) refuses it; install the guard (fencedsql-schema -apply), or re-create the foreign key with NO ACTION or RESTRICT"})
		default:
			doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: obj, Note: true,
				Problem: strings.Join(r.rules, ", ") + ": PostgreSQL runs the triggers of " + t.Table.String() + " for the cascade, so the guard refuses it " +
					"(a DELETE of rows the transaction did not fence first, an UPDATE that does not advance the version) and the write to " + r.ref +
					" fails; delete or update the referencing rows through the wrapper first, or use RESTRICT"})
		}
	}
	return doors, nil
}

// cascadeKey is a foreign key of a guarded table with an action that changes its rows.
type cascadeKey struct {
	name, ref string
	rules     []string
	// fencing: an action writes the token or version column (cols: which).
	fencing bool
	cols    []string
	// unguarded: the guard triggers the actions need (fencedsql_guard for an UPDATE,
	// fencedsql_guard_delete for ON DELETE CASCADE) that the table does not carry
	// enabled, calling a function of the guard's.
	unguarded []string
}

// cascadeKeys lists the table's foreign keys with ON DELETE or ON UPDATE CASCADE, SET
// NULL or SET DEFAULT, which of the fencing columns t names their actions write, and
// which of the guard's triggers that would refuse them the table lacks.
func (d dialectImpl) cascadeKeys(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]cascadeKey, error) {
	rows, err := query(ctx, `SELECT con.conname::text, n.nspname::text, f.relname::text, con.confdeltype::text, con.confupdtype::text,
  COALESCE((SELECT pg_catalog.string_agg(a.attname::text, ',') FROM pg_catalog.pg_attribute a
    WHERE a.attrelid = con.conrelid AND a.attname IN ($2, $3) AND (
      con.confupdtype IN ('c', 'n', 'd') AND a.attnum = ANY (con.conkey)
      OR con.confdeltype IN ('n', 'd') AND a.attnum = ANY (CASE WHEN pg_catalog.cardinality(con.confdelsetcols) > 0 THEN con.confdelsetcols ELSE con.conkey END))), ''),
  (SELECT pg_catalog.string_agg(w.tgname, ',' ORDER BY w.tgname) FROM (VALUES ($4::text), ($5::text)) AS w(tgname)
    WHERE (CASE WHEN w.tgname = $4 THEN con.confupdtype IN ('c', 'n', 'd') OR con.confdeltype IN ('n', 'd') ELSE con.confdeltype = 'c' END)
      AND NOT EXISTS (SELECT 1 FROM pg_catalog.pg_trigger tg JOIN pg_catalog.pg_proc f ON f.oid = tg.tgfoid
        WHERE tg.tgrelid = con.conrelid AND tg.tgname = w.tgname AND tg.tgenabled IN ('O', 'A') AND f.proname::text LIKE 'fencedsql\_guard\_%'))
FROM pg_catalog.pg_constraint con JOIN pg_catalog.pg_class f ON f.oid = con.confrelid JOIN pg_catalog.pg_namespace n ON n.oid = f.relnamespace
WHERE con.contype = 'f' AND con.conrelid = pg_catalog.to_regclass($1) AND (con.confdeltype IN ('c', 'n', 'd') OR con.confupdtype IN ('c', 'n', 'd'))
ORDER BY 1`, regclass(t.Table), t.TokenColumn, t.VersionColumn, guardTrigger, guardDeleteTrigger)
	if err != nil {
		return nil, err
	}
	action := map[string]string{"c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
	var out []cascadeKey
	for _, r := range rows {
		if len(r) < 7 {
			continue
		}
		k := cascadeKey{name: r[0], ref: dialect.CatalogName(r[1], r[2]).String()}
		if a, ok := action[r[3]]; ok {
			k.rules = append(k.rules, "ON DELETE "+a)
		}
		if a, ok := action[r[4]]; ok {
			k.rules = append(k.rules, "ON UPDATE "+a)
		}
		if r[5] != "" {
			k.fencing, k.cols = true, strings.Split(r[5], ",")
		}
		if r[6] != "" {
			k.unguarded = strings.Split(r[6], ",")
		}
		out = append(out, k)
	}
	return out, nil
}
