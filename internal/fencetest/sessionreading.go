package fencetest

import (
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// ReadingStep is one statement of RunSessionReading, sent on one connection of a
// fenced pool that guards accounts: Refused names the setting whose SessionError
// (with Reading) must refuse it, "" when it must run.
type ReadingStep struct {
	SQL     string
	Refused string
}

// RunSessionReading proves that a session which reads statement text differently
// from the wrapper's lexer (a setting changed through the pool itself) cannot hide a
// write in what the lexer reads as a string or one word: each step runs on the same
// connection, a refused one fails with a *fencedsql.SessionError whose Reading is set
// (errors.Is ErrSchema), and afterwards the three rows of accounts are all still there
// with their balance 100. dsnParams are added to the fenced pool's DSN.
func RunSessionReading(t *testing.T, be Backend, steps []ReadingStep, dsnParams ...string) {
	t.Helper()
	e := setup(t, be, dsnParams...)
	ctx := e.ctx
	if _, err := e.raw.ExecContext(ctx, "INSERT INTO accounts (id, balance) VALUES (1, 100), (2, 100), (3, 100)"); err != nil {
		t.Fatal(err)
	}
	conn, err := e.db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	for _, s := range steps {
		rows, err := conn.QueryContext(ctx, s.SQL)
		if err == nil {
			for rows.Next() {
			}
			err = rows.Err()
			rows.Close()
		}
		var se *fencedsql.SessionError
		switch {
		case s.Refused == "" && err != nil:
			t.Errorf("%q: %v, want it run", s.SQL, err)
		case s.Refused != "" && !(errors.As(err, &se) && se.Reading && se.Setting == s.Refused && errors.Is(err, fencedsql.ErrSchema)):
			t.Errorf("%q: %v, want the session check's refusal for its reading (%s)", s.SQL, err, s.Refused)
		}
	}
	var n int
	if err := e.raw.QueryRowContext(ctx, e.q("SELECT COUNT(*) FROM accounts WHERE balance = ?"), 100).Scan(&n); err != nil || n != 3 {
		t.Errorf("accounts: %d rows of 3 unchanged (%v)", n, err)
	}
}
