package fencedsql

import (
	"context"
	"database/sql/driver"
	"fmt"
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
// bytes, a builtin number, a boolean, a time or NULL of exactly those builtin types:
// textLiteral) is refused. The statement, when
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
// time quoted, nil as NULL. Only these builtin types themselves are read (red-team
// rt55e F1): a value of any other type — a named type of a builtin kind, a
// driver.Valuer, a pgx encoder (pgtype.TextValuer, …), a fmt.Stringer — is refused, since
// the driver may send text of its own making for it (pgx calls a Valuer or its own
// encoder interfaces whatever the value's kind), which the wrapper cannot say.
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
	case int:
		return strconv.FormatInt(int64(x), 10), nil
	case int8:
		return strconv.FormatInt(int64(x), 10), nil
	case int16:
		return strconv.FormatInt(int64(x), 10), nil
	case int32:
		return strconv.FormatInt(int64(x), 10), nil
	case int64:
		return strconv.FormatInt(x, 10), nil
	case uint:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint8:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint16:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint32:
		return strconv.FormatUint(uint64(x), 10), nil
	case uint64:
		return strconv.FormatUint(x, 10), nil
	case float32:
		return strconv.FormatFloat(float64(x), 'g', -1, 32), nil
	case float64:
		return strconv.FormatFloat(x, 'g', -1, 64), nil
	}
	return "", &UnsupportedError{Reason: fmt.Sprintf("a bound argument of type %T where the server may read it as statement text (EXECUTE IMMEDIATE ?, PREPARE … FROM ?, DO $1): the wrapper reads only a string, []byte, a builtin number, bool, time.Time or nil there, not a named type, a driver.Valuer or a driver's encoder, whose text the driver makes; bind a string", v)}
}
