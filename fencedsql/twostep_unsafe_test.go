package fencedsql

import (
	"context"
	"database/sql/driver"
	"errors"
	"testing"
)

// TestDeleteTwoStepUnsafeSelection: a DELETE whose selection the two-statement form
// (the fencing UPDATE, then the DELETE) could read differently the second time — a
// fencing column, a row locator, a non-deterministic function, a limited subquery over
// the same table — is planned (the one-statement DELETE, where the database's guard
// takes it, selects once: TestConditionOnFencingColumnsOneStatement in internal/ormtest),
// with its two-statement form marked refused; the wrapper refuses it, typed and with
// the planner's reason, before anything is sent where it would send the two statements
// (here: without the lazy schema checks, which would ask the guard).
func TestDeleteTwoStepUnsafeSelection(t *testing.T) {
	cases := []struct {
		d  testDialect
		in string
	}{
		{pgTest, `DELETE FROM accounts WHERE id = $1 AND version = $2`},
		{pgTest, `DELETE FROM accounts WHERE id = $1 AND fence_token = $2`},
		{pgTest, `DELETE FROM accounts WHERE ctid = '(0,1)'`},
		{pgTest, `DELETE FROM accounts a WHERE a.xmin::text::bigint > 5`},
		{pgTest, `DELETE FROM accounts WHERE id IN (SELECT id FROM accounts ORDER BY balance LIMIT 1)`},
		{pgTest, `DELETE FROM accounts WHERE id = (SELECT min(id) FROM shop.accounts FETCH FIRST 1 ROW ONLY)`},
		{pgTest, `DELETE FROM accounts WHERE random() < 0.5`},
		{pgTest, `DELETE FROM accounts WHERE clock_timestamp() > '2000-01-01'`},
		{mysqlTest, `DELETE FROM accounts WHERE id > 1 ORDER BY rand() LIMIT 1`},
		{mysqlTest, `DELETE FROM accounts ORDER BY version LIMIT 1`},
		{mysqlTest, `DELETE FROM accounts WHERE id = ? AND SYSDATE() > '2000-01-01'`},
		{sqliteTest, `DELETE FROM accounts WHERE id IN (SELECT id FROM accounts WHERE x LIMIT 2)`},
		{sqliteTest, `DELETE FROM accounts WHERE id = abs(random()) % 3`},
		{sqliteTest, `DELETE FROM accounts WHERE id = ? AND version = ?`},
		// The statement's clock: the DELETE reads a later time than its fencing UPDATE
		// (red-team rt16k F2: a row the UPDATE moved out of the window, an earlier one in).
		{mysqlTest, "DELETE FROM accounts WHERE updated_at <= NOW(6) - INTERVAL 3 SECOND"},
		{mysqlTest, "DELETE FROM accounts WHERE updated_at <= current_timestamp - INTERVAL 3 SECOND"},
		{mysqlTest, "DELETE FROM accounts WHERE updated_at <= CURRENT_TIMESTAMP(6) ORDER BY id LIMIT 2"},
		{mysqlTest, "DELETE FROM accounts WHERE day < UTC_DATE"},
		{mysqlTest, "DELETE FROM accounts WHERE ts < LOCALTIMESTAMP() AND id = ?"},
		{mysqlTest, "DELETE FROM accounts WHERE day = CURDATE ()"},
		{mysqlTest, "DELETE FROM accounts WHERE secs < UNIX_TIMESTAMP() - 60"},
		{sqliteTest, `DELETE FROM accounts WHERE ts < datetime('now', '-1 day')`},
		{sqliteTest, `DELETE FROM accounts WHERE ts < CURRENT_TIMESTAMP`},
		{sqliteTest, `DELETE FROM accounts WHERE secs < unixepoch() - 60`},
		// red-team rt17k F1: more spellings.
		{sqliteTest, `DELETE FROM accounts WHERE ts < datetime()`},
		{sqliteTest, `DELETE FROM accounts WHERE day < date ( )`},
		{sqliteTest, `DELETE FROM accounts WHERE jd < julianday()`},
		{sqliteTest, `DELETE FROM accounts WHERE secs < strftime('%s')`},
		{sqliteTest, `DELETE FROM accounts WHERE ts < datetime("now", '-1 day')`},
		{mysqlTest, "DELETE FROM accounts WHERE updated_at <= FROM_UNIXTIME(@@timestamp) - INTERVAL 3 SECOND"},
		{mysqlTest, "DELETE FROM accounts WHERE updated_at <= FROM_UNIXTIME(@@session.timestamp)"},
	}
	for _, c := range cases {
		for _, versioned := range []bool{false, true} {
			p, err := newTestRewriter(t, c.d).Rewrite(c.in, versioned)
			if err != nil || p.Pre == nil || p.TwoStepErr == nil || !errors.Is(asUnsupported(p.TwoStepErr), ErrUnsupported) {
				t.Errorf("%s: rewrite(%q, versioned=%v) = %+v, %v; want a DELETE whose two-statement form is refused", c.d.name, c.in, versioned, p, err)
			}
		}
		ft := newFzTarget(t, c.d)
		args := []driver.NamedValue{{Ordinal: 1, Value: int64(1)}, {Ordinal: 2, Value: int64(2)}}
		p, _ := newTestRewriter(t, c.d).Rewrite(c.in, false)
		_, err := ft.conn.ExecContext(WithToken(context.Background(), 7), c.in, args[:max(p.NUser, 0)])
		var ue *UnsupportedError
		if !errors.As(err, &ue) || ue.Reason == "" || len(ft.raw.calls) != 0 {
			t.Errorf("%s: two-statement %q = %v, sent %v; want *UnsupportedError with the reason, nothing sent", c.d.name, c.in, err, ft.raw.calls)
		}
	}
}

// The clock conditions the two statements read alike are not refused: PostgreSQL's
// now() and CURRENT_TIMESTAMP (the transaction's start), a function of a column, a
// column named like a clock keyword but quoted.
func TestDeleteTwoStepStableClock(t *testing.T) {
	for _, c := range []struct {
		d  testDialect
		in string
	}{
		{pgTest, `DELETE FROM accounts WHERE updated_at < now() - interval '1 hour'`},
		{pgTest, `DELETE FROM accounts WHERE updated_at < CURRENT_TIMESTAMP`},
		{mysqlTest, "DELETE FROM accounts WHERE UNIX_TIMESTAMP(updated_at) < ?"},
		{mysqlTest, "DELETE FROM accounts WHERE `current_date` = ?"},
		{sqliteTest, `DELETE FROM accounts WHERE unixepoch(ts) < ?`},
		// 'now' as data, not a date function's argument (rt17k O1).
		{sqliteTest, `DELETE FROM accounts WHERE status = 'now'`},
		{sqliteTest, `DELETE FROM accounts WHERE ts < datetime(created, '+1 day')`},
		{sqliteTest, `DELETE FROM accounts WHERE day = date(ts)`},
		{mysqlTest, "DELETE FROM accounts WHERE ts = timestamp"},
	} {
		p, err := newTestRewriter(t, c.d).Rewrite(c.in, false)
		if err != nil || p.Pre == nil || p.TwoStepErr != nil {
			t.Errorf("%s: rewrite(%q) = %+v, %v; want a DELETE whose two statements run", c.d.name, c.in, p, err)
		}
	}
}
