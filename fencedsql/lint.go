package fencedsql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// lintGuard is the lazy check's half of Lint: nil when the table is fit (or the
// dialect has no dialect.SchemaLinter), else a *SchemaError (ErrSchema) naming the table, the
// problems and their fixes, exactly as schema.Check reports them (lintReport).
func lintGuard(ctx context.Context, query dialect.CatalogQuery, d dialect.Dialect, g *plan.Table, table dialect.TableName) error {
	problems, fix, err := schema.Lint(ctx, query, d, table, g.TokenCol, g.VerCol)
	if err != nil {
		return checkQueryErr(ctx, d, g.String(), "the schema lint query failed", err)
	}
	if len(problems) > 0 {
		return &SchemaError{Table: g.String(), Problem: strings.Join(problems, "; "), Fix: strings.Join(fix, "; ")}
	}
	return nil
}
