package mysql_test

import (
	"database/sql"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRT19pPointClaimFoldedColumnName (red-team rt19p F1): the point-claim decision
// matched the WHERE's column against the primary key's name with strings.EqualFold,
// Unicode simple case folding, under which "ſ" (U+017F) equals "s"; MariaDB compares
// column names by utf8mb3_general_ci, under which they are two columns (the table
// below has both). `WHERE ſ = ?` — a column that is not the key, 7 in both rows — was
// taken for the whole key fixed: unkeyed, its fencing UPDATE (ORDER BY updated_at
// LIMIT 1) stamped n = 1, whose ON UPDATE column moved it past n = 2, and the
// token-only read returned n = 2, stamped by the same holder earlier, counts matching.
// Names now compare ASCII-case-insensitively, and a name with any other byte is no
// point (plan's sameColumnName): the claim runs keyed and returns [1].
func TestRT19pPointClaimFoldedColumnName(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		pointTable("s BIGINT NOT NULL, PRIMARY KEY (s)", "`ſ` INT NOT NULL,"),
		"INSERT INTO accounts (s, `ſ`, n, fence_token, version, updated_at) VALUES (1, 7, 1, 1, 0, '2000-01-01'), (2, 7, 2, 10, 1, '2001-01-01')")
	ctx, conn, tx := tokenConnTx(t, dsn)
	rows, err := tx.QueryContext(ctx, "SELECT n FROM accounts WHERE ſ = ? ORDER BY updated_at LIMIT 1 FOR UPDATE", 7)
	var got []int64
	if err == nil {
		got, err = scanIDs(rows)
	}
	nonce := sessionValue(t, ctx, conn, "SELECT @fencedsql_claim")
	switch {
	case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
		t.Fatalf("claim: %v, want [1] or ErrUnsupported", err)
	case err == nil && !reflect.DeepEqual(got, []int64{1}):
		t.Fatalf("claim returned %v (ran as a point claim: %v); it stamped [1] only", got, nonce == nil)
	}
}

// TestRT19pPointClaimClockAddsRow: a condition on the statement's clock can add in
// the read the row the fencing UPDATE did not find — the lease pattern `WHERE id = ?
// AND due <= NOW(6)`. Row 1 carries holder 10's token from an earlier claim, its lease
// runs out 1 s from now; another session holds its lock for 2.5 s (a lock wait). The
// fencing UPDATE starts at T (lease not out), waits, and stamps nothing; the read runs
// at T + 2.5 s and finds row 1, which the claim did not stamp. As first built the
// point claim returned it: the count check (0 stamped, 1 read) ran only at io.EOF,
// which QueryRow's Scan never asks for. Now a claim whose text reads the clock is no
// point (keyed: its read finds nothing, sql.ErrNoRows), and a clock the text does not
// show (a stored function) is caught by the count: a row past the rows stamped fails
// Next at once (ErrUnsupported) and the transaction can only roll back.
func TestRT19pPointClaimClockAddsRow(t *testing.T) {
	for _, c := range []struct{ name, cond string }{
		{"ClockInText", "due <= NOW(6)"},
		{"ClockInFunction", "due <= due_cutoff()"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.MySQL(t)
			raw := testdb.Open(t, "mysql", dsn,
				pointTable("id BIGINT NOT NULL, PRIMARY KEY (id)", "due DATETIME(6) NOT NULL,"),
				"INSERT INTO accounts (id, due, n, fence_token, version) VALUES (1, NOW(6) + INTERVAL 1 SECOND, 1, 10, 1)",
				"CREATE FUNCTION due_cutoff() RETURNS DATETIME(6) NOT DETERMINISTIC RETURN NOW(6)")
			ctx, _, tx := tokenConnTx(t, dsn)
			holder, err := raw.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var one int
			if err := holder.QueryRowContext(ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE").Scan(&one); err != nil {
				t.Fatal(err)
			}
			released := make(chan struct{})
			go func() {
				time.Sleep(2500 * time.Millisecond)
				holder.Commit() //nolint:errcheck
				close(released)
			}()
			var n int64
			err = tx.QueryRowContext(ctx, "SELECT n FROM accounts WHERE id = ? AND "+c.cond+" FOR UPDATE", 1).Scan(&n)
			<-released
			switch {
			case err == nil:
				cerr := tx.Commit()
				var ver int64
				if qerr := raw.QueryRowContext(ctx, "SELECT version FROM accounts WHERE id = 1").Scan(&ver); qerr != nil {
					t.Fatal(qerr)
				}
				t.Fatalf("claim returned row n = %d without error; the row's version after commit (err %v) is %d: the claim did not stamp it; want sql.ErrNoRows or ErrUnsupported", n, cerr, ver)
			case errors.Is(err, fencedsql.ErrUnsupported):
				if cerr := tx.Commit(); !errors.Is(cerr, fencedsql.ErrNotCommitted) {
					t.Fatalf("Commit after the refused claim: %v, want ErrNotCommitted", cerr)
				}
			case !errors.Is(err, sql.ErrNoRows):
				t.Fatalf("claim: %v, want sql.ErrNoRows or ErrUnsupported", err)
			}
		})
	}
}
