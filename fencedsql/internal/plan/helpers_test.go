package plan

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// testDialect stands for a dialect in the planner's own tests: its lexical rules,
// placeholders and identifier quoting (the real dialects import package fencedsql,
// which imports this one).
type testDialect struct {
	name     string
	syn      sqllex.Syntax
	numbered bool
	quote    byte
}

var (
	pgTest     = testDialect{"postgres", sqllex.Postgres, true, '"'}
	mysqlTest  = testDialect{"mysql", sqllex.MySQL, false, '`'}
	sqliteTest = testDialect{"sqlite", sqllex.SQLite, false, '"'}
)

func (d testDialect) Name() string         { return d.name }
func (d testDialect) NumberedParams() bool { return d.numbered }
func (d testDialect) QuoteIdent(s string) string {
	q := string(d.quote)
	return q + strings.ReplaceAll(s, q, q+q) + q
}

// testOption sets one field of the PlannerConfig, named like the wrapper's option that
// sets it.
type testOption func(*PlannerConfig)

// Guard guards table ("name" or "schema.name") with the default fencing columns.
func Guard(table string) testOption {
	return func(c *PlannerConfig) {
		schema, name, ok := strings.Cut(table, ".")
		if !ok {
			schema, name = "", table
		}
		c.Tables = append(c.Tables, TableSpec{Schema: schema, Name: name, TokenColumn: "fence_token", VersionColumn: "version"})
	}
}

func WithDDL(allow bool) testOption        { return func(c *PlannerConfig) { c.AllowDDL = allow } }
func WithDynamicSQL(allow bool) testOption { return func(c *PlannerConfig) { c.AllowDynamic = allow } }
func WithStrict(strict bool) testOption    { return func(c *PlannerConfig) { c.Strict = strict } }

// newTestRewriter builds the planner for d with opts (default: accounts guarded).
func newTestRewriter(t testing.TB, d testDialect, opts ...testOption) *Planner {
	t.Helper()
	cfg := PlannerConfig{Syntax: d.syn, NumberedParams: d.numbered, QuoteIdent: d.QuoteIdent}
	if len(opts) == 0 {
		opts = []testOption{Guard("accounts")}
	}
	for _, o := range opts {
		o(&cfg)
	}
	return NewPlanner(cfg)
}

// isRefusal reports whether err is the planner's refusal.
func isRefusal(err error) bool {
	var r *Refusal
	return errors.As(err, &r)
}

// refs lists argument references, for comparing a plan's Args.
func refs(r ...ArgRef) []ArgRef { return r }

// TOK and VER stand for the token and the version among a plan's Args.
const (
	TOK = ArgToken
	VER = ArgVersion
)

// countRef counts r among args.
func countRef(args []ArgRef, r ArgRef) int {
	n := 0
	for _, a := range args {
		if a == r {
			n++
		}
	}
	return n
}
