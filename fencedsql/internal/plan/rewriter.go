package plan

import (
	"fmt"
	"strings"
	"sync"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// Planner turns user SQL into fenced SQL for one set of guarded tables and one dialect.
type Planner struct {
	syn      sqllex.Syntax
	numbered bool // $n placeholders (PostgreSQL) instead of positional ?
	// sessionChecked: the dialect validates session settings before guarded writes
	// (MySQL's sql_mode), so a statement that may change them re-arms the check.
	sessionChecked bool
	quote          func(string) string
	strict         bool
	guards         map[string][]*Table // by lower-cased unqualified table name
	names          []string            // lower-cased guarded names, for the pre-filter
	nonASCII       bool                // some guarded name is not ASCII: pre-filter with Unicode folding
	// unames: the guarded keys folded with Unicode case rules (nonASCII only), for the
	// pre-filter. twins (PostgreSQL, SQLite, nonASCII only): the guards by that Unicode
	// fold, to find a non-ASCII case twin (CAFÉ next to café), which the server reads as
	// another table (it folds ASCII letters only) and caseTwin refuses.
	unames []string
	twins  map[string][]*Table
	// stringIdents: a string literal may stand for an identifier (SQLite accepts
	// UPDATE 'accounts' …).
	stringIdents bool
	// allowDDL, allowDynamic: WithDDL, WithDynamicSQL.
	allowDDL, allowDynamic bool
	// uniqueKeyTombstones: PlannerConfig.UniqueKeyTombstones (uniquekey.go).
	uniqueKeyTombstones bool
	// deleteFence: PlannerConfig.DeleteFence.
	deleteFence func(schema, name, tokenCol string) (mark, check string)
	// maxIdent: the server truncates identifiers to this many bytes (PostgreSQL: 63,
	// NAMEDATALEN-1); 0: no truncation.
	maxIdent int
	// namesWords: the words that make resolvesNames look closer at a statement.
	namesWords []string
	// catalogViews: the relations through which a write reaches a system catalog or
	// settings relation (PlannerConfig.CatalogViews), by Key; catalogViewKeys, their
	// keys for the pre-filter (protect_catalogview.go).
	catalogViews    map[string]CatalogView
	catalogViewKeys []string
	// derived interns the guards of references reaching a guarded table under another
	// qualifier (see lookup): qualifier + "\x00" + key → *guard.
	derived sync.Map
}

// Table is one guarded table and its column names, or (root != nil) a guarded table's
// name as a statement wrote it under another qualifier (lookup): fenced with the same
// columns, and checked on its own (the object that name resolves to).
type Table struct {
	Schema   string // folded as the server compares it (foldQual; a derived guard: the qualifier as written); "" for any
	Name     string // as configured
	Root     *Table // the configured guard of a derived one; nil for a configured guard
	TokenCol string
	VerCol   string
	// quoted column names, computed once
	QTok, QVer string
}

// isFenceColumn reports whether a column name the statement wrote (name, decoded;
// quoted: it was a quoted identifier) is g's token or version column as the server
// resolves column names (red-team rt34c F2: a quoted "Version" next to version was
// dropped from a SET list as if it were the version column, its write lost):
//
//   - PostgreSQL: an unquoted name is folded (ASCII letters) and a quoted one taken
//     exactly, both truncated to 63 bytes; the configured column name is the exact
//     catalogue name (the wrapper writes it quoted). "Version" is not version, and an
//     unquoted FenceTok (fencetok) is not the configured "FenceTok".
//   - SQLite: column names compare ignoring ASCII case, quoted or not.
//   - MySQL/MariaDB: column names compare by each character's lower-case form, quoted
//     or not (sqllex.SameName: K is k, but ſ is not s: rt36a F8, a column verſion
//     next to version lost its assignment as if it were the version column).
//
// It is the one test of "names a fencing column" for every list the rewriter edits or
// judges (SET lists, INSERT column lists, conflict branches, selections).
func (rw *Planner) isFenceColumn(g *Table, name string, quoted bool) bool {
	if rw.syn == sqllex.Postgres {
		name = rw.truncate(name)
		if !quoted {
			name = sqllex.LowerASCII(name)
		}
	}
	return sqllex.SameName(rw.syn, name, g.TokenCol) || sqllex.SameName(rw.syn, name, g.VerCol)
}

func (g *Table) String() string {
	if g == nil {
		return "" // a refused locking read may name no single guarded table
	}
	if g.Schema != "" {
		return g.Schema + "." + g.Name
	}
	return g.Name
}

// PlannerConfig is what a Planner is built from: the dialect's lexical rules and
// quoting, the wrapper's options, and the guarded tables (already validated: plain
// identifiers, distinct non-empty column names).
type PlannerConfig struct {
	Syntax         sqllex.Syntax
	NumberedParams bool                // $n placeholders (PostgreSQL) instead of positional ?
	QuoteIdent     func(string) string // the dialect's identifier quoting
	// SessionChecked: the dialect validates session settings before guarded writes
	// (MySQL's sql_mode), so a statement that may change them re-arms the check.
	SessionChecked bool
	// Strict, AllowDDL, AllowDynamic: the wrapper's WithStrict, WithDDL, WithDynamicSQL.
	Strict, AllowDDL, AllowDynamic bool
	Tables                         []TableSpec
	// DeleteFence (dialect.DeleteFencer's DeleteFence, or nil) gives the fragments of a
	// DELETE's one-statement form (Plan.One); schema is "" for an unqualified reference.
	DeleteFence func(schema, name, tokenCol string) (mark, check string)
	// CatalogViews are the relations through which a write reaches a system catalog or
	// settings relation (dialect.CatalogViewFinder, read at the pool's first
	// connection): on a pool with guarded tables, writes to them are refused like
	// writes to the catalogs (protect_catalogview.go).
	CatalogViews []CatalogView
	// UniqueKeyTombstones: the dialect's tombstone guard is written for each table's
	// unique indexes (dialect.UniqueTombstoner, SQLite): CREATE UNIQUE INDEX of a
	// guarded table is refused whatever AllowDDL says (uniquekey.go).
	UniqueKeyTombstones bool
}

// TableSpec names one guarded table: Schema "" when configured unqualified, Name as
// configured, and its fencing columns.
type TableSpec struct{ Schema, Name, TokenColumn, VersionColumn string }

// NewPlanner builds the planner of cfg. A planner is immutable apart from its interned
// derived tables (Lookup) and safe for concurrent use.
func NewPlanner(cfg PlannerConfig) *Planner {
	rw := &Planner{
		syn: cfg.Syntax, numbered: cfg.NumberedParams, quote: cfg.QuoteIdent,
		sessionChecked: cfg.SessionChecked,
		strict:         cfg.Strict, guards: map[string][]*Table{},
		stringIdents: cfg.Syntax == sqllex.SQLite,
		allowDDL:     cfg.AllowDDL, allowDynamic: cfg.AllowDynamic,
		uniqueKeyTombstones: cfg.UniqueKeyTombstones,
		deleteFence:         cfg.DeleteFence,
	}
	switch cfg.Syntax {
	case sqllex.Postgres:
		rw.maxIdent = sqllex.PostgresMaxIdent // NAMEDATALEN-1
		rw.namesWords = pgNamesWords
	case sqllex.SQLite:
		rw.namesWords = sqliteNamesWords
	default:
		rw.namesWords = mysqlNamesWords
	}
	for _, ts := range cfg.Tables {
		schema := strings.ToLower(ts.Schema)
		if cfg.Syntax == sqllex.MySQL {
			// with lower_case_table_names = 0 database names are case-sensitive: kept
			// as configured, like the table name.
			schema = ts.Schema
		} else if cfg.Syntax == sqllex.Postgres || cfg.Syntax == sqllex.SQLite {
			schema = sqllex.LowerASCII(ts.Schema)
		}
		g := &Table{
			Schema: schema, Name: ts.Name, TokenCol: ts.TokenColumn, VerCol: ts.VersionColumn,
			QTok: rw.quote(ts.TokenColumn), QVer: rw.quote(ts.VersionColumn),
		}
		key := rw.Key(ts.Name)
		if rw.guards[key] == nil {
			rw.names = append(rw.names, key)
		}
		for _, r := range ts.Name {
			if r >= 0x80 {
				rw.nonASCII = true
			}
		}
		rw.guards[key] = append(rw.guards[key], g)
	}
	rw.setCatalogViews(cfg.CatalogViews)
	if rw.nonASCII {
		for _, k := range rw.names {
			u := strings.ToLower(k)
			rw.unames = append(rw.unames, u)
			if cfg.Syntax != sqllex.MySQL {
				if rw.twins == nil {
					rw.twins = map[string][]*Table{}
				}
				rw.twins[u] = append(rw.twins[u], rw.guards[k]...)
			}
		}
	}
	return rw
}

// Rewrite plans one statement. versioned selects the ExpectVersion variant.
func (rw *Planner) Rewrite(sql string, versioned bool) (*Plan, error) {
	if err := rw.readingChangeFollowed(sql); err != nil {
		return nil, err // multistatement.go
	}
	if !rw.mayMention(sql) && !rw.controlHead(sql) && !rw.mayProtect(sql) {
		// It names no guarded table: sent as written, with the relations it reads when
		// it holds a locking clause (a view over a guarded table may be one of them).
		var through []Relation
		if rw.mayLock(sql) {
			if toks, err := sqllex.Lex(sql, rw.syn); err == nil {
				p := &parser{rw: rw, src: sql, all: toks, sig: significant(sql, toks)}
				through = p.lockThrough()
			}
		}
		if pl := rw.SessionPlan(sql); pl != nil {
			pl.LockThrough = through
			return pl, nil
		}
		if through != nil {
			return &Plan{Kind: KindPass, NUser: -1, LockThrough: through}, nil
		}
		return Passthrough, nil
	}
	toks, err := sqllex.Lex(sql, rw.syn)
	if err != nil {
		if uerr := rw.unreadable(sql, err); uerr != nil {
			return nil, uerr // an executable comment or routine DDL it cannot read
		}
		// Whatever made it worth a look (a guarded name, a head judged whatever it names,
		// a comment first, a protected word) cannot be judged in text the lexer cannot
		// read, and the server may read it (MySQL's 1s, PostgreSQL's identifiers that
		// start with U+FEFF): refused.
		return nil, unsupported("", "the statement cannot be tokenized: %v", err)
	}
	p := &parser{rw: rw, src: sql, all: toks, sig: significant(sql, toks)}
	pl, err := p.plan(versioned)
	if err == nil && pl.Kind == KindPass && !p.isDDL() && p.mentionsGuard() {
		if err := p.backstop(); err != nil {
			return nil, err
		}
	}
	if err == nil && pl.Kind != KindPass {
		err = p.caseTwin() // a fenced write or claim of a quoted case twin (casetwin.go)
	}
	if err == nil {
		// Every reading of its executable comments passes and plans the same (execcomment.go).
		if err := p.checkExecReadings(pl, versioned); err != nil {
			return nil, err
		}
		if err := checkParamLimit(pl, rw.syn); err != nil {
			return nil, err
		}
		if pl.Kind != KindPass && rw.sessionDependent(sql) {
			pl.Ambiguous = true // a claim without a token is sent as written, too
		}
		pl = p.txOnly(pl)
		pl = p.inTxRefused(pl)
		pl = p.markDynamic(pl)
		pl = p.markBoundText(pl)
	}
	return pl, err
}

// Base returns the configured guard g stands for (itself, or its root).
func (g *Table) Base() *Table {
	if g != nil && g.Root != nil {
		return g.Root
	}
	return g
}

// Key folds a table name as the guards map is keyed: as the server compares names and,
// where the server truncates identifiers (PostgreSQL, 63 bytes), truncated as the
// server would, never inside a UTF-8 character. PostgreSQL folds only the ASCII letters
// of an unquoted name, SQLite compares names ignoring ASCII case only: their keys fold
// ASCII letters only (CAFÉ and café are two tables; caseTwin refuses the twin of a
// guarded name). MySQL/MariaDB keys fold every letter: the case rule is a server
// setting, and Lookup/derive keep the written spelling so the lazy check judges the
// table the server resolves to.
func (rw *Planner) Key(name string) string {
	// The server truncates the bytes it was sent (after folding ASCII only, which keeps
	// their length): truncate first, then fold — folding first would move the cut for a
	// character whose lower case is shorter (U+212A KELVIN SIGN is k).
	name = rw.truncate(name)
	if rw.syn == sqllex.MySQL {
		return strings.ToLower(name)
	}
	return sqllex.LowerASCII(name)
}

// truncate cuts an identifier as the server does (PostgreSQL: to 63 bytes, never inside
// a UTF-8 character); unchanged where the server does not truncate.
func (rw *Planner) truncate(name string) string {
	return sqllex.TruncateIdent(name, rw.maxIdent)
}

// foldQual folds a qualifier (schema, database or ATTACH alias) as the server compares
// it: exactly on MySQL/MariaDB (database names are case-sensitive with
// lower_case_table_names = 0), ASCII letters only on PostgreSQL and SQLite. A quoted
// PostgreSQL qualifier with upper-case letters ("S".accounts) is refused by caseTwin,
// since Lookup does not see the quotes.
func (rw *Planner) foldQual(q string) string {
	if rw.syn == sqllex.MySQL {
		return q
	}
	return sqllex.LowerASCII(q)
}

// Lookup finds the guard for a table reference, if it is guarded (docs/design.md G13,
// "Guards match the object the statement resolves to"): a reference is guarded when
// its last part names a guarded table (key: folded, truncated as the server
// truncates), whatever its qualifier. A reference written as configured (the same
// qualifier, or none for a guard without one) gets the configured guard; any other
// (another schema, database or ATTACH alias, a guard's table written unqualified or
// qualified differently) gets a derived guard with the same fencing columns whose lazy
// schema check runs on the name as the statement wrote it, so the object it resolves
// to is either fit for fencing or the write is refused with ErrSchema. When several
// configured guards share the name, the one with the same qualifier wins, else the
// first.
func (rw *Planner) Lookup(parts []string) *Table {
	if len(parts) == 0 {
		return nil
	}
	qual := ""
	if len(parts) >= 2 {
		qual = parts[len(parts)-2]
	}
	name := parts[len(parts)-1]
	gs := rw.guards[rw.Key(name)]
	if len(gs) == 0 {
		if gs = rw.twins[strings.ToLower(rw.Key(name))]; len(gs) > 0 {
			// A non-ASCII case twin (PostgreSQL, SQLite): another table, given a derived
			// guard of its own spelling so that a fenced write of it is planned, and then
			// refused by caseTwin.
			return rw.derive(gs[0], qual, name)
		}
		return nil
	}
	fq := rw.foldQual(qual)
	for _, g := range gs {
		if fq == g.Schema && (rw.syn != sqllex.MySQL || g.Name == name) {
			return g
		}
	}
	return rw.derive(gs[0], qual, name)
}

// derive returns the interned guard for root's table reached as qual.name (qual ""
// : unqualified). It is keyed by the qualifier as the server compares it (foldQual:
// exactly on MySQL/MariaDB, so `T_X`.acc and t_x.acc get two guards and two verdicts,
// each checked on its own spelling). On MySQL/MariaDB a name written in another letter
// case than the guard's keeps the spelling: with lower_case_table_names = 0 it is
// another table (a case twin, `Accounts` next to `accounts`), whose own columns the
// lazy check must judge; where the server folds names the check finds the guarded
// table itself. On PostgreSQL and SQLite a name whose key differs from the guard's (a
// non-ASCII case twin) keeps its spelling too; caseTwin refuses its fenced writes.
func (rw *Planner) derive(root *Table, qual, name string) *Table {
	k := rw.foldQual(qual) + "\x00" + rw.Key(root.Name)
	twin := name != root.Name && (rw.syn == sqllex.MySQL || rw.Key(name) != rw.Key(root.Name))
	if twin {
		k += "\x00" + name
	}
	if g, ok := rw.derived.Load(k); ok {
		return g.(*Table)
	}
	d := *root
	d.Schema, d.Root = qual, root
	if twin {
		d.Name = name
	}
	g, _ := rw.derived.LoadOrStore(k, &d)
	return g.(*Table)
}

func unsupported(table, format string, args ...any) error {
	return &Refusal{Table: table, Reason: fmt.Sprintf(format, args...)}
}

// Tables returns the configured guarded tables in configuration order (tables sharing
// a name grouped under the first).
func (rw *Planner) Tables() []*Table {
	var out []*Table
	for _, k := range rw.names {
		out = append(out, rw.guards[k]...)
	}
	return out
}

// Syntax returns the lexical rules the planner reads statements by.
func (rw *Planner) Syntax() sqllex.Syntax { return rw.syn }

// NumberedParams reports whether plans use $n placeholders (true) or positional ?.
func (rw *Planner) NumberedParams() bool { return rw.numbered }
