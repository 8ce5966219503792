package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Foreign keys whose referential action writes a guarded table's rows. MySQL and
// MariaDB run no triggers for cascaded changes: a row an InnoDB cascade deletes gets
// no tombstone, a row it updates keeps its token (no guard, no floor, no fence). Two
// doors of the same key (red-team rt42a F3, rt49b F1):
//
//   - cascades: a key of the guarded table itself (the child): a write to the
//     referenced table changes the table's rows;
//   - referencingCascades: a key of another, guarded table that references the
//     table (the parent), directly or through unguarded tables a cascade from it
//     changes: the parent's fenced DELETE or key UPDATE through the pool is fenced
//     for the parent's rows only, and the cascade changes the child's rows under no
//     token. Judged on the parent, so the pool refuses the parent's writes
//     (ErrSchema) before one cascades.
//
// Both propose the same Fix (cascadeFix): the constraint dropped and re-created with
// RESTRICT for the writing actions (two statements; the table has no such constraint
// in between). The child rows a cascade already deleted or changed carry no tombstone
// and no new token, which no constraint brings back: the problem asks for a token
// floor raise (RaiseTokenFloor) to the lock service's LastToken + 1 after the Fix, as
// the tombstone table's folding index does (guardTableIndexes).

// cascadeKey is a foreign key with a writing action (CASCADE, SET NULL, SET DEFAULT)
// on DELETE or UPDATE: the referencing table, the referenced one, the rules and the
// columns (quoted), in key order.
type cascadeKey struct {
	table, ref    dialect.TableName
	name          string
	onDel, onUpd  string
	cols, refCols []string
}

// writingRule reports whether a referential action writes the referencing rows.
func writingRule(rule string) bool {
	return rule == "CASCADE" || rule == "SET NULL" || rule == "SET DEFAULT"
}

// cascadeKeys lists the foreign keys with a writing action that match where (a
// condition on information_schema.REFERENTIAL_CONSTRAINTS rc, with its arguments),
// one query.
func (d dialectImpl) cascadeKeys(ctx context.Context, query dialect.CatalogQuery, where string, args ...any) ([]*cascadeKey, error) {
	rows, err := query(ctx, "SELECT rc.CONSTRAINT_SCHEMA, rc.TABLE_NAME, rc.CONSTRAINT_NAME, rc.UNIQUE_CONSTRAINT_SCHEMA, rc.REFERENCED_TABLE_NAME, rc.DELETE_RULE, rc.UPDATE_RULE, k.COLUMN_NAME, k.REFERENCED_COLUMN_NAME "+
		"FROM information_schema.REFERENTIAL_CONSTRAINTS rc JOIN information_schema.KEY_COLUMN_USAGE k "+
		"ON k.CONSTRAINT_SCHEMA = rc.CONSTRAINT_SCHEMA AND k.CONSTRAINT_NAME = rc.CONSTRAINT_NAME AND k.TABLE_NAME = rc.TABLE_NAME AND k.REFERENCED_TABLE_NAME IS NOT NULL "+
		// Byte for byte (sameName, red-team rt56a F2): a case or accent twin's foreign
		// key of the same name is not this one.
		"AND "+sameName("k.CONSTRAINT_SCHEMA", "rc.CONSTRAINT_SCHEMA")+" AND "+sameName("k.TABLE_NAME", "rc.TABLE_NAME")+" AND "+sameName("k.CONSTRAINT_NAME", "rc.CONSTRAINT_NAME")+" "+
		"WHERE "+where+" "+
		"AND (rc.DELETE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT') OR rc.UPDATE_RULE IN ('CASCADE', 'SET NULL', 'SET DEFAULT')) "+
		"ORDER BY rc.CONSTRAINT_SCHEMA, rc.TABLE_NAME, rc.CONSTRAINT_NAME, k.ORDINAL_POSITION", args...)
	if err != nil {
		return nil, err
	}
	var keys []*cascadeKey
	for _, r := range rows {
		if len(r) < 9 {
			continue
		}
		tbl := dialect.TableName{Schema: r[0], Name: r[1]}
		if n := len(keys); n == 0 || keys[n-1].table != tbl || keys[n-1].name != r[2] {
			keys = append(keys, &cascadeKey{table: tbl, name: r[2], ref: dialect.TableName{Schema: r[3], Name: r[4]}, onDel: r[5], onUpd: r[6]})
		}
		k := keys[len(keys)-1]
		k.cols = append(k.cols, d.QuoteIdent(r[7]))
		k.refCols = append(k.refCols, d.QuoteIdent(r[8]))
	}
	return keys, nil
}

// rules names the key's writing actions ("ON DELETE CASCADE, ON UPDATE SET NULL").
func (k *cascadeKey) rules() string {
	var rules []string
	if writingRule(k.onDel) {
		rules = append(rules, "ON DELETE "+k.onDel)
	}
	if writingRule(k.onUpd) {
		rules = append(rules, "ON UPDATE "+k.onUpd)
	}
	return strings.Join(rules, ", ")
}

// cascadeFix re-creates the key on table (its referencing table, spelled as the
// check was given it) with RESTRICT for its writing actions.
func (d dialectImpl) cascadeFix(k *cascadeKey, table dialect.TableName) []string {
	safe := func(rule string) string {
		if writingRule(rule) {
			return "RESTRICT"
		}
		return rule
	}
	tbl := table.Quote(d.QuoteIdent)
	return []string{
		"ALTER TABLE " + tbl + " DROP FOREIGN KEY " + d.QuoteIdent(k.name),
		"ALTER TABLE " + tbl + " ADD CONSTRAINT " + d.QuoteIdent(k.name) + " FOREIGN KEY (" + strings.Join(k.cols, ", ") + ") REFERENCES " +
			k.ref.Quote(d.QuoteIdent) + " (" + strings.Join(k.refCols, ", ") + ") ON DELETE " + safe(k.onDel) + " ON UPDATE " + safe(k.onUpd),
	}
}

// cascadeLost is the problems' common ending: what the Fix cannot restore.
const cascadeLost = "; rows a cascade already deleted or changed carry no tombstone and no new token, so after the fix raise the token floor to the lock service's LastToken + 1 (RaiseTokenFloor)"

// cascades finds the foreign keys of the guarded table with a writing action: a
// write to the referenced table (not fenced for this table's rows) changes its rows
// without its triggers.
func (d dialectImpl) cascades(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	keys, err := d.cascadeKeys(ctx, query, "rc.CONSTRAINT_SCHEMA = COALESCE(NULLIF(?, _binary''), DATABASE()) AND "+exactDatabase("rc.CONSTRAINT_SCHEMA", t.Table.Schema)+" AND rc.TABLE_NAME = ?", t.Table.Schema, t.Table.Name)
	if err != nil {
		return nil, err
	}
	var doors []dialect.SideDoor
	for _, k := range keys {
		doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: k.name + " REFERENCES " + k.ref.String(),
			Problem: k.rules() + ": a write to " + k.ref.String() + " (not fenced by the wrapper) changes rows of " + t.Table.String() +
				", and MySQL/MariaDB run no triggers for cascaded changes (no guard, no tombstones); the fix re-creates the constraint with RESTRICT" + cascadeLost,
			Fix: d.cascadeFix(k, t.Table)})
	}
	return doors, nil
}

// referencingCascades finds the foreign keys of other tables that reference the
// guarded table with a writing action, into a table that is guarded itself
// (guardedChild): the table's DELETE or key UPDATE through the pool, fenced for its
// own rows only, would change the child's rows under no token and without
// tombstones. A key into an unguarded table (a guarded users table, a sessions table
// deleted with it) is no door: nothing fences that table's rows; but the rows a
// cascade changes there may cascade on, so the keys that reference such a table are
// followed in turn (parent, unguarded child, guarded grandchild: the grandchild's key
// is the door; up to 16 levels). A self-referencing key is cascades'. One query when
// the table is referenced by no such key, else one more per table reached.
func (d dialectImpl) referencingCascades(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	const db = "COALESCE(NULLIF(?, _binary''), DATABASE())" // the table's schema; later levels name theirs
	start := t.Table
	seen := map[dialect.TableName]bool{start: true}
	isGuarded := map[dialect.TableName]bool{}
	var doors []dialect.SideDoor
	for level, next := 0, []dialect.TableName{start}; len(next) > 0 && level < 16; level++ {
		var reached []dialect.TableName
		for _, ref := range next {
			// The referenced table byte for byte, and a self-referencing key (cascades')
			// skipped only when its table is this one byte for byte (red-team rt59a
			// F2): under utf8mb3_general_ci a key of `T_X`.acc, the case twin's
			// guarded table, was skipped as t_x.acc's own, and one into `T_X`.acc
			// counted as one into t_x.acc.
			keys, err := d.cascadeKeys(ctx, query, "rc.UNIQUE_CONSTRAINT_SCHEMA = "+db+" AND "+exactDatabase("rc.UNIQUE_CONSTRAINT_SCHEMA", ref.Schema)+
				" AND rc.REFERENCED_TABLE_NAME = ? AND "+exactTable("rc.REFERENCED_TABLE_NAME", ref.Name)+
				" AND NOT (rc.CONSTRAINT_SCHEMA = "+db+" AND "+exactDatabase("rc.CONSTRAINT_SCHEMA", ref.Schema)+" AND rc.TABLE_NAME = ? AND "+exactTable("rc.TABLE_NAME", ref.Name)+")",
				ref.Schema, ref.Name, ref.Schema, ref.Name)
			if err != nil {
				return nil, err
			}
			for _, k := range keys {
				guarded, known := isGuarded[k.table]
				if !known {
					if guarded, err = d.guardedChild(ctx, query, k.table); err != nil {
						return nil, err
					}
					isGuarded[k.table] = guarded
				}
				if !guarded {
					if !seen[k.table] {
						seen[k.table] = true
						reached = append(reached, k.table)
					}
					continue
				}
				via := ""
				if ref != start {
					via = " (reached through " + ref.String() + ", which a cascade from " + t.Table.String() + " changes)"
				}
				doors = append(doors, dialect.SideDoor{Kind: dialect.SideDoorCascade, Object: k.name + " on " + k.table.String() + " REFERENCES " + ref.String(),
					Problem: k.rules() + via + ": a DELETE or key UPDATE of " + t.Table.String() + " through the pool, fenced for its own rows only, changes rows of the guarded table " + k.table.String() +
						", and MySQL/MariaDB run no triggers for cascaded changes (no guard, no tombstones, no token); the fix re-creates the constraint with RESTRICT" + cascadeLost,
					Fix: d.cascadeFix(k, k.table)})
			}
		}
		next = reached
	}
	return doors, nil
}

// guardedChild reports whether table carries evidence of a guard: a trigger of the
// guard, of its floor or of the tombstone guard on it, its tombstone table or its
// fence function (GuardedTablesQuery's evidence, and the guard's other objects, which
// an account without the TRIGGER privilege may see). A table guarded only by a pool's
// listing, without these objects, is not seen (schema.Check, run by the migration
// account, installs them).
func (d dialectImpl) guardedChild(ctx context.Context, query dialect.CatalogQuery, table dialect.TableName) (bool, error) {
	rows, err := query(ctx, "SELECT 1 FROM information_schema.TRIGGERS WHERE EVENT_OBJECT_SCHEMA = ? AND "+exactDatabase("EVENT_OBJECT_SCHEMA", table.Schema)+" AND EVENT_OBJECT_TABLE = ? "+
		"AND (TRIGGER_NAME LIKE 'fencedsql\\_guard\\_%' OR TRIGGER_NAME LIKE 'fencedsql\\_floor\\_%' OR TRIGGER_NAME LIKE 'fencedsql\\_tomb%') "+
		"UNION ALL SELECT 1 FROM information_schema.TABLES WHERE TABLE_SCHEMA = ? AND "+exactDatabase("TABLE_SCHEMA", table.Schema)+" AND TABLE_NAME = ? "+
		"UNION ALL SELECT 1 FROM information_schema.ROUTINES WHERE ROUTINE_SCHEMA = ? AND "+exactDatabase("ROUTINE_SCHEMA", table.Schema)+" AND ROUTINE_NAME = ? AND ROUTINE_TYPE = 'FUNCTION' LIMIT 1",
		table.Schema, table.Name, table.Schema, tombTable(table).Name, table.Schema, fenceFunc(table.Name))
	if err != nil {
		return false, err
	}
	return len(rows) > 0, nil
}
