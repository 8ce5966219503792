// What reaches the driver over go-sqlmock: nothing refused, pass-through statements byte for byte.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/DATA-DOG/go-sqlmock"

	"github.com/fencedsql/fencedsql/fencedsql"
)

func TestSqlmockUnsupportedNotSent(t *testing.T) {
	for _, c := range []struct {
		d  dialectCase
		in string
	}{
		{mockDialects[0], `MERGE INTO accounts USING other ON accounts.id = other.id WHEN MATCHED THEN UPDATE SET x = 1`},
		{mockDialects[0], `TRUNCATE accounts`},
		{mockDialects[0], `UPDATE accounts SET (x, fence_token) = (1, 0)`},
		{mockDialects[1], `UPDATE accounts JOIN other USING (id) SET accounts.x = 1`},
		{mockDialects[1], `INSERT IGNORE INTO accounts (id) VALUES (?)`},
		{mockDialects[2], `INSERT OR REPLACE INTO accounts (id) VALUES (?)`},
		{mockDialects[2], `UPDATE accounts SET x = 1; DELETE FROM accounts`},
	} {
		t.Run(c.d.name, func(t *testing.T) {
			db, mock := newMockDB(t, c.d.d)
			var args []any
			if strings.Contains(c.in, "?") {
				args = append(args, 1)
			}
			_, err := db.ExecContext(withTok(7), c.in, args...)
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("Exec(%q) = %v, want ErrUnsupported", c.in, err)
			}
			_, err = db.PrepareContext(withTok(7), c.in)
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("Prepare(%q) = %v, want ErrUnsupported", c.in, err)
			}
			rows, err := db.QueryContext(withTok(7), c.in, args...)
			if err == nil {
				rows.Close()
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("Query(%q) = %v, want ErrUnsupported", c.in, err)
			}
			mockMet(t, mock)
		})
	}
}

// Statements that write no guarded table reach the driver byte for byte.
func TestSqlmockPassThroughIdentical(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			q := sqlFor(dc.name,
				"  SELECT id,  balance\n\tFROM accounts /* accounts */ WHERE id = $1 -- x\n FOR UPDATE ",
				"  SELECT id,  balance\n\tFROM accounts /* accounts */ WHERE id = ? -- x\n FOR UPDATE ")
			mock.ExpectQuery(q).WithArgs(int64(42)).WillReturnRows(sqlmock.NewRows([]string{"id", "balance"}).AddRow(int64(42), int64(5)))
			rows, err := db.QueryContext(context.Background(), q, 42)
			if err != nil {
				t.Fatal(err)
			}
			rows.Close()
			e := sqlFor(dc.name, "UPDATE   other SET x = $1\n", "UPDATE   other SET x = ?\n")
			mock.ExpectExec(e).WithArgs(int64(1)).WillReturnResult(sqlmock.NewResult(0, 1))
			if _, err := db.ExecContext(context.Background(), e, 1); err != nil {
				t.Fatal(err)
			}
			mockMet(t, mock)
		})
	}
}

func TestSqlmockArgumentCountMismatch(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in := sqlFor(dc.name, `UPDATE accounts SET x = $1 WHERE id = $2`, `UPDATE accounts SET x = ? WHERE id = ?`)
			if _, err := db.ExecContext(withTok(7), in, 1); err == nil {
				t.Error("one argument for two placeholders: no error")
			}
			if _, err := db.ExecContext(withTok(7), in, 1, 2, 3); err == nil {
				t.Error("three arguments for two placeholders: no error")
			}
			del := sqlFor(dc.name, `DELETE FROM accounts WHERE id = $1`, `DELETE FROM accounts WHERE id = ?`)
			if _, err := db.ExecContext(withTok(7), del); err == nil {
				t.Error("DELETE without its argument: no error")
			}
			mockMet(t, mock)
		})
	}
}

func TestSqlmockNamedArgsRefused(t *testing.T) {
	for _, dc := range mockDialects {
		t.Run(dc.name, func(t *testing.T) {
			db, mock := newMockDB(t, dc.d)
			in := sqlFor(dc.name, `UPDATE accounts SET x = $1 WHERE id = $2`, `UPDATE accounts SET x = ? WHERE id = ?`)
			_, err := db.ExecContext(withTok(7), in, sql.Named("x", 1), sql.Named("id", 2))
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("err = %v, want ErrUnsupported", err)
			}
			mockMet(t, mock)
		})
	}
}
