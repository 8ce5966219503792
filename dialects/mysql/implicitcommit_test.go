package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// txLease is a lease the test loses at will.
type txLease struct {
	tok  uint64
	once sync.Once
	ch   chan struct{}
}

func newTxLease(tok uint64) *txLease     { return &txLease{tok: tok, ch: make(chan struct{})} }
func (l *txLease) Token() uint64         { return l.tok }
func (l *txLease) Lost() <-chan struct{} { return l.ch }
func (l *txLease) lose()                 { l.once.Do(func() { close(l.ch) }) }
func (l *txLease) Err() error {
	select {
	case <-l.ch:
		return errors.New("lost")
	default:
		return nil
	}
}

// txEnv creates a database with the guarded table accounts (rows 1, 2, 3 at balance 100,
// written with token 1), an unguarded table other (with an index ixo) and the pools:
// raw (the plain driver) and db (fenced, accounts guarded).
func txEnv(t *testing.T, params string) (raw, db *sql.DB, ctx context.Context) {
	t.Helper()
	be := fencetest.MySQL()
	dsn := testdb.MySQL(t)
	raw, err := sql.Open(be.RawName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, q := range []string{
		`CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
		"CREATE TABLE other (id INT PRIMARY KEY, v INT, KEY ixo (v)) ENGINE=InnoDB",
		"INSERT INTO other VALUES (1, 1)",
	} {
		if _, err := raw.Exec(q); err != nil {
			t.Fatal(err)
		}
	}
	dsn = fencetest.WithParam(dsn, "fenced_tables=accounts")
	if params != "" {
		dsn = fencetest.WithParam(dsn, params)
	}
	db, err = sql.Open(be.DriverName, dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { db.Close() })
	c, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	t.Cleanup(cancel)
	for _, id := range []int{1, 2, 3} {
		if _, err := db.ExecContext(fencedsql.WithToken(c, 1), "INSERT INTO accounts (id, balance) VALUES (?, 100)", id); err != nil {
			t.Fatal(err)
		}
	}
	return raw, db, c
}

func balance(t *testing.T, raw *sql.DB, id int) int64 {
	t.Helper()
	var b int64
	if err := raw.QueryRow("SELECT balance FROM accounts WHERE id = ?", id).Scan(&b); err != nil {
		t.Fatal(err)
	}
	return b
}

// TestImplicitCommitRefusedInTx: a statement MySQL/MariaDB runs only after committing
// the open transaction (DDL, ANALYZE/OPTIMIZE/CHECK/REPAIR TABLE, CACHE INDEX, LOAD
// INDEX INTO CACHE, …) is refused inside a fenced transaction with ErrUnsupported and
// nothing sent: the transaction goes on (its later write is still in it), and after its
// lease is lost Commit reports NotCommitted truthfully — nothing of it is committed.
// Outside a transaction the same statements run as before. (FLUSH, RESET, account
// management and replication control are judged by the planner's tests: they touch the
// shared server.)
func TestImplicitCommitRefusedInTx(t *testing.T) {
	stmts := []string{
		"ANALYZE TABLE other", "OPTIMIZE TABLE other", "CHECK TABLE other", "REPAIR TABLE other",
		"CACHE INDEX other IN default", "LOAD INDEX INTO CACHE other",
		"CREATE TABLE t2 (x INT)", "CREATE TABLE t3 AS SELECT 1 AS x", "CREATE INDEX ix ON other (v, id)",
		"DROP INDEX ixo ON other", "CREATE VIEW rv AS SELECT 1 AS x", "CREATE SEQUENCE s1",
		"RENAME TABLE other TO other2", "TRUNCATE TABLE other", "ALTER TABLE other ADD COLUMN w INT",
		"DROP TABLE other", "/*!50000 CREATE TABLE t4 (x INT) */",
		"SET STATEMENT max_statement_time = 10 FOR CREATE TABLE t5 (x INT)",
		// Not on the manuals' lists, committing on MariaDB 10.11 (red-team rt12f F1).
		"CREATE TEMPORARY SEQUENCE ts", "BACKUP UNLOCK",
	}
	for _, s := range stmts {
		t.Run(s, func(t *testing.T) {
			raw, db, ctx := txEnv(t, "")
			l := newTxLease(10)
			tx, err := db.BeginTx(fencedsql.WithLease(ctx, l), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 555 WHERE id = 1"); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(ctx, s); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("%q inside a transaction: %v; want ErrUnsupported", s, err)
			}
			rows, err := tx.QueryContext(ctx, s)
			if err == nil {
				rows.Close()
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("%q as a query inside a transaction: %v; want ErrUnsupported", s, err)
			}
			if st, err := tx.PrepareContext(ctx, s); err == nil {
				st.Close()
				t.Fatalf("%q prepared inside a transaction: no error; want ErrUnsupported", s)
			}
			// Still one transaction: the later write is in it too.
			if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 556 WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			l.lose()
			cerr := tx.Commit()
			if cerr == nil || fencedsql.CommitOutcome(cerr) != fencedsql.NotCommitted {
				t.Fatalf("Commit after the lease was lost: %v (outcome %v); want NotCommitted", cerr, fencedsql.CommitOutcome(cerr))
			}
			if b1, b2 := balance(t, raw, 1), balance(t, raw, 2); b1 != 100 || b2 != 100 {
				t.Fatalf("after %q was refused and Commit reported NotCommitted, balances are %d, %d; want 100, 100 (nothing committed)", s, b1, b2)
			}
			// Outside a transaction the statement runs as before.
			if _, err := db.ExecContext(ctx, s); err != nil {
				t.Fatalf("%q outside a transaction: %v", s, err)
			}
		})
	}
}

// TestImplicitCommitPreparedOutsideTx: a statement prepared outside a transaction and
// run in one on the same connection (database/sql's tx.Stmt reuses it) is refused at
// execution.
func TestImplicitCommitPreparedOutsideTx(t *testing.T) {
	raw, db, ctx := txEnv(t, "")
	db.SetMaxOpenConns(1)
	st, err := db.PrepareContext(ctx, "ANALYZE TABLE other")
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	tx, err := db.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, "UPDATE accounts SET balance = 555 WHERE id = 1"); err != nil {
		t.Fatal(err)
	}
	rows, err := tx.StmtContext(ctx, st).QueryContext(ctx)
	if err == nil {
		rows.Close()
	}
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("ANALYZE TABLE prepared outside, run inside the transaction: %v; want ErrUnsupported", err)
	}
	if err := tx.Rollback(); err != nil {
		t.Fatal(err)
	}
	if b := balance(t, raw, 1); b != 100 {
		t.Fatalf("balance %d after the rollback; want 100 (nothing committed)", b)
	}
	rows, err = st.QueryContext(ctx)
	if err != nil {
		t.Fatalf("the prepared ANALYZE TABLE outside a transaction: %v", err)
	}
	rows.Close()
}

// TestTemporaryTableInTx: CREATE [OR REPLACE] TEMPORARY TABLE and DROP TEMPORARY TABLE
// do not commit implicitly: they pass inside a fenced transaction, which stays one (its
// rollback undoes the write before them; its commit keeps the writes).
func TestTemporaryTableInTx(t *testing.T) {
	raw, db, ctx := txEnv(t, "")
	for _, commit := range []bool{false, true} {
		tx, err := db.BeginTx(fencedsql.WithToken(ctx, 10), nil)
		if err != nil {
			t.Fatal(err)
		}
		for _, q := range []string{
			"UPDATE accounts SET balance = 555 WHERE id = 1",
			"CREATE TEMPORARY TABLE tt (x INT)",
			"INSERT INTO tt VALUES (1)",
			"CREATE OR REPLACE TEMPORARY TABLE tt2 AS SELECT 1 AS x",
			"DROP TEMPORARY TABLE tt",
			"DROP TEMPORARY TABLE IF EXISTS tt2",
			"UPDATE accounts SET balance = 556 WHERE id = 2",
		} {
			if _, err := tx.ExecContext(ctx, q); err != nil {
				t.Fatalf("%q inside a transaction: %v", q, err)
			}
		}
		want := int64(100)
		if commit {
			want = 555
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
		} else if err := tx.Rollback(); err != nil {
			t.Fatal(err)
		}
		if b := balance(t, raw, 1); b != want {
			t.Fatalf("commit %v: balance %d; want %d (the temporary tables did not commit the transaction)", commit, b, want)
		}
	}
}
