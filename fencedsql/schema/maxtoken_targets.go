package schema

import (
	"context"
	"fmt"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// tokenTarget is one table MaxToken reads, by the name that is that table, and its
// token column.
type tokenTarget struct {
	table  dialect.TableName
	column string
}

// tokenTargets resolves specs to the tables MaxToken reads (red-team rt40c F1). Where
// the dialect is a dialect.TokenTableResolver (PostgreSQL), each name is expanded to
// every table it reaches that has the token column, each by its exact schema and name
// from the catalog: no search_path picks one table of a name, a "$user" schema's table
// cannot stand in for public's, and accounts and "Accounts" are two tables. A name
// that reaches none fails: MaxToken cannot answer for it. Elsewhere each name is read
// as given (MySQL/MariaDB: the connection's database, or the named one; SQLite: main,
// or the named attached database — with no search path, no other session's table can
// take its place). Tables named twice are read once.
func tokenTargets(ctx context.Context, q querier, d dialect.Dialect, specs []GuardSpec) ([]tokenTarget, error) {
	r, resolve := d.(dialect.TokenTableResolver)
	var out []tokenTarget
	seen := map[tokenTarget]bool{}
	add := func(t tokenTarget) {
		if !seen[t] {
			seen[t] = true
			out = append(out, t)
		}
	}
	for _, s := range specs {
		s = s.withDefaults()
		t, problem := s.parse()
		if problem != "" {
			return nil, configErr("MaxToken: table %q: %s", s.Table, problem)
		}
		if !resolve {
			add(tokenTarget{table: t, column: s.TokenColumn})
			continue
		}
		query, args := r.TokenTablesQuery(t, s.TokenColumn)
		rows, err := catalogQuery(q)(ctx, query, args...)
		if err != nil {
			return nil, fmt.Errorf("fencedsql: MaxToken %s: listing the tables the name reaches: %w", s.Table, err)
		}
		n := 0
		for _, row := range rows {
			if len(row) == 3 && row[1] != "" && row[2] != "" {
				add(tokenTarget{table: dialect.CatalogName(row[0], row[1]), column: row[2]})
				n++
			}
		}
		if n == 0 {
			return nil, fmt.Errorf("fencedsql: MaxToken %s: no table of that name with the token column %s: name the guarded tables with their columns", s.Table, s.TokenColumn)
		}
	}
	return out, nil
}
