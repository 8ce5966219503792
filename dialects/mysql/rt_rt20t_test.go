package mysql_test

// Red-team rt20t: G16 "Tokens never go back" — the token floor against a transaction
// that is open across RaiseTokenFloor.

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// rt20tRaiseDuringOpenTx: a holder of token 8 writes (q) through the fenced pool in a
// transaction of isolation iso (accepted: no floor yet), RaiseTokenFloor(10) runs on a
// plain connection, then the holder commits. It reports whether the raise returned
// before the commit, and the commit's error.
func rt20tRaiseDuringOpenTx(t *testing.T, iso sql.IsolationLevel, q string) (raisedFirst bool, commitErr error, token int64) {
	t.Helper()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, fence_token, version) VALUES (1, 5, 1), (2, 5, 1)")
	g := mysql.Dialect.(dialect.Guarder)
	testdb.Exec(t, raw, g.GuardDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")...)
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
	defer cancel()

	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 8), &sql.TxOptions{Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	if _, err := tx.ExecContext(ctx, q); err != nil {
		t.Fatalf("%s under 8 before any floor: %v", q, err)
	}
	done := make(chan error, 1)
	go func() { done <- schema.RaiseTokenFloor(ctx, raw, mysql.Dialect, 10) }()
	select {
	case err := <-done:
		if err != nil {
			t.Fatalf("RaiseTokenFloor: %v", err)
		}
		raisedFirst = true
	case <-time.After(1500 * time.Millisecond):
		// The raise waits for the open writer (the floor row's shared lock): right.
	}
	commitErr = tx.Commit()
	if !raisedFirst {
		if err := <-done; err != nil {
			t.Fatalf("RaiseTokenFloor: %v", err)
		}
	}
	if _, err := fenced.ExecContext(fencedsql.WithToken(ctx, 9), "UPDATE accounts SET balance = 1 WHERE id = 2"); err == nil {
		t.Fatal("a write under 9 passed the floor 10")
	}
	if err := raw.QueryRowContext(ctx, "SELECT COALESCE((SELECT fence_token FROM accounts WHERE id = 1), -1)").Scan(&token); err != nil {
		t.Fatal(err)
	}
	return raisedFirst, commitErr, token
}

// TestRT20tFloorRaisedUnderOpenWriterReadCommitted (fail-open, race). Under REPEATABLE
// READ InnoDB reads the floor row in the guard's triggers with a shared lock, so
// RaiseTokenFloor waits until a transaction that wrote under the old floor ends (held:
// TestHeld20tRaiseWaitsUnderRepeatableRead). Under READ COMMITTED — a common setting for
// InnoDB applications, and one the wrapper accepts — the triggers' read takes no lock:
// RaiseTokenFloor(10) returns at once while a transaction that wrote under token 8 — a
// fenced UPDATE, or a claim (SELECT … FOR UPDATE, whose fencing UPDATE stamps the row)
// — is open, and that transaction then commits its write under 8 with the
// floor at 10 in force (the BEFORE UPDATE guard's `(SELECT f.floor FROM fencedsql_floor
// …)` is a consistent read under READ COMMITTED; the INSERT trigger's read and the
// one-statement DELETE's do lock, and the raise waits for them). G16 says a token below the floor never writes, and the
// procedures say the old holder "gets ErrBelowFloor" once the floor is raised.
//
// Right behaviour: when RaiseTokenFloor returns, no transaction that wrote under a token
// below the new floor may still commit (e.g. the floor read in the triggers as a
// locking read, `… LOCK IN SHARE MODE`, whatever the isolation level; or
// RaiseTokenFloor waiting for open writers of the guarded tables after its commit).
func TestRT20tFloorRaisedUnderOpenWriterReadCommitted(t *testing.T) {
	for _, q := range []string{"UPDATE accounts SET balance = 99 WHERE id = 1", "SELECT id FROM accounts WHERE id = 1 FOR UPDATE"} {
		t.Run(q, func(t *testing.T) {
			raisedFirst, commitErr, token := rt20tRaiseDuringOpenTx(t, sql.LevelReadCommitted, q)
			if raisedFirst && commitErr == nil && token == 8 {
				t.Errorf("RaiseTokenFloor(10) returned while a READ COMMITTED transaction under token 8 was open, and that transaction then committed %q: row 1 now carries token %d below the floor, written after the floor was raised", q, token)
			}
		})
	}
}

// TestRT20tFloorLoweredThroughHexBody (fail-open under WithDynamicSQL; naive layout).
// docs/design.md §5: the protect checks apply to the statements in the string literals
// of PREPARE and EXECUTE [IMMEDIATE], so that WithDynamicSQL does not let a literal
// statement that writes a reserved object through; only "a body built at run time
// (CONCAT(…))" is not seen. MariaDB also takes the statement as a hexadecimal literal
// (X'…', 0x…, with or without a character-set introducer): a constant the wrapper could
// read, but the body check does not decode it (the plain, N'…', _binary'…' and adjacent
// spellings are refused). `PREPARE s FROM X'<UPDATE fencedsql_floor SET floor = 0>'` +
// EXECUTE, and EXECUTE IMMEDIATE 0x…, run through the fenced pool, the floor goes to 0,
// and a write under token 40 with the floor at 50 is accepted.
//
// Right behaviour: decode hexadecimal (and bit) string literals, with or without an
// introducer, before the body checks, or refuse PREPARE/EXECUTE IMMEDIATE of a literal
// in a form the checks cannot read.
func TestRT20tFloorLoweredThroughHexBody(t *testing.T) {
	lower := fmt.Sprintf("%X", "UPDATE fencedsql_floor SET floor = 0 WHERE id = 1")
	requireFloorLiteralsRefused(t, []string{"EXECUTE IMMEDIATE 'UPDATE fencedsql_floor SET floor = 0 WHERE id = 1'"}, []floorLiteralCase{
		{"prepare-x", "PREPARE rt20t FROM X'" + lower + "'", "EXECUTE rt20t"},
		{"execute-immediate-0x", "EXECUTE IMMEDIATE 0x" + lower, ""},
		{"introducer", "EXECUTE IMMEDIATE _latin1 X'" + lower + "'", ""},
	})
}

// rt20tRefused requires err, the answer to a statement whose literal spells a write of
// the floor in a form the checks must decode, to be the planner's refusal.
func rt20tRefused(t *testing.T, err error) {
	t.Helper()
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("err = %v, want ErrUnsupported (the decoded literal names the floor)", err)
	}
}
