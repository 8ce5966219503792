package fencedsql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"
)

// verify runs the lazy checks before a guarded write: the table's fencing columns (once
// per table and DB) and the session (once per connection). Only successes are cached,
// so fixing the schema takes effect without a restart.
func (c *conn) verify(ctx context.Context, g *guard) error {
	k := c.core
	if !k.cfg.schemaCheck {
		return nil
	}
	if !c.sessionOK {
		if q := k.dialect.SessionQuery(); q != "" {
			vals, err := c.queryStrings(ctx, q, nil)
			if err != nil {
				return &SchemaError{Problem: "the session check query failed", Err: err}
			}
			v := ""
			if len(vals) > 0 && len(vals[0]) > 0 {
				v = vals[0][0]
			}
			if err := k.dialect.CheckSession(v); err != nil {
				return err
			}
		}
		c.sessionOK = true
	}
	if _, ok := k.checked.Load(g); ok {
		return nil
	}
	q, args := k.dialect.ColumnsQuery(g.schema, g.name)
	vals, err := c.queryStrings(ctx, q, args)
	if err != nil {
		return &SchemaError{Table: g.String(), Problem: "the column check query failed", Err: err}
	}
	if len(vals) == 0 {
		return &SchemaError{Table: g.String(), Problem: "no such table (or it is not visible to this session)"}
	}
	var hasTok, hasVer, nullTok, nullVer bool
	for _, row := range vals {
		if len(row) < 2 {
			continue
		}
		notNull := row[1] == "1" || strings.EqualFold(row[1], "true")
		switch {
		case strings.EqualFold(row[0], g.tokenCol):
			hasTok, nullTok = true, !notNull
		case strings.EqualFold(row[0], g.verCol):
			hasVer, nullVer = true, !notNull
		}
	}
	if !hasTok || !hasVer {
		var missing []string
		if !hasTok {
			missing = append(missing, g.tokenCol)
		}
		if !hasVer {
			missing = append(missing, g.verCol)
		}
		return &SchemaError{
			Table:   g.String(),
			Problem: "missing fencing column(s) " + strings.Join(missing, ", "),
			Fix:     k.dialect.GuardColumnsDDL(g.String(), g.tokenCol, g.verCol, !hasTok, !hasVer),
		}
	}
	if nullTok || nullVer {
		col := g.tokenCol
		if !nullTok {
			col = g.verCol
		}
		fix := "make it NOT NULL (the dialect has no statement for it: rebuild the table)"
		if f, ok := k.dialect.(notNullFixer); ok {
			if stmts := f.NotNullDDL(g.String(), col); len(stmts) > 0 {
				fix = strings.Join(stmts, "; ")
			}
		}
		return &SchemaError{
			Table:   g.String(),
			Problem: fmt.Sprintf("column %s must be NOT NULL (a fenced write relies on the NOT NULL violation)", col),
			Fix:     fix,
		}
	}
	k.checked.Store(g, struct{}{})
	return nil
}

// queryStrings runs an internal query on the wrapped connection and returns its rows
// as strings.
func (c *conn) queryStrings(ctx context.Context, q string, args []any) ([][]string, error) {
	nv := make([]driver.NamedValue, len(args))
	for i, a := range args {
		nv[i] = driver.NamedValue{Ordinal: i + 1, Value: a}
	}
	rows, err := connRunner{c}.query(ctx, &plan{sql: q}, nv)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols := len(rows.Columns())
	var out [][]string
	for {
		dest := make([]driver.Value, cols)
		if err := rows.Next(dest); err == io.EOF {
			break
		} else if err != nil {
			return nil, err
		}
		row := make([]string, cols)
		for i, v := range dest {
			switch v := v.(type) {
			case nil:
			case []byte:
				row[i] = string(v)
			case string:
				row[i] = v
			case bool:
				row[i] = "0"
				if v {
					row[i] = "1"
				}
			default:
				row[i] = fmt.Sprint(v)
			}
		}
		out = append(out, row)
	}
	return out, nil
}
