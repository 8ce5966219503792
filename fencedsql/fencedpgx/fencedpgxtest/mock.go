package fencedpgxtest

import (
	"context"
	"database/sql"
	"errors"
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

// Kind is the kind of call an Expectation matches.
type Kind string

// The kinds of expectations.
const (
	KindBegin    Kind = "Begin"
	KindCommit   Kind = "Commit"
	KindRollback Kind = "Rollback"
	KindExec     Kind = "Exec"
	KindQuery    Kind = "Query"
	KindPrepare  Kind = "Prepare"
	KindBatch    Kind = "Batch"
	KindCopyFrom Kind = "CopyFrom"
)

// Expectation is one expected call and its answer.
type Expectation struct {
	kind    Kind
	sql     string
	name    string // Prepare
	args    []any
	anyArgs bool
	tag     pgconn.CommandTag
	cols    []string
	rows    [][]any
	err     error
	items   []*Expectation // Batch
	table   pgx.Identifier // CopyFrom
	n       int64
	met     bool
}

// WithArgs sets the exact arguments expected (Exec, Query).
func (e *Expectation) WithArgs(args ...any) *Expectation {
	e.args, e.anyArgs = args, false
	return e
}

// WillReturnResult answers an Exec with tag (default: "UPDATE 1").
func (e *Expectation) WillReturnResult(tag pgconn.CommandTag) *Expectation {
	e.tag = tag
	return e
}

// WillReturnRows answers a Query with rows of columns cols.
func (e *Expectation) WillReturnRows(cols []string, rows ...[]any) *Expectation {
	e.cols, e.rows = cols, rows
	return e
}

// WillReturnError answers with err.
func (e *Expectation) WillReturnError(err error) *Expectation {
	e.err = err
	return e
}

// ExpectExec queues an Exec item of a batch expectation.
func (e *Expectation) ExpectExec(sql string) *Expectation {
	x := &Expectation{kind: KindExec, sql: sql, anyArgs: true, tag: pgconn.NewCommandTag("UPDATE 1")}
	e.items = append(e.items, x)
	return x
}

// ExpectQuery queues a Query item of a batch expectation.
func (e *Expectation) ExpectQuery(sql string) *Expectation {
	x := &Expectation{kind: KindQuery, sql: sql, anyArgs: true}
	e.items = append(e.items, x)
	return x
}

func (e *Expectation) String() string {
	switch e.kind {
	case KindExec, KindQuery:
		return fmt.Sprintf("%s %q %v", e.kind, e.sql, e.args)
	case KindPrepare:
		return fmt.Sprintf("Prepare %q %q", e.name, e.sql)
	}
	return string(e.kind)
}

func (m *DB) add(e *Expectation) *Expectation {
	m.mu.Lock()
	defer m.mu.Unlock()
	m.exp = append(m.exp, e)
	return e
}

// ExpectBegin expects BeginTx (any options).
func (m *DB) ExpectBegin() *Expectation { return m.add(&Expectation{kind: KindBegin}) }

// ExpectCommit expects the transaction's Commit.
func (m *DB) ExpectCommit() *Expectation { return m.add(&Expectation{kind: KindCommit}) }

// ExpectRollback expects the transaction's Rollback.
func (m *DB) ExpectRollback() *Expectation { return m.add(&Expectation{kind: KindRollback}) }

// ExpectExec expects Exec of sql (any arguments until WithArgs).
func (m *DB) ExpectExec(sql string) *Expectation {
	return m.add(&Expectation{kind: KindExec, sql: sql, anyArgs: true, tag: pgconn.NewCommandTag("UPDATE 1")})
}

// ExpectQuery expects Query (or QueryRow) of sql.
func (m *DB) ExpectQuery(sql string) *Expectation {
	return m.add(&Expectation{kind: KindQuery, sql: sql, anyArgs: true})
}

// ExpectPrepare expects Prepare(name, sql).
func (m *DB) ExpectPrepare(name, sql string) *Expectation {
	return m.add(&Expectation{kind: KindPrepare, name: name, sql: sql})
}

// ExpectBatch expects SendBatch; queue its statements with the result's ExpectExec
// and ExpectQuery.
func (m *DB) ExpectBatch() *Expectation { return m.add(&Expectation{kind: KindBatch}) }

// ExpectCopyFrom expects CopyFrom into table, answering n rows.
func (m *DB) ExpectCopyFrom(table pgx.Identifier, n int64) *Expectation {
	return m.add(&Expectation{kind: KindCopyFrom, table: table, n: n})
}

// ExpectationsWereMet reports unmet expectations and unexpected calls.
func (m *DB) ExpectationsWereMet() error {
	m.mu.Lock()
	defer m.mu.Unlock()
	var errs []string
	errs = append(errs, m.err...)
	for _, e := range m.exp {
		if !e.met {
			errs = append(errs, "not met: "+e.String())
		}
	}
	if len(errs) > 0 {
		return errors.New("fencedpgxtest: " + strings.Join(errs, "; "))
	}
	return nil
}

// next matches the next unmet expectation against a call.
func (m *DB) next(kind Kind, sql string, args []any) (*Expectation, error) {
	m.mu.Lock()
	defer m.mu.Unlock()
	var e *Expectation
	for _, x := range m.exp {
		if !x.met {
			e = x
			break
		}
	}
	call := fmt.Sprintf("%s %q %v", kind, sql, args)
	if kind == KindBegin || kind == KindCommit || kind == KindRollback {
		call = string(kind)
	}
	if e == nil {
		err := fmt.Errorf("fencedpgxtest: unexpected call %s: all expectations were met", call)
		m.err = append(m.err, err.Error())
		return nil, err
	}
	if e.kind != kind || (sql != "" && strings.TrimSpace(e.sql) != strings.TrimSpace(sql)) || (!e.anyArgs && !argsEqual(e.args, args)) {
		err := fmt.Errorf("fencedpgxtest: call %s does not match the next expectation %s", call, e)
		m.err = append(m.err, err.Error())
		return nil, err
	}
	e.met = true
	return e, nil
}

func argsEqual(want, got []any) bool {
	if len(want) != len(got) {
		return false
	}
	for i := range want {
		if !valueEqual(want[i], got[i]) {
			return false
		}
	}
	return true
}

func valueEqual(a, b any) bool {
	if ai, ok := asInt(a); ok {
		bi, ok := asInt(b)
		return ok && ai == bi
	}
	return reflect.DeepEqual(a, b)
}

func asInt(v any) (int64, bool) {
	r := reflect.ValueOf(v)
	switch r.Kind() {
	case reflect.Int, reflect.Int8, reflect.Int16, reflect.Int32, reflect.Int64:
		return r.Int(), true
	case reflect.Uint, reflect.Uint8, reflect.Uint16, reflect.Uint32, reflect.Uint64:
		return int64(r.Uint()), true //nolint:gosec // test values
	}
	return 0, false
}

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

// Tx is a transaction of the mock (pgx.Tx). Begin makes a savepoint, expected as
// another Begin.
type Tx struct {
	m      *DB
	closed bool
}

var _ pgx.Tx = (*Tx)(nil)

func (t *Tx) Begin(ctx context.Context) (pgx.Tx, error) { return t.m.BeginTx(ctx, pgx.TxOptions{}) }
func (t *Tx) Commit(context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	e, err := t.m.next(KindCommit, "", nil)
	if err != nil {
		return err
	}
	return e.err
}
func (t *Tx) Rollback(context.Context) error {
	if t.closed {
		return pgx.ErrTxClosed
	}
	t.closed = true
	e, err := t.m.next(KindRollback, "", nil)
	if err != nil {
		return err
	}
	return e.err
}
func (t *Tx) CopyFrom(ctx context.Context, table pgx.Identifier, cols []string, src pgx.CopyFromSource) (int64, error) {
	return t.m.CopyFrom(ctx, table, cols, src)
}
func (t *Tx) SendBatch(ctx context.Context, b *pgx.Batch) pgx.BatchResults {
	return t.m.SendBatch(ctx, b)
}
func (t *Tx) LargeObjects() pgx.LargeObjects { return pgx.LargeObjects{} }
func (t *Tx) Prepare(ctx context.Context, name, sql string) (*pgconn.StatementDescription, error) {
	return t.m.Prepare(ctx, name, sql)
}
func (t *Tx) Exec(ctx context.Context, sql string, args ...any) (pgconn.CommandTag, error) {
	return t.m.Exec(ctx, sql, args...)
}
func (t *Tx) Query(ctx context.Context, sql string, args ...any) (pgx.Rows, error) {
	return t.m.Query(ctx, sql, args...)
}
func (t *Tx) QueryRow(ctx context.Context, sql string, args ...any) pgx.Row {
	return t.m.QueryRow(ctx, sql, args...)
}
func (t *Tx) Conn() *pgx.Conn { return nil }

// batchResults answers a batch item by item; after the first error every later result
// reports it, as pgx's do.
type batchResults struct {
	items []*Expectation
	i     int
	err   error
}

func (br *batchResults) nextItem() (*Expectation, error) {
	if br.err != nil {
		return nil, br.err
	}
	if br.i >= len(br.items) {
		return nil, errors.New("no more results in batch")
	}
	x := br.items[br.i]
	br.i++
	if x.err != nil {
		br.err = x.err
		return nil, x.err
	}
	return x, nil
}

func (br *batchResults) Exec() (pgconn.CommandTag, error) {
	x, err := br.nextItem()
	if err != nil {
		return pgconn.CommandTag{}, err
	}
	return x.tag, nil
}

func (br *batchResults) Query() (pgx.Rows, error) {
	x, err := br.nextItem()
	if err != nil {
		return &Rows{err: err}, err
	}
	return &Rows{cols: x.cols, rows: x.rows, i: -1}, nil
}

func (br *batchResults) QueryRow() pgx.Row {
	rows, _ := br.Query()
	return mockRow{rows}
}

func (br *batchResults) Close() error {
	for br.err == nil && br.i < len(br.items) {
		_, _ = br.Exec()
	}
	return br.err
}

func (br *batchResults) Tx() pgx.Tx { return nil }

// Rows are a mock query's rows (pgx.Rows). Scan assigns values to pointers of the
// same (or a convertible) type, and to sql.Scanner destinations (pgtype's types).
type Rows struct {
	cols   []string
	rows   [][]any
	i      int
	err    error
	closed bool
}

var _ pgx.Rows = (*Rows)(nil)

func (r *Rows) Close()                        { r.closed = true }
func (r *Rows) Err() error                    { return r.err }
func (r *Rows) CommandTag() pgconn.CommandTag { return pgconn.NewCommandTag("SELECT") }
func (r *Rows) FieldDescriptions() []pgconn.FieldDescription {
	out := make([]pgconn.FieldDescription, len(r.cols))
	for i, c := range r.cols {
		out[i] = pgconn.FieldDescription{Name: c}
	}
	return out
}
func (r *Rows) Next() bool {
	if r.closed || r.err != nil || r.i+1 >= len(r.rows) {
		r.closed = true
		return false
	}
	r.i++
	return true
}
func (r *Rows) Values() ([]any, error) {
	if r.i < 0 || r.i >= len(r.rows) {
		return nil, errors.New("fencedpgxtest: no current row")
	}
	return r.rows[r.i], nil
}
func (r *Rows) RawValues() [][]byte  { return nil }
func (r *Rows) Conn() *pgx.Conn      { return nil }
func (r *Rows) TypeMap() *pgtype.Map { return nil }
func (r *Rows) Scan(dest ...any) error {
	vals, err := r.Values()
	if err != nil {
		return err
	}
	if len(dest) != len(vals) {
		return fmt.Errorf("fencedpgxtest: %d scan destinations for %d columns", len(dest), len(vals))
	}
	for i, d := range dest {
		if s, ok := d.(sql.Scanner); ok {
			if err := s.Scan(vals[i]); err != nil {
				return err
			}
			continue
		}
		dv := reflect.ValueOf(d)
		if dv.Kind() != reflect.Pointer || dv.IsNil() {
			return fmt.Errorf("fencedpgxtest: destination %d is not a pointer", i)
		}
		v := reflect.ValueOf(vals[i])
		switch {
		case !v.IsValid():
			dv.Elem().SetZero()
		case v.Type().AssignableTo(dv.Elem().Type()):
			dv.Elem().Set(v)
		case v.Type().ConvertibleTo(dv.Elem().Type()):
			dv.Elem().Set(v.Convert(dv.Elem().Type()))
		default:
			return fmt.Errorf("fencedpgxtest: cannot scan %T into %T", vals[i], d)
		}
	}
	return nil
}

type mockRow struct{ rows pgx.Rows }

func (r mockRow) Scan(dest ...any) error {
	defer r.rows.Close()
	if err := r.rows.Err(); err != nil {
		return err
	}
	if !r.rows.Next() {
		if err := r.rows.Err(); err != nil {
			return err
		}
		return pgx.ErrNoRows
	}
	return r.rows.Scan(dest...)
}
