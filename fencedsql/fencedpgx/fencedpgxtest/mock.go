package fencedpgxtest

import (
	"context"
	"fmt"
	"reflect"
	"strings"
	"sync"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
)

// DB is a pgx test double in the style of pgxmock: it answers Exec, Query, QueryRow,
// BeginTx, Commit, Rollback, Prepare, SendBatch and CopyFrom from expectations matched in
// order, with the exact SQL (compared after trimming spaces) and exact arguments
// (integers of any type compare by value). It implements fencedpgx.DB, and its
// transactions implement pgx.Tx.
type DB struct {
	mu  sync.Mutex
	exp []*Expectation
	err []string // unexpected calls
}

// NewDB returns an empty mock.
func NewDB() *DB { return &DB{} }

// Exec implements fencedpgx.DB.
func (m *DB) Exec(_ context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	e, err := m.next(KindExec, sql, args)
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	if e.err != nil {
		return pgconn.CommandTag{}, e.err
	}
	return e.tag, nil
}

// Query implements fencedpgx.DB.
func (m *DB) Query(_ context.Context, sql string, args ...any) (pgx.Rows, error) {
	e, err := m.next(KindQuery, sql, args)
	if err != nil {
		return &Rows{err: err}, err
	}
	if e.err != nil {
		return &Rows{err: e.err}, e.err
	}
	return &Rows{cols: e.cols, rows: e.rows, i: -1}, nil
}

// QueryRow runs Query and returns its first row.
func (m *DB) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	rows, _ := m.Query(ctx, sql, args...)
	return mockRow{rows}
}

// BeginTx implements fencedpgx.DB.
func (m *DB) BeginTx(context.Context, pgx.TxOptions) (pgx.Tx, error) {
	e, err := m.next(KindBegin, "", nil)
	if err != nil {
		return nil, err
	}
	if e.err != nil {
		return nil, e.err
	}
	return &Tx{m: m}, nil
}

// Begin is BeginTx with default options.
func (m *DB) Begin(ctx context.Context) (pgx.Tx, error) { return m.BeginTx(ctx, pgx.TxOptions{}) }

// Prepare answers an expected Prepare with a description of sql's $n parameters.
func (m *DB) Prepare(_ context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	e, err := m.next(KindPrepare, sql, nil)
	if err != nil {
		return nil, err
	}
	if e.name != name {
		err := fmt.Errorf("fencedpgxtest: Prepare name %q, expected %q", name, e.name)
		m.mu.Lock()
		m.err = append(m.err, err.Error())
		m.mu.Unlock()
		return nil, err
	}
	if e.err != nil {
		return nil, e.err
	}
	sd := &pgconn.StatementDescription{Name: name, SQL: sql}
	for i := 1; strings.Contains(sql, fmt.Sprintf("$%d", i)); i++ {
		sd.ParamOIDs = append(sd.ParamOIDs, pgtype.Int8OID)
	}
	return sd, nil
}

// CopyFrom implements fencedpgx.DB.
func (m *DB) CopyFrom(_ context.Context, table pgx.Identifier, _ []string, src pgx.CopyFromSource) (int64, error) {
	e, err := m.next(KindCopyFrom, "", nil)
	if err != nil {
		return 0, err
	}
	if !reflect.DeepEqual(e.table, table) {
		return 0, fmt.Errorf("fencedpgxtest: CopyFrom into %v, expected %v", table, e.table)
	}
	for src.Next() {
	}
	return e.n, e.err
}

// SendBatch implements fencedpgx.DB: the batch must match the expectation's items in
// number, SQL and arguments.
func (m *DB) SendBatch(_ context.Context, b *pgx.Batch) pgx.BatchResults {
	e, err := m.next(KindBatch, "", nil)
	if err != nil {
		return &batchResults{err: err}
	}
	if len(e.items) != len(b.QueuedQueries) {
		return &batchResults{err: m.fail(fmt.Errorf("fencedpgxtest: batch of %d statements, expected %d", len(b.QueuedQueries), len(e.items)))}
	}
	for i, qq := range b.QueuedQueries {
		x := e.items[i]
		if strings.TrimSpace(x.sql) != strings.TrimSpace(qq.SQL) || (!x.anyArgs && !argsEqual(x.args, qq.Arguments)) {
			return &batchResults{err: m.fail(fmt.Errorf("fencedpgxtest: batch statement %d %q %v does not match %s", i, qq.SQL, qq.Arguments, x))}
		}
	}
	return &batchResults{items: e.items}
}

func (m *DB) fail(err error) error {
	m.mu.Lock()
	m.err = append(m.err, err.Error())
	m.mu.Unlock()
	return err
}
