package plan

// DDL that adds a unique key the tombstone guard was not written for (docs/design.md,
// G9 "A unique index created after the install"; red-team rt53d F1). Where the
// database deletes the row a write collides with on any unique index without that
// row's delete triggers (SQLite's REPLACE conflict resolution: INSERT OR REPLACE,
// REPLACE, UPDATE OR REPLACE, UNIQUE … ON CONFLICT REPLACE), the tombstone guard's
// REPLACE triggers compare the unique indexes the table had at the install
// (dialect.UniqueTombstoner; PlannerConfig.UniqueKeyTombstones). Through a
// fenced_allow=ddl pool, CREATE UNIQUE INDEX … ON a guarded table (on columns, on an
// expression, partial) made a REPLACE that collides on the new index delete a row of
// another key unrecorded, and a stale holder re-inserted that key through the same
// pool: the guard is reported as not installed (TombstoneInstalledQuery), but the lazy
// check does not require the tombstone guard. So, on such a pool, whatever WithDDL
// allows, CREATE UNIQUE INDEX whose table is a guarded one (relatives included; a
// table name that cannot be read counts when the statement names a guarded table) is
// refused, before anything is sent. Non-unique CREATE INDEX, REINDEX and DROP INDEX
// pass under WithDDL: an ordinary index changes no conflict, REINDEX rebuilds the
// same keys, and a unique index dropped leaves the triggers comparing columns that
// no longer collide, which at worst records a live row's tombstone at the greater of
// its token and a writer's — fail closed, as for a partial index (dialects/sqlite
// TombstoneUniqueDDL); DROP INDEX names no table the planner could judge.
//
// SQLite has no other DDL that adds a unique key to an existing table (ALTER TABLE
// cannot add a UNIQUE column or constraint). MySQL/MariaDB and PostgreSQL do (ALTER
// TABLE … ADD UNIQUE, ADD CONSTRAINT … UNIQUE), but their tombstone guards do not
// depend on the table's unique keys, so PlannerConfig.UniqueKeyTombstones is off
// there: MariaDB and MySQL delete the rows a REPLACE collides with as rows, firing the
// tombstone's DELETE trigger, whatever unique index they collide on (the table has a
// DELETE trigger: dialects/mysql replacemark.go), and INSERT … ON DUPLICATE KEY UPDATE
// updates the row it meets, judged by the row guard; PostgreSQL has no REPLACE, and
// ON CONFLICT never deletes (its only unique-index dependency, the guards' own
// tables' keys, is a fencedsql_ object the pool refuses to touch).

// addsUniqueKey refuses, whatever WithDDL allows, the statement at sig[first] (head its
// head keyword, upper-cased) when the pool's tombstone guards depend on the unique
// keys of their tables (PlannerConfig.UniqueKeyTombstones) and it is a CREATE UNIQUE
// INDEX of a guarded table (see above). Any other statement is left to the DDL rule.
func (p *parser) addsUniqueKey(head string, first int) error {
	if head != "CREATE" || !p.rw.uniqueKeyTombstones {
		return nil
	}
	to := first
	for to < len(p.sig) && !p.punct(to, ";") {
		to++
	}
	i := first + 1
	for p.kwIn(i, "ONLINE", "OFFLINE") {
		i++
	}
	if !p.kw(i, "UNIQUE") {
		return nil
	}
	on := -1
	for _, k := range p.topLevel(i+1, to) {
		if p.kw(k, "ON") {
			on = k
			break
		}
	}
	guarded := on < 0 && p.mentionsGuardIn(i, to)
	if on >= 0 {
		at := on + 1
		if p.kw(at, "ONLY") {
			at++
		}
		if r, ok := p.parseName(at); ok {
			guarded = p.rw.Lookup(r.parts) != nil
		} else {
			guarded = p.mentionsGuardIn(on, to)
		}
	}
	if !guarded {
		return nil
	}
	return unsupported(p.firstGuard(), "CREATE UNIQUE INDEX on a guarded table, on a pool with guarded tables, whatever WithDDL allows: "+
		"the tombstone guard's REPLACE triggers compare only the unique indexes the table had when they were installed, "+
		"so a REPLACE colliding on the new index would delete a row of another key without its tombstone, and a stale token could insert that key again; "+
		"create it on a plain connection (the migration role), then re-install the guard with schema.Check's Fix (fencedsql-schema -apply), "+
		"or make the index non-unique, or drop the guard from the table first")
}
