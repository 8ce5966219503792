package fencedsql

import (
	"context"
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// lintTable runs d's SchemaLinter, if any, on table: the problems in words and the
// statements that fix them, in order. The lazy check (verify) and CheckSchema both
// call it: one check, one place.
func lintTable(ctx context.Context, query queryFunc, d dialect.Dialect, table dialect.TableName, tokCol, verCol string) (problems, fix []string, err error) {
	l, ok := d.(dialect.SchemaLinter)
	if !ok {
		return nil, nil, nil
	}
	cq := func(ctx context.Context, q string, args ...any) ([][]string, error) { return query(ctx, q, args) }
	found, err := l.LintSchema(ctx, cq, dialect.LintTable{Table: table, TokenColumn: tokCol, VersionColumn: verCol})
	if err != nil {
		return nil, nil, err
	}
	for _, p := range found {
		problems = append(problems, p.Problem)
		fix = append(fix, p.Fix...)
	}
	return problems, fix, nil
}

// lintGuard is the lazy check's half of lintTable: nil when the table is fit (or the
// dialect has no SchemaLinter), else a *SchemaError (ErrSchema) naming the table, the
// problems and their fixes, exactly as CheckSchema reports them (lintReport).
func lintGuard(ctx context.Context, query queryFunc, d dialect.Dialect, g *guard, table dialect.TableName) error {
	problems, fix, err := lintTable(ctx, query, d, table, g.tokenCol, g.verCol)
	if err != nil {
		return &SchemaError{Table: g.String(), Problem: "the schema lint query failed" + mockHint, Err: err}
	}
	if len(problems) > 0 {
		return &SchemaError{Table: g.String(), Problem: strings.Join(problems, "; "), Fix: strings.Join(fix, "; ")}
	}
	return nil
}

// lintReport is CheckSchema's half of lintTable: it adds the problems and their fixes
// to r.
func lintReport(ctx context.Context, query queryFunc, d dialect.Dialect, spec GuardSpec, table dialect.TableName, r *TableReport) error {
	problems, fix, err := lintTable(ctx, query, d, table, spec.TokenColumn, spec.VersionColumn)
	if err != nil {
		return fmt.Errorf("fencedsql: CheckSchema %s: the schema lint query failed: %w", spec.Table, err)
	}
	r.Problems = append(r.Problems, problems...)
	r.Fix = append(r.Fix, fix...)
	return nil
}
