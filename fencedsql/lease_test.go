package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// A lease the client knows is lost writes nothing (G13): every way a statement can
// reach the database — autocommit Exec and Query, prepared statements, BeginTx, and
// every statement inside a transaction, guarded writes, claimed reads, plain reads and
// writes of unguarded tables — fails with lockclient.ErrLeaseLost before anything is
// sent (the mock expects nothing), however the loss shows (Lost closed, Err set, both).
func TestLostLeaseSendsNothing(t *testing.T) {
	statements := []struct {
		name, sql string
		args      []any
	}{
		{"guarded UPDATE", `UPDATE accounts SET x = $1 WHERE id = $2`, []any{1, 2}},
		{"guarded INSERT", `INSERT INTO accounts (id, x) VALUES ($1, $2)`, []any{1, 2}},
		{"guarded DELETE", `DELETE FROM accounts WHERE id = $1`, []any{1}},
		{"claimed read", `SELECT x FROM accounts WHERE id = $1 FOR UPDATE`, []any{1}},
		{"plain read", `SELECT x FROM accounts WHERE id = $1`, []any{1}},
		{"unguarded write", `UPDATE other SET x = $1`, []any{1}},
	}
	losses := map[string]func(*fakeLease){
		"Lost closed":     func(l *fakeLease) { l.lose(nil) },
		"Err set":         func(l *fakeLease) { e := fmt.Errorf("%w: expired", lockclient.ErrLeaseLost); l.err.Store(&e) },
		"Err not wrapped": func(l *fakeLease) { l.lose(errors.New("watchdog gave up")) },
	}
	paths := map[string]func(t *testing.T, db *sql.DB, lease *fakeLease, lose func(*fakeLease), q string, args []any) error{
		"autocommit Exec": func(t *testing.T, db *sql.DB, lease *fakeLease, lose func(*fakeLease), q string, args []any) error {
			lose(lease)
			_, err := db.ExecContext(fencedsql.WithLease(context.Background(), lease), q, args...)
			return err
		},
		"autocommit Query": func(t *testing.T, db *sql.DB, lease *fakeLease, lose func(*fakeLease), q string, args []any) error {
			lose(lease)
			rows, err := db.QueryContext(fencedsql.WithLease(context.Background(), lease), q, args...)
			if err == nil {
				rows.Close()
			}
			return err
		},
		"BeginTx": func(t *testing.T, db *sql.DB, lease *fakeLease, lose func(*fakeLease), q string, args []any) error {
			lose(lease)
			tx, err := db.BeginTx(fencedsql.WithLease(context.Background(), lease), nil)
			if err == nil {
				tx.Rollback()
			}
			return err
		},
		"in a transaction": func(t *testing.T, db *sql.DB, lease *fakeLease, lose func(*fakeLease), q string, args []any) error {
			ctx := fencedsql.WithLease(context.Background(), lease)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			lose(lease)
			// The statement's own context carries no lease: the transaction's counts.
			_, err = tx.ExecContext(context.Background(), q, args...)
			return err
		},
		"prepared in a transaction": func(t *testing.T, db *sql.DB, lease *fakeLease, lose func(*fakeLease), q string, args []any) error {
			ctx := fencedsql.WithLease(context.Background(), lease)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback()
			st, err := tx.PrepareContext(ctx, q)
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			lose(lease)
			_, err = st.ExecContext(context.Background(), args...)
			return err
		},
	}
	for pname, path := range paths {
		for lname, lose := range losses {
			for _, s := range statements {
				t.Run(pname+"/"+lname+"/"+s.name, func(t *testing.T) {
					db, mock := newMockDB(t, postgres.Dialect)
					if pname == "prepared in a transaction" {
						db, mock = newRegexpMockDB(t)
					}
					if pname == "in a transaction" || pname == "prepared in a transaction" {
						mock.ExpectBegin()
						if pname == "prepared in a transaction" {
							mock.ExpectPrepare(".*")
							if s.name == "guarded DELETE" {
								mock.ExpectPrepare(".*") // two statements: the fencing UPDATE, then the DELETE
							}
							// A claimed read prepares the caller's SELECT only: the claim's form
							// (one statement or the fencing UPDATE) is prepared on first use.
						}
						mock.ExpectRollback()
					}
					err := path(t, db, newFakeLease(7), lose, s.sql, s.args)
					if !errors.Is(err, lockclient.ErrLeaseLost) {
						t.Fatalf("err = %v, want ErrLeaseLost", err)
					}
					if errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrNoToken) {
						t.Errorf("err = %v: a lost lease is neither fenced nor tokenless", err)
					}
					mockMet(t, mock)
				})
			}
		}
	}
}

// newRegexpMockDB is newMockDB (PostgreSQL) with sqlmock's regexp matcher, for
// statements whose rewritten text does not matter to the test.
func newRegexpMockDB(t *testing.T) (*sql.DB, sqlmock.Sqlmock) {
	t.Helper()
	dsn := fmt.Sprintf("fencedsql-mock-%s-%d", t.Name(), mockSeq.Add(1))
	mdb, mock, err := sqlmock.NewWithDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(mdb.Driver(), dsn), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"), fencedsql.WithSchemaCheck(false))
	db.SetMaxOpenConns(1)
	t.Cleanup(func() {
		db.Close()
		mdb.Close()
	})
	return db, mock
}

// A lease held still works on every path; and a lease of a real lock client that was
// released, or whose client was closed, is refused like one lost.
func TestLostLeaseRealClient(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	locks := lockclient.New(memlock.New(), lockclient.WithTTL(5*time.Second))
	lease, err := locks.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	db, mock := newMockDB(t, postgres.Dialect)
	mock.ExpectExec(`UPDATE accounts SET x = $1, "version" = "version" + 1, "fence_token" = CASE WHEN "fence_token" <= $2 THEN $2::bigint ELSE NULL END`).
		WithArgs(int64(1), int64(lease.Token())).WillReturnResult(sqlmock.NewResult(0, 1))
	lctx := fencedsql.WithLease(ctx, lease)
	if _, err := db.ExecContext(lctx, `UPDATE accounts SET x = $1`, 1); err != nil {
		t.Fatalf("held lease: %v", err)
	}
	if err := locks.Close(ctx); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(lctx, `UPDATE accounts SET x = $1`, 2); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("after Client.Close: err = %v, want ErrLeaseLost", err)
	}
	if _, err := db.BeginTx(lctx, nil); !errors.Is(err, lockclient.ErrLeaseLost) {
		t.Fatalf("BeginTx after Client.Close: err = %v, want ErrLeaseLost", err)
	}
	mockMet(t, mock)
}

// A transaction begun without a lease whose statements carry one (the lease in each
// statement's context) is held to that lease as if it had been begun with it: once the
// lease is lost, Commit rolls back (ErrLeaseLost, nothing committed) — whether the
// loss shows at a later statement, whose refusal the caller ignores, or only at Commit.
// While the lease is held the transaction commits.
func TestStatementLeaseJoinsTransaction(t *testing.T) {
	const upd = `UPDATE accounts SET x = $1 WHERE id = $2`
	for _, c := range []struct {
		name         string
		lose         bool
		secondWrite  bool
		wantCommitOK bool
	}{
		{"held", false, true, true},
		{"lost, then a refused statement ignored", true, true, false},
		{"lost before Commit", true, false, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			db, mock := newRegexpMockDB(t)
			mock.ExpectBegin()
			mock.ExpectExec(".*").WillReturnResult(sqlmock.NewResult(0, 1))
			if !c.lose {
				mock.ExpectExec(".*").WillReturnResult(sqlmock.NewResult(0, 1))
				mock.ExpectCommit()
			} else {
				mock.ExpectRollback()
			}
			lease := newFakeLease(7)
			tx, err := db.BeginTx(context.Background(), nil)
			if err != nil {
				t.Fatal(err)
			}
			lctx := fencedsql.WithLease(context.Background(), lease)
			if _, err := tx.ExecContext(lctx, upd, 90, 1); err != nil {
				t.Fatal(err)
			}
			if c.lose {
				lease.lose(nil)
			}
			if c.secondWrite {
				_, err := tx.ExecContext(lctx, upd, 10, 2)
				if c.lose != errors.Is(err, lockclient.ErrLeaseLost) {
					t.Fatalf("second statement: err = %v (lease lost: %v)", err, c.lose)
				}
			}
			err = tx.Commit()
			if c.wantCommitOK != (err == nil) {
				t.Fatalf("Commit = %v, want success %v", err, c.wantCommitOK)
			}
			if !c.wantCommitOK && (!errors.Is(err, lockclient.ErrLeaseLost) || !errors.Is(err, fencedsql.ErrNotCommitted)) {
				t.Fatalf("Commit = %v, want ErrLeaseLost and ErrNotCommitted", err)
			}
			mockMet(t, mock)
		})
	}
}
