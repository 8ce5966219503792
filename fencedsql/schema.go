package fencedsql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"io"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// verify runs the lazy checks before a guarded write: the session (verifySession: from
// the driver's state before every write where the dialect tracks it, else once per
// connection and again after a statement that may have changed it) and the table's
// fencing columns (once per name as the statements write it, see lookup: per DB, or
// per connection once a statement may have changed how it resolves names,
// resolvesNames). Only successes are cached, so fixing the
// schema or the session takes effect without a restart. WithSchemaCheck(false) turns
// off every check that sends a query; the tracked session check, which sends none,
// always runs.
func (c *conn) verify(ctx context.Context, g *guard) error {
	k := c.core
	if err := c.verifySession(ctx, k.cfg.schemaCheck); err != nil {
		return err
	}
	if !k.cfg.schemaCheck {
		return nil
	}
	if c.namesMoved {
		if _, ok := c.checkedNames[g]; ok {
			return nil
		}
	} else if _, ok := k.checked.Load(g); ok {
		return nil
	}
	t := dialect.TableName{Schema: g.schema, Name: g.name}
	v, err := inspectColumns(ctx, c.queryStrings, k.dialect, t, g.tokenCol, g.verCol)
	if err != nil {
		return &SchemaError{Table: g.String(), Problem: "the column check query failed" + mockHint, Err: err}
	}
	if !v.fit() {
		return &SchemaError{Table: g.String(), Problem: strings.Join(v.problems, "; "), Fix: strings.Join(v.fix, "; ")}
	}
	if err := lintGuard(ctx, c.queryStrings, k.dialect, g, t); err != nil {
		return err
	}
	if c.namesMoved {
		if c.checkedNames == nil {
			c.checkedNames = map[*guard]struct{}{}
		}
		c.checkedNames[g] = struct{}{}
	} else {
		k.checked.Store(g, struct{}{})
	}
	return nil
}

// mockHint follows the message of a failed check query: the usual cause is a mock
// driver without an expectation for it.
const mockHint = " (under a mock driver such as go-sqlmock, turn the checks off with fencedsql.WithSchemaCheck(false), or use the fencedtest package)"

// queryFunc runs a catalog query and returns its rows as strings (valueString).
type queryFunc func(ctx context.Context, query string, args []any) ([][]string, error)

// columnVerdict is the one answer to "is this table fit for fencing, and what fixes
// it", as far as its columns go: the lazy check before the first guarded write and
// CheckSchema both use it (CheckSchema adds the database-side guard).
type columnVerdict struct {
	exists, hasToken, hasVersion, tokenNotNull, versionNotNull bool

	problems []string // in words; empty when the columns are fit
	fix      []string // DDL statements, in order: add missing columns, then make nullable ones NOT NULL
}

func (v columnVerdict) fit() bool { return len(v.problems) == 0 }

// inspectColumns runs d's column query for table through query and judges the answer
// (judgeColumns). An error is the query's: the answer is unknown.
func inspectColumns(ctx context.Context, query queryFunc, d dialect.Dialect, table dialect.TableName, tokCol, verCol string) (columnVerdict, error) {
	q, args := d.ColumnsQuery(table)
	rows, err := query(ctx, q, args)
	if err != nil {
		return columnVerdict{}, err
	}
	return judgeColumns(d, table, tokCol, verCol, rows), nil
}

// judgeColumns judges the rows of d's column query, (column name, not-null flag):
// column names match case-insensitively, and the flag means NOT NULL when it is 1,
// true or t in any case (notNullFlag). No rows: no such table.
//
// A fenced write relies on the NOT NULL violation of the fencing columns (G1, G2 in
// docs/design.md), so both columns must exist and be NOT NULL. Every problem is named,
// with the statements that fix them: GuardColumnsDDL for the missing columns, then
// NotNullFixer's statements per nullable column; where the dialect has none, the
// problem says to rebuild the table.
func judgeColumns(d dialect.Dialect, table dialect.TableName, tokCol, verCol string, rows [][]string) columnVerdict {
	var v columnVerdict
	for _, row := range rows {
		if len(row) < 2 {
			continue
		}
		v.exists = true
		nn := notNullFlag(row[1])
		switch {
		case strings.EqualFold(row[0], tokCol):
			v.hasToken, v.tokenNotNull = true, nn
		case strings.EqualFold(row[0], verCol):
			v.hasVersion, v.versionNotNull = true, nn
		}
	}
	if !v.exists {
		v.problems = append(v.problems, "no such table (or it is not visible to this connection)")
		return v
	}
	if !v.hasToken {
		v.problems = append(v.problems, "missing column "+tokCol+" (BIGINT NOT NULL DEFAULT 0)")
	}
	if !v.hasVersion {
		v.problems = append(v.problems, "missing column "+verCol+" (BIGINT NOT NULL DEFAULT 0)")
	}
	if !v.hasToken || !v.hasVersion {
		v.fix = append(v.fix, d.GuardColumnsDDL(table, tokCol, verCol, !v.hasToken, !v.hasVersion)...)
	}
	for _, c := range []struct {
		nullable bool
		col      string
	}{{v.hasToken && !v.tokenNotNull, tokCol}, {v.hasVersion && !v.versionNotNull, verCol}} {
		if !c.nullable {
			continue
		}
		var fix []string
		if f, ok := d.(dialect.NotNullFixer); ok {
			fix = f.NotNullDDL(table, c.col)
		}
		p := "column " + c.col + " is nullable: it must be NOT NULL (a fenced write relies on the NOT NULL violation)"
		if len(fix) == 0 {
			p += "; this database cannot change an existing column: rebuild the table with " + c.col + " BIGINT NOT NULL DEFAULT 0"
		} else {
			p += "; rows holding NULL in it must be set (e.g. to 0) first"
		}
		v.problems = append(v.problems, p)
		v.fix = append(v.fix, fix...)
	}
	return v
}

// notNullFlag reads the not-null flag of a column query: 1, true or t (any case,
// surrounding spaces ignored) is NOT NULL; anything else, "" (NULL) included, is
// nullable. Integer and boolean flags arrive as "1"/"0" (valueString), text ones as
// the database spells them ("t"/"f", "true"/"false", "TRUE").
func notNullFlag(s string) bool {
	s = strings.TrimSpace(s)
	return s == "1" || strings.EqualFold(s, "t") || strings.EqualFold(s, "true")
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
			row[i] = valueString(v)
		}
		out = append(out, row)
	}
	return out, nil
}

// valueString renders a value of a catalog query as text: NULL as "", booleans as
// "1"/"0", bytes as their text.
func valueString(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	case bool:
		if v {
			return "1"
		}
		return "0"
	default:
		return fmt.Sprint(v)
	}
}
