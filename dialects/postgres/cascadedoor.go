package postgres

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// cascades: foreign keys of the table whose actions change its rows (a note:
// PostgreSQL runs its triggers, and the guard refuses them) — except a key whose
// action writes the token or the version column, which is a problem (fencingCascades,
// reported there: the lazy check runs it too).
func (d dialectImpl) cascades(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := d.cascadeKeys(ctx, query, t)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if r.fencing {
			continue
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: r.name + " REFERENCES " + r.ref, Note: true,
			Problem: strings.Join(r.rules, ", ") + ": PostgreSQL runs the triggers of " + t.Table.String() + " for the cascade, so the guard refuses it " +
				"(a DELETE of rows the transaction did not fence first, an UPDATE that does not advance the version) and the write to " + r.ref +
				" fails; delete or update the referencing rows through the wrapper first, or use RESTRICT"})
	}
	return doors, nil
}

// fencingCascades: foreign keys of the table whose referential action writes its
// token or version column (red-team rt45b F8): ON UPDATE CASCADE, SET NULL or SET
// DEFAULT of a key whose referencing columns include one, ON DELETE SET NULL or SET
// DEFAULT whose columns (the key's, or PostgreSQL 15's column list) include one. The
// cascade's UPDATE of the guarded rows then sets the version (or the token) to the
// referenced row's new value, or to NULL or the column's default: a version set
// higher passes the row guard, so a stale holder's write of the referenced table,
// which the wrapper does not fence, rewrites rows written under a newer token. A
// problem, which the lazy check refuses like the other doors; no Fix statement (the
// key is the schema's): re-create it with ON UPDATE/ON DELETE NO ACTION or RESTRICT,
// or without the fencing columns.
func (d dialectImpl) fencingCascades(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	if t.TokenColumn == "" && t.VersionColumn == "" {
		return nil, nil
	}
	rows, err := d.cascadeKeys(ctx, query, t)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, r := range rows {
		if !r.fencing {
			continue
		}
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: r.name + " REFERENCES " + r.ref,
			Problem: strings.Join(r.rules, ", ") + " writes the fencing column " + strings.Join(r.cols, ", ") + " of " + t.Table.String() +
				": a write of " + r.ref + " (which the wrapper does not fence) sets it in the rows it reaches, and a version set higher passes the guard, " +
				"so a stale holder may rewrite rows written under a newer token; re-create the foreign key with NO ACTION or RESTRICT, or without the fencing columns"})
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
}

// cascadeKeys lists the table's foreign keys with ON DELETE or ON UPDATE CASCADE, SET
// NULL or SET DEFAULT, and which of the fencing columns t names their actions write.
func (d dialectImpl) cascadeKeys(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]cascadeKey, error) {
	rows, err := query(ctx, `SELECT con.conname::text, n.nspname::text, f.relname::text, con.confdeltype::text, con.confupdtype::text,
  COALESCE((SELECT pg_catalog.string_agg(a.attname::text, ',') FROM pg_catalog.pg_attribute a
    WHERE a.attrelid = con.conrelid AND a.attname IN ($2, $3) AND (
      con.confupdtype IN ('c', 'n', 'd') AND a.attnum = ANY (con.conkey)
      OR con.confdeltype IN ('n', 'd') AND a.attnum = ANY (CASE WHEN pg_catalog.cardinality(con.confdelsetcols) > 0 THEN con.confdelsetcols ELSE con.conkey END))), '')
FROM pg_catalog.pg_constraint con JOIN pg_catalog.pg_class f ON f.oid = con.confrelid JOIN pg_catalog.pg_namespace n ON n.oid = f.relnamespace
WHERE con.contype = 'f' AND con.conrelid = pg_catalog.to_regclass($1) AND (con.confdeltype IN ('c', 'n', 'd') OR con.confupdtype IN ('c', 'n', 'd'))
ORDER BY 1`, regclass(t.Table), t.TokenColumn, t.VersionColumn)
	if err != nil {
		return nil, err
	}
	action := map[string]string{"c": "CASCADE", "n": "SET NULL", "d": "SET DEFAULT"}
	var out []cascadeKey
	for _, r := range rows {
		if len(r) < 6 {
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
		out = append(out, k)
	}
	return out, nil
}
