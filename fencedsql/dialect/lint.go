package dialect

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// SchemaLinter is implemented by dialects in which a table can have both fencing
// columns, NOT NULL, and still defeat the fence by how it is declared: SQLite's
// conflict clauses (PRIMARY KEY … ON CONFLICT REPLACE deletes the newer row; NOT NULL
// ON CONFLICT REPLACE on the token column turns the fencing NULL into the default;
// IGNORE skips the fenced row silently) and column type affinity (a TEXT token column
// compares '10' <= '9'). See the dialect packages for what each finds.
//
// Its problems are judged in one place (lintTable) for both callers: the lazy check
// before the first guarded write on a connection refuses the table with ErrSchema
// (nothing is written), and schema.Check reports them, with their fixes, after the
// columns' problems. The lazy check runs the linter only once the columns are fit, and
// not under WithSchemaCheck(false).
type SchemaLinter interface {
	// LintSchema inspects the catalog through query (read-only) and returns the
	// problems of t.Table, none when it is fit. It is called only for a table whose
	// fencing columns exist (schema.Check) or exist and are NOT NULL (the lazy check).
	// An error is a failed catalog query: the answer is unknown.
	LintSchema(ctx context.Context, query CatalogQuery, t LintTable) ([]SchemaProblem, error)
}

// LintTable is what a SchemaLinter is told about the guarded table.
type LintTable struct {
	Table                      TableName
	TokenColumn, VersionColumn string
}

// SchemaProblem is one reason a SchemaLinter found why a table cannot be fenced
// safely.
type SchemaProblem struct {
	// Problem says, in words, what in the table's declaration defeats the fence, how,
	// and what to change where Fix is empty.
	Problem string
	// Fix holds the statements that fix it, in order; empty when no statement can
	// (SQLite cannot alter a column or a constraint: the table must be rebuilt).
	Fix []string
}

// NarrowFencingColumn judges an integer fencing column by its width in bytes: the
// token column must hold any token a lock service grants (redislock's start at the
// server's clock in microseconds, about 2^51; an etcd revision can pass 2^31), so it
// must be 8 bytes; the version column counts the writes to one row, and must be at
// least 4 bytes (a smallint overflows after 32767 writes, a tinyint after 127). A
// narrower column fails every fenced write that does not fit with the driver's
// out-of-range error instead of ErrSchema. It returns the problem in words, "" for a
// column wide enough; column is the column's name, declared its type as declared,
// tokenColumn the table's token column.
func NarrowFencingColumn(column, declared string, width int, tokenColumn string) string {
	switch {
	case column == tokenColumn && width < 8:
		return "token column " + column + " is " + declared + ", narrower than 64 bits: tokens from redislock (microseconds since the epoch) or etcd (revisions past 2^31) do not fit, and every such write would fail with the driver's out-of-range error; make it bigint"
	case column != tokenColumn && width < 4:
		return "version column " + column + " is " + declared + ", narrower than 32 bits: a row's version overflows after a few thousand writes, and every later write would fail with the driver's out-of-range error; make it bigint"
	}
	return ""
}

// KeyFencingColumn judges a fencing column that is a column of one of the table's
// unique keys (its primary key, a unique index or constraint; red-team rt59d F1:
// fenced_token_column=id passed the lazy check and schema.Check). Every fenced write
// sets the token and the version column, so such a write moves the row to another key
// (UPDATE … SET balance = 200 WHERE id = 1 under token 20 turned row 1 into row 20), a
// stale holder's write finds no row and reads as "not found" instead of ErrFenced, its
// INSERT lands under another key, and two rows written under one token collide. No fix
// statement: fence on columns of their own (fencedsql-schema proposes fence_token and
// version). It returns the problem in words; column is the fencing column, key the
// unique key's name as the catalog spells it, followed by how the key depends on the
// column when it is not one of its plain key columns (red-team rt60b F1: an index
// expression, an exclusion constraint, a generated column, a partition's own key).
func KeyFencingColumn(column, key string) string {
	return "fencing column " + column + " is in the unique key " + key + ": every fenced write sets it, so a write moves the row to another key, a stale holder's write finds no row (not found, not ErrFenced) or inserts under another key, and two rows written under one token collide; fence on columns of their own (fence_token, version) that are in no unique key"
}

// DDLTokenKind classifies a DDLToken.
type DDLTokenKind uint8

// The kinds of DDLToken.
const (
	DDLWord   DDLTokenKind = iota + 1 // a bare word: keyword or identifier
	DDLQuoted                         // a quoted identifier ("x", `x`, [x])
	DDLString                         // a string literal
	DDLNumber                         // a numeric literal
	DDLPunct                          // an operator or punctuation: ( ) , ; . = are tokens of their own
	DDLOther                          // a placeholder or an executable comment
)

// DDLToken is one significant token of SQL text (spaces and comments dropped), for a
// SchemaLinter that reads the DDL the database stored (SQLite's sqlite_master.sql).
type DDLToken struct {
	Kind DDLTokenKind
	// Text is the token as written; Start and End its byte offsets in the source.
	Text       string
	Start, End int
}

// LexDDL splits src by syn's lexical rules into its significant tokens: the exact
// lexer the rewriter uses (quoted identifiers, string literals, comments), exported
// for SchemaLinter implementations. An error is a lexical one (say, an unterminated
// literal).
func LexDDL(src string, syn Syntax) ([]DDLToken, error) {
	toks, err := sqllex.Lex(src, syn)
	if err != nil {
		return nil, err
	}
	sig := sqllex.Significant(toks)
	out := make([]DDLToken, len(sig))
	for i, t := range sig {
		k := DDLOther
		switch t.Kind {
		case sqllex.KindWord:
			k = DDLWord
		case sqllex.KindQuotedIdent:
			k = DDLQuoted
		case sqllex.KindString:
			k = DDLString
		case sqllex.KindNumber:
			k = DDLNumber
		case sqllex.KindPunct:
			k = DDLPunct
		}
		out[i] = DDLToken{Kind: k, Text: t.Text(src), Start: t.Start, End: t.End}
	}
	return out, nil
}

// Is reports whether the token is the bare keyword kw (ASCII case-insensitive, as the
// servers read keywords: EqualFoldASCII, not strings.EqualFold, under which the bare
// name aſ — U+017F, an identifier for SQLite — would read as the keyword AS; red-team
// rt61b F3).
func (t DDLToken) Is(kw string) bool { return t.Kind == DDLWord && EqualFoldASCII(t.Text, kw) }

// Name returns the name the token spells where a name is expected: a bare word as
// written, a quoted identifier or a string literal unquoted (SQLite accepts 'x' as a
// name); ok is false for other tokens.
func (t DDLToken) Name() (name string, ok bool) {
	switch t.Kind {
	case DDLWord, DDLQuoted:
		k := sqllex.KindWord
		if t.Kind == DDLQuoted {
			k = sqllex.KindQuotedIdent
		}
		n, _, ok := sqllex.Ident(t.Text, sqllex.Token{Kind: k, End: len(t.Text)})
		return n, ok
	case DDLString:
		if len(t.Text) >= 2 && t.Text[0] == '\'' && t.Text[len(t.Text)-1] == '\'' {
			return strings.ReplaceAll(t.Text[1:len(t.Text)-1], "''", "'"), true
		}
	}
	return "", false
}
