package fencedsql

import (
	"context"
	"database/sql/driver"
	"fmt"
	"reflect"
	"strconv"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// judgeBoundText judges the statement text a dynamic statement (or DDL) takes as a
// bound argument (plan.Plan.TextArgs: EXECUTE IMMEDIATE ?, PREPARE s FROM ?, DO $1;
// internal/plan/boundtext.go) exactly as its literal form is judged: query with each
// such placeholder replaced by the literal of its value in args is planned (the
// planner, uncached) and admitted (admit: transaction control, implicit commits,
// the session's reading), and a refusal of it is the statement's, returned as an
// *UnsupportedError before anything is sent. It runs at every execution, with that
// execution's arguments (a prepared statement's too): nil when p has no such
// placeholder. A value the wrapper cannot read as text (a type other than a string,
// bytes, a number, a boolean, a time or NULL) is refused. The statement, when
// admitted, is sent as the caller wrote it.
func (c *conn) judgeBoundText(ctx context.Context, p *plan.Plan, query string, args []driver.NamedValue) error {
	if p == nil || len(p.TextArgs) == 0 {
		return nil
	}
	text, err := c.core.boundText(query, p.TextArgs, args)
	if err != nil {
		return c.core.refused(err)
	}
	_, versioned := expectedVersion(ctx)
	q, err := c.core.rw.Rewrite(text, versioned)
	if err != nil {
		return c.core.refused(err)
	}
	if q.Kind != plan.KindPass {
		return c.core.refused(&UnsupportedError{Table: q.Guard.String(), Reason: "a bound argument read as statement text that writes a guarded table"})
	}
	return c.admit(ctx, q, text)
}

// boundText returns query with each placeholder of at replaced by the literal its
// argument becomes (textLiteral), or the refusal of a value it cannot read.
func (k *core) boundText(query string, at []plan.TextArg, args []driver.NamedValue) (string, error) {
	var b strings.Builder
	last := 0
	for _, a := range at {
		lit, ok := "", false
		for _, nv := range args {
			if nv.Ordinal == a.Arg {
				var err error
				if lit, err = k.textLiteral(nv.Value); err != nil {
					return "", err
				}
				ok = true
				break
			}
		}
		if !ok {
			continue // no such argument: the driver refuses the statement
		}
		b.WriteString(query[last:a.Start])
		b.WriteString(lit)
		last = a.End
	}
	b.WriteString(query[last:])
	return b.String(), nil
}

// textLiteral is the SQL literal of a bound value as the string checks read it: a
// string or bytes quoted (plan.Planner.QuoteLiteral), a number or boolean as digits, a
// time quoted, nil as NULL. Another type is refused: the wrapper cannot say what text
// the driver makes of it.
func (k *core) textLiteral(v any) (string, error) {
	switch x := v.(type) {
	case nil:
		return "NULL", nil
	case string:
		return k.rw.QuoteLiteral(x), nil
	case []byte:
		return k.rw.QuoteLiteral(string(x)), nil
	case time.Time:
		return k.rw.QuoteLiteral(x.Format(time.RFC3339Nano)), nil
	case bool:
		if x {
			return "1", nil
		}
		return "0", nil
	}
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.String:
		return k.rw.QuoteLiteral(r.String()), nil
	case reflect.Slice:
		if r.Type().Elem().Kind() == reflect.Uint8 {
			return k.rw.QuoteLiteral(string(r.Bytes())), nil
		}
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return strconv.FormatInt(r.Int(), 10), nil
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return strconv.FormatUint(r.Uint(), 10), nil
	case reflect.Float32, reflect.Float64:
		return strconv.FormatFloat(r.Float(), 'g', -1, 64), nil
	}
	return "", &UnsupportedError{Reason: fmt.Sprintf("a bound argument of type %T where the server may read it as statement text (EXECUTE IMMEDIATE ?, PREPARE … FROM ?, DO $1): the wrapper cannot judge it; bind a string", v)}
}
