package fencedsql

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// testDialect is a minimal Dialect for the package's own tests, under names of its own
// (a stock name would be refused for the capabilities it lacks: dialectComplete). The real ones live in
// the dialects packages, which import this one.
type testDialect struct {
	name     string
	syn      dialect.Syntax
	numbered bool
	quote    byte
}

var (
	pgTest     = testDialect{"test-postgres", dialect.PostgresSyntax, true, '"'}
	mysqlTest  = testDialect{"test-mysql", dialect.MySQLSyntax, false, '`'}
	sqliteTest = testDialect{"test-sqlite", dialect.SQLiteSyntax, false, '"'}
)

func (d testDialect) Name() string           { return d.name }
func (d testDialect) Syntax() dialect.Syntax { return d.syn }
func (d testDialect) NumberedParams() bool   { return d.numbered }
func (d testDialect) QuoteIdent(s string) string {
	q := string(d.quote)
	return q + strings.ReplaceAll(s, q, q+q) + q
}
func (testDialect) Classify(error) dialect.ErrorInfo { return dialect.ErrorInfo{} }
func (testDialect) ColumnsQuery(table dialect.TableName) (query string, args []any) {
	return "COLUMNS", []any{table.Name}
}
func (testDialect) GuardColumnsDDL(table dialect.TableName, tokenCol, versionCol string, missingToken, missingVersion bool) []string {
	return []string{"DDL"}
}
func (testDialect) SessionQuery() string            { return "" }
func (testDialect) CheckSession(value string) error { return nil }

// The planner raises its claim-conflict error with plan.ClaimConflictMark; the
// dialects recognise it by dialect.ClaimConflictMark: one text.
func TestClaimConflictMarkAgrees(t *testing.T) {
	if plan.ClaimConflictMark != dialect.ClaimConflictMark {
		t.Fatalf("plan.ClaimConflictMark %q, dialect.ClaimConflictMark %q", plan.ClaimConflictMark, dialect.ClaimConflictMark)
	}
}
