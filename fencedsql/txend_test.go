package fencedsql_test

import (
	"context"
	"database/sql"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// unparsedEnder is SQLite's dialect ending transactions with a statement SQLite does
// not parse: a server or proxy that does not know the dialect's spelling.
type unparsedEnder struct{ dialect.Dialect }

// OmittedCapabilities implements dialect.Reduced: every capability of the embedded
// dialect it does not forward is left out on purpose.
func (r unparsedEnder) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(unparsedEnder{}, r.Dialect)
}

// Name is its own: under SQLite's it would be refused for the capabilities it does
// not forward (WithDialect, red-team rt44b F2).
func (unparsedEnder) Name() string { return "sqlite-unparsed-end" }

func (unparsedEnder) EndTx(bool) string { return "COMMIT AND NO CHAIN NO RELEASE" }

// TestEndTxFailureDiscardsConnection: when the statement that ends a transaction
// (dialect.TxEnder) fails, the session may still be inside the transaction; the pool
// must not hand that connection out again, or the next autocommit write would join
// the open transaction, be acknowledged, and never be committed.
func TestEndTxFailureDiscardsConnection(t *testing.T) {
	file := "file:" + filepath.Join(t.TempDir(), "t.db")
	raw, err := sql.Open("sqlite", file)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	for _, s := range []string{
		"CREATE TABLE accounts (id INTEGER PRIMARY KEY, balance INTEGER NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id) VALUES (1)",
	} {
		if _, err := raw.Exec(s); err != nil {
			t.Fatal(err)
		}
	}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(raw.Driver(), file),
		fencedsql.WithDialect(unparsedEnder{sqlite.Dialect}), fencedsql.Guard("accounts"))
	t.Cleanup(func() { db.Close() })
	db.SetMaxOpenConns(1)
	ctx, cancel := context.WithTimeout(context.Background(), 10*time.Second)
	defer cancel()
	tctx := fencedsql.WithToken(ctx, 5)
	for _, commit := range []bool{true, false} {
		tx, err := db.BeginTx(tctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := tx.ExecContext(tctx, "UPDATE accounts SET balance = 7 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		if commit {
			err = tx.Commit()
		} else {
			err = tx.Rollback()
		}
		if err == nil {
			t.Fatalf("commit %v: the end statement SQLite does not parse succeeded", commit)
		}
		if _, err := db.ExecContext(tctx, "UPDATE accounts SET balance = balance + 1 WHERE id = 1"); err != nil {
			t.Fatal(err)
		}
		var bal int
		if err := raw.QueryRowContext(ctx, "SELECT balance FROM accounts WHERE id = 1").Scan(&bal); err != nil {
			t.Fatal(err)
		}
		if want := map[bool]int{true: 1, false: 2}[commit]; bal != want {
			t.Fatalf("after a failed end (commit %v) and an acknowledged autocommit write: balance %d, want %d (the write joined the transaction left open)", commit, bal, want)
		}
	}
}
