package plan

// ownTarget is the target table of the INSERT or single-table UPDATE being planned, as
// the statement writes it, decoded: its database ("" when written unqualified), its
// name and its alias ("" when it has none). ok is false when the reference could not be
// read whole (a name of more than two parts, an alias that does not decode): no
// qualified name is then taken for the target's own (qualifies).
type ownTarget struct {
	db, name, alias string
	ok              bool
}

// setOwnTarget records r, the reference the statement writes to, as parser.own.
func (p *parser) setOwnTarget(r tableRef) {
	t := ownTarget{name: r.parts[len(r.parts)-1], ok: len(r.parts) <= 2}
	if len(r.parts) == 2 {
		t.db = r.parts[0]
	}
	if r.alias != "" {
		n, ok := p.ident(r.aliasEnd - 1)
		t.alias, t.ok = n, t.ok && ok
	}
	p.own = t
}

// names returns the names that may qualify the target's columns: its name and, when it
// has one, its alias (selfAssignments, which compares them ignoring case).
func (t ownTarget) names() []string {
	if t.alias != "" {
		return []string{t.name, t.alias}
	}
	return []string{t.name}
}

// qualifies reports whether quals, the parts written before a column name (`t` of
// t.col; `db`, `t` of db.t.col), qualify a column of the target as MySQL/MariaDB
// resolve a SET target or INSERT column of a single-table statement: the alias when
// the table has one (its name is then unknown there, 1054), else its name; preceded by
// a database only when the statement wrote the target with that same database (the
// session's current database, which an unqualified target is in, is not known to the
// planner). Names compare exactly: under lower_case_table_names = 0, the Linux default,
// the server compares database names, table names and aliases case-sensitively; where
// it folds them a case variant is refused, which fails closed.
func (t ownTarget) qualifies(quals []string) bool {
	if !t.ok {
		return false
	}
	own := t.name
	if t.alias != "" {
		own = t.alias
	}
	switch len(quals) {
	case 1:
		return quals[0] == own
	case 2:
		return t.db != "" && quals[0] == t.db && quals[1] == own
	}
	return false
}
