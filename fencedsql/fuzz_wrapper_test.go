// The fuzz invariant through a wrapped connection, over a driver that records what it is sent.

package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"fmt"
	"io"
	"slices"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

func (ft *fzTarget) checkWrapper(t *testing.T, src string, p *plan.Plan) {
	t.Helper()
	const tok = 77
	ctx := WithToken(context.Background(), tok)
	n := max(p.NUser, 0) // -1: a refused claim, whose placeholders were not counted
	if p.Kind == plan.KindPass {
		n = 2
	}
	args := make([]driver.NamedValue, n)
	for i := range args {
		args[i] = driver.NamedValue{Ordinal: i + 1, Value: int64(1000 + i)}
	}
	ft.raw.calls = ft.raw.calls[:0]
	_, err := ft.conn.ExecContext(ctx, src, args)
	if p.Kind == plan.KindClaim {
		// Outside a transaction a locking read with a token is refused (its claim and
		// its read must commit together), claimable or not.
		if !errors.Is(err, ErrUnsupported) || len(ft.raw.calls) != 0 {
			t.Errorf("%s: wrapped ExecContext(%q) with a token outside a transaction = %v, sent %v; want a refusal, nothing sent", ft.d.name, src, err, ft.raw.calls)
		}
		return
	}
	if p.TxOnly != nil {
		// A savepoint as text is refused outside a transaction the wrapper began.
		if !errors.Is(err, ErrUnsupported) || len(ft.raw.calls) != 0 {
			t.Errorf("%s: wrapped ExecContext(%q) (a savepoint) outside a transaction = %v, sent %v; want a refusal, nothing sent", ft.d.name, src, err, ft.raw.calls)
		}
		return
	}
	if p.TwoStepErr != nil {
		// WithSchemaCheck(false): a DELETE runs as two statements, which would select
		// its rows twice: refused, nothing sent.
		if !errors.Is(err, ErrUnsupported) || len(ft.raw.calls) != 0 {
			t.Errorf("%s: wrapped ExecContext(%q) (a two-statement DELETE selecting twice) = %v, sent %v; want a refusal, nothing sent", ft.d.name, src, err, ft.raw.calls)
		}
		return
	}

	if err != nil {
		t.Errorf("%s: wrapped ExecContext(%q): %v", ft.d.name, src, err)
		return
	}
	calls := ft.raw.calls
	if p.Kind == plan.KindPass {
		if len(calls) != 1 || calls[0].sql != src {
			t.Errorf("%s: pass-through of %q sent %v, want the input byte-identical", ft.d.name, src, calls)
			return
		}
		if !slices.Equal(calls[0].args, []any{int64(1000), int64(1001)}) {
			t.Errorf("%s: pass-through of %q changed the arguments: %v", ft.d.name, src, calls[0].args)
		}
		return
	}
	if p.Stamped != nil {
		p = p.Stamped // WithSchemaCheck(false): the wrapper does not ask whether the guard is installed
	}
	want := []fzCall{{sql: p.SQL, args: fzBound(p, tok)}}
	if p.Pre != nil {
		want = []fzCall{{sql: "BEGIN"}, {sql: p.Pre.SQL, args: fzBound(p.Pre, tok)}, want[0], {sql: "COMMIT"}}
	}
	if !slices.EqualFunc(calls, want, func(a, b fzCall) bool { return a.sql == b.sql && slices.Equal(a.args, b.args) }) {
		t.Errorf("%s: %q sent\n%v\nwant\n%v", ft.d.name, src, calls, want)
	}
}

func fzBound(p *plan.Plan, tok uint64) []any {
	out := make([]any, len(p.Args))
	for i, r := range p.Args {
		switch r {
		case plan.ArgToken:
			out[i] = int64(tok)
		case plan.ArgVersion:
			out[i] = int64(0)
		default:
			out[i] = int64(1000 + int(r))
		}
	}
	return out
}

// ---- a recording driver connection ----

type fzCall struct {
	sql  string
	args []any
}

func (c fzCall) String() string { return fmt.Sprintf("%q %v", c.sql, c.args) }

type fzRawConn struct{ calls []fzCall }

var (
	_ driver.ExecerContext  = (*fzRawConn)(nil)
	_ driver.QueryerContext = (*fzRawConn)(nil)
	_ driver.ConnBeginTx    = (*fzRawConn)(nil)
)

func (c *fzRawConn) record(sql string, args []driver.NamedValue) {
	call := fzCall{sql: sql, args: []any{}}
	for _, a := range args {
		call.args = append(call.args, a.Value)
	}
	c.calls = append(c.calls, call)
}

func (c *fzRawConn) Prepare(string) (driver.Stmt, error) {
	return nil, errors.New("fzRawConn: Prepare not supported")
}
func (c *fzRawConn) Close() error { return nil }
func (c *fzRawConn) Begin() (driver.Tx, error) {
	return c.BeginTx(context.Background(), driver.TxOptions{})
}
func (c *fzRawConn) BeginTx(context.Context, driver.TxOptions) (driver.Tx, error) {
	c.record("BEGIN", nil)
	return fzTx{c}, nil
}
func (c *fzRawConn) ExecContext(_ context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.record(q, args)
	return driver.RowsAffected(1), nil
}

// QueryContext answers with one row, as ExecContext affects one: the rows of the
// DELETE … RETURNING the wrapper queries to count them.
func (c *fzRawConn) QueryContext(_ context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.record(q, args)
	return &fzRows{n: 1}, nil
}

type fzTx struct{ c *fzRawConn }

func (t fzTx) Commit() error   { t.c.record("COMMIT", nil); return nil }
func (t fzTx) Rollback() error { t.c.record("ROLLBACK", nil); return nil }

type fzRows struct{ n int }

func (*fzRows) Columns() []string { return []string{"c"} }
func (*fzRows) Close() error      { return nil }
func (r *fzRows) Next(dest []driver.Value) error {
	if r.n == 0 {
		return io.EOF
	}
	r.n--
	dest[0] = int64(1)
	return nil
}
