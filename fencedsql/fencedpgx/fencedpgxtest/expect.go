// Expectations of the test double: what the code under test is expected to send, matched in order.

package fencedpgxtest

import (
	"errors"
	"fmt"
	"reflect"
	"strings"

	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
)

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
	if isFirstUse(kind, sql) && (e == nil || e.kind != kind || strings.TrimSpace(e.sql) != strings.TrimSpace(sql)) {
		return nil, &errFirstUse{sql: sql}
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
