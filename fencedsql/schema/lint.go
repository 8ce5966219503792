package schema

import (
	"context"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// Lint runs d's SchemaLinter, if any, on table: the problems in words and the
// statements that fix them, in order. The lazy check (verify) and Check both
// call it: one check, one place.
func Lint(ctx context.Context, query dialect.CatalogQuery, d dialect.Dialect, table dialect.TableName, tokCol, verCol string) (problems, fix []string, err error) {
	if err := complete("Lint", d); err != nil {
		return nil, nil, err
	}
	l, ok := d.(dialect.SchemaLinter)
	if !ok {
		return nil, nil, nil
	}
	found, err := l.LintSchema(ctx, query, dialect.LintTable{Table: table, TokenColumn: tokCol, VersionColumn: verCol})
	if err != nil {
		return nil, nil, err
	}
	for _, p := range found {
		problems = append(problems, p.Problem)
		fix = append(fix, p.Fix...)
	}
	return problems, fix, nil
}

// lintReport is Check's half of Lint: it adds the problems and their fixes
// to r.
func lintReport(ctx context.Context, query dialect.CatalogQuery, d dialect.Dialect, spec GuardSpec, table dialect.TableName, r *TableReport) error {
	problems, fix, err := Lint(ctx, query, d, table, spec.TokenColumn, spec.VersionColumn)
	if err != nil {
		return fmt.Errorf("fencedsql: schema.Check %s: the schema lint query failed: %w", spec.Table, err)
	}
	r.Problems = append(r.Problems, problems...)
	r.Fix = append(r.Fix, fix...)
	return nil
}
