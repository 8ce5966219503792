package fencedpgxtest

import (
	"context"
	"strings"
	"sync"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// Before its first statement a fenced pool reads what the database records as guarded
// (the registries, the tables carrying the guard's triggers) and the partitions,
// children and parents of its guarded tables, and asks whether its listed tables exist,
// as a database/sql pool does at its first connection; with the schema check off it
// still reads the session settings that change how statements are read (red-team
// rt34d F1, F4). Over go-sqlmock those queries fail (sqlmock answers no query it was not
// told to expect, and does not count it against ExpectationsWereMet) and, with the
// schema check off, the pool logs the failure and guards what its options name. DB
// does the same: such a query, unless it matches the next expectation (a test may
// answer it), fails with errFirstUse and is not an unexpected call.

// errFirstUse answers the wrapper's first-use catalog queries nobody expected.
type errFirstUse struct{ sql string }

func (e *errFirstUse) Error() string {
	return "fencedpgxtest: the wrapper's read of what the database records as guarded was not expected (answered with this error; it is not an unexpected call): " + e.sql
}

// firstUseQueries are the texts of those queries (their arguments, table names, vary).
var firstUseQueries = sync.OnceValue(func() map[string]bool {
	out := map[string]bool{}
	d := postgres.Dialect
	record := func(_ context.Context, q string, _ ...any) ([][]string, error) {
		out[strings.TrimSpace(q)] = true
		return nil, nil
	}
	_, _ = schema.ReadRecords(context.Background(), record, d)
	// The listed tables' existence (asked whatever the schema check says) and the
	// session settings that change how statements are read (asked with the check off
	// too, once per connection: pgx's own are tracked, the double's are not).
	for _, t := range []dialect.TableName{{Name: "t"}, {Schema: "s", Name: "t"}} {
		_, _ = schema.Columns(context.Background(), record, d, t, schema.DefaultTokenColumn, schema.DefaultVersionColumn)
	}
	out[strings.TrimSpace(d.SessionQuery())] = true
	if f, ok := d.(dialect.CatalogViewFinder); ok {
		q, _ := f.CatalogViewsQuery() // the relations that reach a system catalog
		out[strings.TrimSpace(q)] = true
	}
	for _, t := range []dialect.TableName{{Name: "t"}, {Schema: "s", Name: "t"}} {
		if f, ok := d.(dialect.DescendantFinder); ok {
			q, _ := f.DescendantsQuery(t)
			out[strings.TrimSpace(q)] = true
		}
		if f, ok := d.(dialect.AncestorFinder); ok {
			q, _ := f.AncestorsQuery(t)
			out[strings.TrimSpace(q)] = true
		}
	}
	return out
})

// isFirstUse reports whether a query is one of the wrapper's first-use reads.
func isFirstUse(kind Kind, sql string) bool {
	return kind == KindQuery && firstUseQueries()[strings.TrimSpace(sql)]
}
