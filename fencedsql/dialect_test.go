package fencedsql

import "strings"

// testDialect is a minimal Dialect for the package's own tests (the real ones live in
// the dialects packages, which import this one).
type testDialect struct {
	name     string
	syn      Syntax
	numbered bool
	quote    byte
}

var (
	pgTest     = testDialect{"postgres", PostgresSyntax, true, '"'}
	mysqlTest  = testDialect{"mysql", MySQLSyntax, false, '`'}
	sqliteTest = testDialect{"sqlite", SQLiteSyntax, false, '"'}
)

func (d testDialect) Name() string         { return d.name }
func (d testDialect) Syntax() Syntax       { return d.syn }
func (d testDialect) NumberedParams() bool { return d.numbered }
func (d testDialect) QuoteIdent(s string) string {
	q := string(d.quote)
	return q + strings.ReplaceAll(s, q, q+q) + q
}
func (testDialect) Classify(error) ErrorInfo { return ErrorInfo{} }
func (testDialect) ColumnsQuery(table TableName) (query string, args []any) {
	return "COLUMNS", []any{table.Name}
}
func (testDialect) GuardColumnsDDL(table TableName, tokenCol, versionCol string, missingToken, missingVersion bool) []string {
	return []string{"DDL"}
}
func (testDialect) SessionQuery() string            { return "" }
func (testDialect) CheckSession(value string) error { return nil }
