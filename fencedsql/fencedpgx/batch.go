package fencedpgx

import (
	"context"
	"errors"
	"reflect"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/internal/adapter"
)

// sendBatch fences every queued statement (adapter.Conn.Batch: the same plan, binding
// and checks as a statement sent alone) and sends the rewritten statements as one pgx
// batch, which PostgreSQL runs as one implicit transaction (or inside the caller's):
// a fenced DELETE's two statements commit together, and a statement that fails —
// ErrFenced among them — fails the whole batch. If any statement is refused
// (ErrNoToken, ErrUnsupported, a session or schema check) nothing is sent and every
// result reports the refusal. Since every statement is checked before the batch is
// sent, a statement that may change the session or name resolution (a SET, …) is
// refused unless it is the batch's last: the server would read the statements after
// it under the new setting. done (if not nil) runs when the results are closed.
func (l *link) sendBatch(ctx context.Context, b *pgx.Batch, stmts *stmtMap, done func()) pgx.BatchResults {
	refuse := func(err error) pgx.BatchResults {
		if done != nil {
			done()
		}
		return &batchResults{err: err, closed: true}
	}
	if b == nil || len(b.QueuedQueries) == 0 {
		return refuse(errors.New("fencedpgx: empty batch"))
	}
	if beginsTx(b) {
		return refuse(&fencedsql.UnsupportedError{Reason: "a batch that begins its own transaction (pgx.Batch.BeginTx): begin it with Begin or BeginTx, which bind it to the fencing token, and send the batch on the transaction"})
	}
	out := &pgx.Batch{QueuedQueries: make([]*pgx.QueuedQuery, 0, len(b.QueuedQueries))}
	items := make([]batchItem, len(b.QueuedQueries))
	l.n.opts = l.n.opts[:0]
	for i, qq := range b.QueuedQueries {
		sql, args := qq.SQL, qq.Arguments
		if len(args) > 0 {
			if rw, ok := args[0].(pgx.QueryRewriter); ok {
				var err error
				if sql, args, err = rw.RewriteQuery(ctx, l.n.pc, sql, args[1:]); err != nil {
					return refuse(err)
				}
			}
		}
		if p := stmts.get(sql); p != nil {
			sql = p.sql // a statement prepared through fencedpgx, queued by name
		}
		fenced, err := l.c.Batch(ctx, sql, named(args), i > 0, i < len(b.QueuedQueries)-1)
		if err != nil {
			return refuse(err)
		}
		for _, st := range fenced.Steps() {
			out.QueuedQueries = append(out.QueuedQueries, &pgx.QueuedQuery{SQL: st.SQL, Arguments: values(st.Args)})
		}
		items[i] = batchItem{qq: qq, fenced: fenced}
	}
	return &batchResults{inner: l.n.q().SendBatch(ctx, out), items: items, done: done, l: l}
}

// beginsTx reports a batch built with pgx.Batch.BeginTx (its options are unexported).
func beginsTx(b *pgx.Batch) bool {
	f := reflect.ValueOf(b).Elem().FieldByName("txOptions")
	return f.IsValid() && f.Kind() == reflect.Pointer && !f.IsNil()
}

type batchItem struct {
	qq     *pgx.QueuedQuery
	fenced adapter.Batched
}

// batchResults reads the results of the rewritten batch as the caller's: one result
// per queued statement (the fencing UPDATE of a DELETE is read and checked on the
// way), errors mapped. After the first error every later result reports it, as pgx's
// do (the server skipped the rest of the batch, and nothing of it committed).
type batchResults struct {
	inner  pgx.BatchResults
	items  []batchItem
	idx    int
	err    error // the first error (or the refusal)
	closed bool
	done   func()
	l      *link // the link the batch runs on (its rows' Conn re-arms it); nil when refused
}

var _ pgx.BatchResults = (*batchResults)(nil)

var errNoMoreResults = errors.New("no more results in batch")

func (br *batchResults) next() (batchItem, error) {
	if br.err != nil {
		return batchItem{}, br.err
	}
	if br.closed {
		return batchItem{}, errors.New("batch already closed")
	}
	if br.idx >= len(br.items) {
		return batchItem{}, errNoMoreResults
	}
	it := br.items[br.idx]
	br.idx++
	return it, nil
}

func (br *batchResults) fail(err error) error {
	if br.err == nil {
		br.err = err
	}
	return err
}

// pre reads the results of the steps before the last (the fencing UPDATE).
func (br *batchResults) pre(it batchItem) error {
	steps := len(it.fenced.Steps())
	for i := 0; i < steps-1; i++ {
		tag, err := br.inner.Exec()
		if err = it.fenced.Done(i, tagCount(tag), err); err != nil {
			return br.fail(err)
		}
	}
	return nil
}

// Exec reads the next statement's result.
func (br *batchResults) Exec() (pgconn.CommandTag, error) {
	it, err := br.next()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if err := br.pre(it); err != nil {
		return pgconn.CommandTag{}, err
	}
	tag, err := br.inner.Exec()
	if err = it.fenced.Done(len(it.fenced.Steps())-1, tagCount(tag), err); err != nil {
		return pgconn.CommandTag{}, br.fail(err)
	}
	return tag, nil
}

// Query reads the next statement's rows.
func (br *batchResults) Query() (pgx.Rows, error) {
	it, err := br.next()
	if err != nil {
		return &errRows{err: err}, err
	}
	if err := br.pre(it); err != nil {
		return &errRows{err: err}, err
	}
	rows, err := br.inner.Query()
	if err != nil {
		if rows != nil {
			rows.Close()
		}
		err = br.fail(it.fenced.Done(len(it.fenced.Steps())-1, -1, err))
		return &errRows{err: err}, err
	}
	return &Rows{Rows: rows, fin: &batchRowsFin{br: br, it: it, rows: rows}, l: br.l}, nil
}

// QueryRow reads the next statement's row.
func (br *batchResults) QueryRow() pgx.Row {
	rows, _ := br.Query()
	return &row{rows: rows}
}

// Tx returns nil: a batch that begins a transaction is refused (use Begin).
func (br *batchResults) Tx() pgx.Tx { return nil }

// Close reads the remaining results, running the callbacks queued with them
// (QueuedQuery.Exec, Query, QueryRow), and returns the first error.
func (br *batchResults) Close() error {
	if br.closed {
		return br.err
	}
	for br.err == nil && br.idx < len(br.items) {
		if fn := br.items[br.idx].qq.Fn; fn != nil {
			if err := fn(br); err != nil {
				br.fail(err)
			}
		} else {
			_, _ = br.Exec()
		}
	}
	br.closed = true
	if err := br.inner.Close(); err != nil && br.err == nil {
		br.err = err // an error no result reported (the batch could not be sent)
	}
	if br.done != nil {
		br.done()
	}
	return br.err
}

// batchRowsFin finishes the rows of a batch item: its last step's outcome.
type batchRowsFin struct {
	br   *batchResults
	it   batchItem
	rows pgx.Rows
}

func (f *batchRowsFin) MapErr(err error) error {
	return f.it.fenced.Done(len(f.it.fenced.Steps())-1, -1, err)
}

func (f *batchRowsFin) Close() error {
	f.rows.Close()
	err := f.it.fenced.Done(len(f.it.fenced.Steps())-1, tagCount(f.rows.CommandTag()), f.rows.Err())
	if err != nil {
		f.br.fail(err)
	}
	return err
}

// tagCount is the number of rows a command tag reports (written, or returned by a
// SELECT), -1 when the tag carries none (an empty tag, a test double's bare "SELECT").
func tagCount(tag pgconn.CommandTag) int64 {
	t := tag.String()
	if t == "" || t[len(t)-1] < '0' || t[len(t)-1] > '9' {
		return -1
	}
	return tag.RowsAffected()
}
