package sqlite

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// cascadeLost is the cascade problems' common ending: what rebuilding the table
// cannot restore.
const cascadeLost = "; rows a cascade already deleted carry tombstones at their own token, so after the rebuild raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor)"

// referencingCascades finds the foreign keys of other tables that reference the
// guarded table with ON DELETE CASCADE, into a table that carries a trigger of the
// guard or of the tombstone guard (red-team rt49b F1, the SQLite member of the class):
// the table's DELETE through the pool, fenced for its own rows only, deletes the
// child's rows, whose tombstones record each row's own token, not the deleting one,
// so a holder older than the deleter but newer than the row re-inserts the key. The
// child's own door (cascades) refuses the child's writes; this one refuses the
// parent's, before a DELETE cascades. A cascade into a table without the guards
// (sessions deleted with their guarded user) is no door, but its deletes cascade on:
// the keys into such a table are followed (up to 16 levels). The other actions (SET
// NULL, SET DEFAULT, ON UPDATE) change a guarded child by an UPDATE its guard refuses.
// No Fix statement: SQLite cannot alter a constraint (rebuild the child with ON DELETE
// RESTRICT). One query, and one more per unguarded table reached.
func (d dialectImpl) referencingCascades(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	master, schema := "sqlite_master", "main"
	if t.Table.Schema != "" {
		master, schema = d.QuoteIdent(t.Table.Schema)+".sqlite_master", t.Table.Schema
	}
	type fk struct {
		child, id string
		guarded   bool
		from, to  []string
	}
	seen := map[string]bool{foldName(t.Table.Name): true}
	var doors []dialect.SideDoor
	for level, next := 0, []string{t.Table.Name}; len(next) > 0 && level < 16; level++ {
		var reached []string
		for _, ref := range next {
			rows, err := query(ctx, `SELECT m.name, f.id, f."from", f."to", EXISTS (SELECT 1 FROM `+master+` tr WHERE tr.type = 'trigger' AND tr.tbl_name = m.name COLLATE NOCASE `+
				`AND (tr.name LIKE 'fencedsql\_guard\_%' ESCAPE '\' OR tr.name LIKE 'fencedsql\_tomb%' ESCAPE '\')) `+
				`FROM `+master+` m JOIN pragma_foreign_key_list(m.name, ?) f `+
				`WHERE m.type = 'table' AND f."table" = ? COLLATE NOCASE AND m.name <> ? COLLATE NOCASE AND upper(f.on_delete) = 'CASCADE' `+
				`ORDER BY m.name, f.id, f.seq`, schema, ref, ref)
			if err != nil {
				return nil, err
			}
			var fks []*fk
			for _, r := range rows {
				if len(r) < 5 {
					continue
				}
				if n := len(fks); n == 0 || fks[n-1].child != r[0] || fks[n-1].id != r[1] {
					fks = append(fks, &fk{child: r[0], id: r[1], guarded: r[4] == "1"})
				}
				f := fks[len(fks)-1]
				f.from = append(f.from, r[2])
				f.to = append(f.to, r[3])
			}
			for _, f := range fks {
				if !f.guarded {
					if !seen[foldName(f.child)] {
						seen[foldName(f.child)] = true
						reached = append(reached, f.child)
					}
					continue
				}
				child, via := dialect.TableName{Schema: t.Table.Schema, Name: f.child}, ""
				refName := dialect.TableName{Schema: t.Table.Schema, Name: ref}
				if !sameName(ref, t.Table.Name) {
					via = " (reached through " + refName.String() + ", whose rows a DELETE of " + t.Table.String() + " deletes)"
				}
				doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade,
					Object: "(" + strings.Join(f.from, ", ") + ") on " + child.String() + " REFERENCES " + refName.String() + " (" + strings.Join(f.to, ", ") + ")",
					Problem: "ON DELETE CASCADE" + via + ": a DELETE of " + t.Table.String() + " through the pool, fenced for its own rows only, deletes rows of the guarded table " + child.String() +
						", whose tombstones record each row's own token, not the deleting token, so a holder older than the deleter re-inserts a deleted key; SQLite cannot alter a constraint: rebuild " +
						child.String() + " with ON DELETE RESTRICT, and delete its rows through the wrapper first" + cascadeLost})
			}
		}
		next = reached
	}
	return doors, nil
}
