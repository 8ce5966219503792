package mysql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The point claim (fencedsql/internal/plan/claim_point.go): a claim whose WHERE fixes
// the whole integer primary key to an integer runs without the keyed record. Every
// other selection stays keyed. Each case below selects two rows in the server: n = 1,
// the oldest by updated_at and not the holder's, and n = 2, stamped by holder 10
// before. The claim (ORDER BY updated_at LIMIT 1) stamps n = 1, which its ON UPDATE
// column moves past n = 2; a read restricted by the token alone then returns n = 2,
// which the claim did not stamp. A selection taken for a point wrongly would do that.
func TestPointClaimSelectionClasses(t *testing.T) {
	intKey := "id BIGINT NOT NULL, PRIMARY KEY (id)"
	cases := []struct {
		name, cols string
		keys       [2]string // the key columns' literals of n = 1 and n = 2
		where      string
		args       []any
	}{
		// Each names "id = ?" as a conjunct to a split at every top-level AND: AND
		// binds tighter than XOR and OR, BETWEEN and CASE hold ANDs of their own, and an
		// executable comment is SQL the server runs.
		{"Or", intKey, [2]string{"1", "2"}, "id = ? AND 1 OR id = 2", []any{1}},
		{"Xor", intKey, [2]string{"1", "2"}, "id = ? AND 1 XOR id = 2", []any{1}},
		{"PipesOr", intKey, [2]string{"1", "2"}, "id = ? AND 1 || id = 2", []any{1}},
		{"AmpersandsThenOr", intKey, [2]string{"1", "2"}, "id = ? && 1 OR id = 2", []any{1}},
		{"BetweenAnd", intKey, [2]string{"1", "2"}, "0 BETWEEN id - 2 AND id = ?", []any{1}},
		{"CaseWhen", intKey, [2]string{"1", "2"}, "CASE WHEN id <> 2 AND id = ? AND 1 THEN 1 ELSE 1 END", []any{1}},
		{"ExecutableComment", intKey, [2]string{"1", "2"}, "id = ? AND 1 /*!00000 OR id = 2 */", []any{1}},
		{"IsNotNull", intKey, [2]string{"1", "2"}, "id = ? IS NOT NULL", []any{1}},
		{"ParenthesisedOr", intKey, [2]string{"1", "2"}, "(id = ? OR id = 2)", []any{1}},
		// Part of a composite key fixed: both rows have id 1.
		{"PartOfCompositeKey", "id BIGINT NOT NULL, k INT NOT NULL, PRIMARY KEY (id, k)", [2]string{"1, 1", "1, 2"}, "id = ?", []any{1}},
		// A string key compared with an integer is compared as a number: '1' and '01'.
		{"StringKeyIntegerArgument", "code VARCHAR(10) NOT NULL, PRIMARY KEY (code)", [2]string{"'1'", "'01'"}, "code = ?", []any{1}},
		{"StringKeyIntegerLiteral", "code VARCHAR(10) NOT NULL, PRIMARY KEY (code)", [2]string{"'1'", "'01'"}, "code = 1", nil},
		// A column that is not the key.
		{"NotTheKey", "id BIGINT NOT NULL, g INT NOT NULL, PRIMARY KEY (id)", [2]string{"1, 7", "2, 7"}, "g = ?", []any{7}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.MySQL(t)
			testdb.Open(t, "mysql", dsn, pointTable(c.cols, ""),
				"INSERT INTO accounts VALUES ("+c.keys[0]+", 1, 5, 1, 0, '2000-01-01'), ("+c.keys[1]+", 2, 5, 10, 1, '2001-01-01')")
			ctx, tx := tokenTx(t, dsn)
			rows, err := tx.QueryContext(ctx, "SELECT n FROM accounts WHERE "+c.where+" ORDER BY updated_at LIMIT 1 FOR UPDATE", c.args...)
			var got []int64
			if err == nil {
				got, err = scanIDs(rows)
			}
			switch {
			case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
				t.Fatalf("claim: %v, want the row it stamped or ErrUnsupported", err)
			case err == nil && !reflect.DeepEqual(got, []int64{1}):
				t.Fatalf("claim returned %v; it stamped [1] only", got)
			}
		})
	}
}

// TestPointClaimRunsUnkeyed: a claim fixing the whole integer key to an integer runs
// without the keyed record (the session's @fencedsql_claim stays unset), returns its
// row, stamps it and nothing else, whatever else its condition reads; a key fixed by
// an argument that is not an integer (compared as a number, more than one BIGINT can
// equal it) runs keyed.
func TestPointClaimRunsUnkeyed(t *testing.T) {
	cases := []struct {
		name, cols, where string
		args              []any
		point             bool
	}{
		{"Argument", "id BIGINT NOT NULL, PRIMARY KEY (id)", "id = ?", []any{1}, true},
		{"ArgumentFirst", "id BIGINT NOT NULL, PRIMARY KEY (id)", "? = id", []any{1}, true},
		{"Literal", "id BIGINT NOT NULL, PRIMARY KEY (id)", "`accounts`.`ID` = 1", nil, true},
		{"Unsigned", "id BIGINT UNSIGNED NOT NULL, PRIMARY KEY (id)", "id = ?", []any{uint64(1)}, true},
		{"WithAggregate", "id INT NOT NULL, PRIMARY KEY (id)",
			"id = ? AND balance <= (SELECT MAX(balance) FROM (SELECT balance FROM accounts) x)", []any{1}, true},
		// The statement's clock can add the row in the read (TestPointClaimReadingClockRunsKeyed).
		{"WithClock", "id INT NOT NULL, PRIMARY KEY (id)", "id = ? AND updated_at <= NOW(6)", []any{1}, false},
		{"LimitOne", "id BIGINT NOT NULL, PRIMARY KEY (id)", "id = ? ORDER BY id LIMIT 1", []any{1}, true},
		{"CompositeKey", "id INT NOT NULL, k SMALLINT NOT NULL, PRIMARY KEY (k, id)", "k = 3 AND balance > ? AND id = ?", []any{0, 1}, true},
		{"StringArgument", "id BIGINT NOT NULL, PRIMARY KEY (id)", "id = ?", []any{"1"}, false},
		{"FloatArgument", "id BIGINT NOT NULL, PRIMARY KEY (id)", "id = ?", []any{1.0}, false},
		{"DecimalKey", "id DECIMAL(20,0) NOT NULL, PRIMARY KEY (id)", "id = ?", []any{1}, false},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.MySQL(t)
			keyVals := "1"
			if c.name == "CompositeKey" {
				keyVals = "1, 3"
			}
			raw := testdb.Open(t, "mysql", dsn, pointTable(c.cols, ""),
				"INSERT INTO accounts VALUES ("+keyVals+", 1, 5, 1, 0, '2000-01-01')")
			ctx, conn, tx := tokenConnTx(t, dsn)
			var n int64
			if err := tx.QueryRowContext(ctx, "SELECT n FROM accounts WHERE "+c.where+" FOR UPDATE", c.args...).Scan(&n); err != nil || n != 1 {
				t.Fatalf("claim: n %d, err %v; want its row", n, err)
			}
			nonce := sessionValue(t, ctx, conn, "SELECT @fencedsql_claim")
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if point := nonce == nil; point != c.point {
				t.Errorf("claim ran as a point claim: %v (the keyed nonce %v), want %v", point, nonce, c.point)
			}
			var tok, ver int64
			if err := raw.QueryRowContext(ctx, "SELECT fence_token, version FROM accounts").Scan(&tok, &ver); err != nil || tok != 10 || ver != 1 {
				t.Errorf("row after the claim: token %d, version %d (err %v); want 10, 1", tok, ver, err)
			}
		})
	}
}

// sessionValue returns the single value q reads on conn's session, asked on the
// driver connection under the wrapper (the wrapper refuses the reserved names).
func sessionValue(t *testing.T, ctx context.Context, conn *sql.Conn, q string) driver.Value {
	t.Helper()
	var v driver.Value
	err := conn.Raw(func(dc any) error {
		rows, err := fencedsql.Unwrap(dc).(driver.QueryerContext).QueryContext(ctx, q, nil)
		if err != nil {
			return err
		}
		defer rows.Close()
		dest := make([]driver.Value, 1)
		if err := rows.Next(dest); err != nil {
			return err
		}
		v = dest[0]
		return nil
	})
	if err != nil {
		t.Fatal(err)
	}
	return v
}

// pointTable is the accounts table of the point-claim tests, with the key columns
// cols and extra columns extra (each with its trailing comma).
func pointTable(cols, extra string) string {
	return "CREATE TABLE accounts (" + cols + ", " + extra + " n INT NOT NULL, balance BIGINT NOT NULL DEFAULT 5, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6)) ENGINE=InnoDB"
}

// tokenConnTx opens a fenced pool on dsn guarding accounts, a connection of it and a
// transaction bound to token 10 on that connection.
func tokenConnTx(t *testing.T, dsn string) (context.Context, *sql.Conn, *sql.Tx) {
	t.Helper()
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	conn, err := fenced.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { conn.Close() })
	tx, err := conn.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() }) //nolint:errcheck
	return ctx, conn, tx
}

// TestPointClaimKeyNameFoldsASCIIOnly (red-team rt19p F1): the point-claim decision
// matched the WHERE's column against the primary key's name with strings.EqualFold,
// Unicode simple case folding, under which "ſ" (U+017F) equals "s"; MariaDB compares
// column names by utf8mb3_general_ci, under which they are two columns (the table
// below has both). `WHERE ſ = ?` — a column that is not the key, 7 in both rows — was
// taken for the whole key fixed: unkeyed, its fencing UPDATE (ORDER BY updated_at
// LIMIT 1) stamped n = 1, whose ON UPDATE column moved it past n = 2, and the
// token-only read returned n = 2, stamped by the same holder earlier, counts matching.
// Names now compare ASCII-case-insensitively, and a name with any other byte is no
// point (plan's sameColumnName): the claim runs keyed and returns [1].
func TestPointClaimKeyNameFoldsASCIIOnly(t *testing.T) {
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

// TestPointClaimReadingClockRunsKeyed: a condition on the statement's clock can add in
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
func TestPointClaimReadingClockRunsKeyed(t *testing.T) {
	for _, c := range []struct{ name, cond string }{
		{"ClockInText", "due <= NOW(6)"},
		{"ClockInFunction", "due <= due_cutoff()"},
	} {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel()
			dsn := testdb.MySQL(t)
			raw := testdb.Open(t, "mysql", dsn,
				pointTable("id BIGINT NOT NULL, PRIMARY KEY (id)", "due DATETIME(6) NOT NULL,"),
				"INSERT INTO accounts (id, due, n, fence_token, version) VALUES (1, NOW(6) + INTERVAL 1 HOUR, 1, 10, 1)",
				"CREATE FUNCTION due_cutoff() RETURNS DATETIME(6) NOT DETERMINISTIC RETURN NOW(6)")
			ctx, _, tx := tokenConnTx(t, dsn)
			// The connection's first claim runs the pool's catalog queries (the table's
			// key, the absence recorder's verdict): done here, on a key that does not
			// exist, so that the claim below starts within the second before row 1's
			// lease runs out, however slow those queries are on a loaded machine.
			var none int64
			if err := tx.QueryRowContext(ctx, "SELECT n FROM accounts WHERE id = ? AND "+c.cond+" FOR UPDATE", 2).Scan(&none); !errors.Is(err, sql.ErrNoRows) {
				t.Fatalf("warm-up claim of absent row 2: %v, want sql.ErrNoRows", err)
			}
			testdb.Exec(t, raw, "UPDATE accounts SET due = NOW(6) + INTERVAL 1 SECOND WHERE id = 1")
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
