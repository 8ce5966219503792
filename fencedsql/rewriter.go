package fencedsql

import (
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// rewriter turns user SQL into fenced SQL for one set of guarded tables and one dialect.
type rewriter struct {
	syn      sqllex.Syntax
	numbered bool // $n placeholders (PostgreSQL) instead of positional ?
	// sessionChecked: the dialect validates session settings before guarded writes
	// (MySQL's sql_mode), so a statement that may change them re-arms the check.
	sessionChecked bool
	quote          func(string) string
	strict         bool
	guards         map[string][]*guard // by lower-cased unqualified table name
	names          []string            // lower-cased guarded names, for the pre-filter
	nonASCII       bool                // some guarded name is not ASCII: pre-filter with Unicode folding
	// stringIdents: a string literal may stand for an identifier (SQLite accepts
	// UPDATE 'accounts' …).
	stringIdents bool
	// allowDDL, allowDynamic: WithDDL, WithDynamicSQL.
	allowDDL, allowDynamic bool
}

// guard is one guarded table and its column names.
type guard struct {
	schema   string // lower-cased, "" for any
	name     string // as configured
	tokenCol string
	verCol   string
	// quoted column names, computed once
	qTok, qVer string
}

// isFenceColumn reports whether name (unquoted) is the token or the version column.
func (g *guard) isFenceColumn(name string) bool {
	return strings.EqualFold(name, g.tokenCol) || strings.EqualFold(name, g.verCol)
}

func (g *guard) String() string {
	if g == nil {
		return "" // a refused locking read may name no single guarded table
	}
	if g.schema != "" {
		return g.schema + "." + g.name
	}
	return g.name
}

// rewrite plans one statement. versioned selects the ExpectVersion variant.
func (rw *rewriter) rewrite(sql string, versioned bool) (*plan, error) {
	if !rw.mayMention(sql) && !rw.controlHead(sql) && !rw.mayProtect(sql) {
		if rw.setsSession(sql) {
			return &plan{kind: kindPass, nUser: -1, resetsSession: true}, nil
		}
		return passPlan, nil
	}
	toks, err := sqllex.Lex(sql, rw.syn)
	if err != nil {
		if !rw.mayMention(sql) && (len(rw.names) == 0 || !hasProtectNeedle(sql)) {
			// Only its head made it worth a look (controlHead), and it names no guarded
			// table, guard object or protected setting: the server judges text it cannot
			// read either.
			return passPlan, nil
		}
		return nil, unsupported("", "the statement cannot be tokenized: %v", err)
	}
	p := &parser{rw: rw, src: sql, all: toks, sig: sqllex.Significant(toks)}
	pl, err := p.plan(versioned)
	if err == nil && pl.kind == kindPass && !p.isDDL() && p.mentionsGuard() {
		if err := p.backstop(); err != nil {
			return nil, err
		}
	}
	return pl, err
}

// lookup finds the guard for a table reference, if it is guarded.
func (rw *rewriter) lookup(parts []string) *guard {
	if len(parts) == 0 {
		return nil
	}
	gs := rw.guards[strings.ToLower(parts[len(parts)-1])]
	for _, g := range gs {
		if g.schema == "" || len(parts) < 2 || strings.EqualFold(parts[len(parts)-2], g.schema) {
			return g
		}
	}
	return nil
}

func unsupported(table, format string, args ...any) error {
	return &UnsupportedError{Table: table, Reason: fmt.Sprintf(format, args...)}
}
