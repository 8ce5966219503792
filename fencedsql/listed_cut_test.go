package fencedsql_test

import (
	"errors"
	"net"
	"syscall"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The pool-open check that a listed table exists, cut by a lost connection, is a
// *CheckCutError — not ErrSchema, not a table "that does not exist yet" under
// fenced_allow=ddl, not logged and passed with the schema check off — and the next
// statement asks again (red-team rt44f F4 leftover).
func TestListedCheckCutIsCheckCutError(t *testing.T) {
	cut := &net.OpError{Op: "read", Net: "tcp", Err: syscall.ECONNRESET}
	for _, dc := range mockDialects {
		for _, mode := range []struct {
			name string
			opts []fencedsql.Option
		}{
			{"check on", []fencedsql.Option{fencedsql.WithSchemaCheck(true)}},
			{"check off", nil},
			{"ddl allowed", []fencedsql.Option{fencedsql.WithSchemaCheck(true), fencedsql.WithDDL(true)}},
		} {
			t.Run(dc.name+"/"+mode.name, func(t *testing.T) {
				db, mock := newMockDB(t, dc.d, mode.opts...)
				expectRecords(mock, dc.d)
				expectDescendants(mock, dc.d, "accounts")
				expectCatalogViews(mock, dc.d)
				q, _ := dc.d.ColumnsQuery(dialect.TableName{Name: "x"})
				mock.ExpectQuery(q).WillReturnError(cut)
				_, err := db.ExecContext(withTok(7), "UPDATE accounts SET x = 1")
				var ce *fencedsql.CheckCutError
				if !errors.As(err, &ce) || errors.Is(err, fencedsql.ErrSchema) || !errors.Is(err, syscall.ECONNRESET) {
					t.Fatalf("err = %v (%T), want a *CheckCutError wrapping the cut, not ErrSchema", err, err)
				}
				if ce.Table != "accounts" {
					t.Errorf("CheckCutError.Table = %q, want accounts", ce.Table)
				}
				if o := fencedsql.CommitOutcome(err); o != fencedsql.NotCommitted {
					t.Errorf("CommitOutcome = %v, want NotCommitted", o)
				}
				// The pool's set-up was not finished: the next statement runs it again.
				expectRecords(mock, dc.d)
				expectDescendants(mock, dc.d, "accounts")
				expectCatalogViews(mock, dc.d)
				mock.ExpectQuery(q).WillReturnError(cut)
				if _, err := db.ExecContext(withTok(7), "UPDATE accounts SET x = 1"); !errors.As(err, &ce) {
					t.Fatalf("second statement: %v, want the set-up asked again", err)
				}
				mockMet(t, mock)
			})
		}
	}
}
