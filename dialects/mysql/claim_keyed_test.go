package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The keyed claim (a locking read with a LIMIT) records the primary keys of the rows
// its fencing UPDATE stamps and reads only those: its key text must tell every pair of
// distinct keys apart and find each stored row again. Keys of every kind: a composite
// key whose text parts hold the list's and the key's own separators (',' and ':'), a
// case-insensitive collation, a binary column with bytes no character set decodes,
// a DECIMAL (HEX of a number would round it) and a TIMESTAMP with microseconds. Each table's rows carry the holder's
// token from an earlier write on every row but one per key class, and updated_at ON
// UPDATE CURRENT_TIMESTAMP: a read restricted by the token alone returns an earlier
// row (fencetest's EarlierStampedRows); the keyed read returns the plain read's row.
func TestKeyedClaimKeyKinds(t *testing.T) {
	cases := []struct {
		name, cols, pk string
		keys           []string // SQL literals of the key columns per row, in updated_at order
	}{
		{"CompositeWithSeparators", "a VARCHAR(20) NOT NULL, b INT NOT NULL", "a, b",
			[]string{"'x,y', 1", "'x', 11", "'x:y', 1", "'x,y', 2"}},
		{"CaseInsensitive", "a VARCHAR(20) COLLATE utf8mb4_general_ci NOT NULL", "a",
			[]string{"'ab'", "'AC'", "'Ab,'", "'aD'"}},
		{"Binary", "a VARBINARY(8) NOT NULL", "a",
			[]string{"0xff00", "0xff", "0x2c", "0x00ff"}},
		{"Decimal", "a DECIMAL(10,3) NOT NULL", "a",
			[]string{"1.5", "1.4", "2.5", "1.501"}},
		// A TIMESTAMP key is recorded by its stored instant (UNIX_TIMESTAMP), not its text
		// in the session's time zone.
		{"Timestamp", "a TIMESTAMP(6) NOT NULL DEFAULT '2001-01-01 00:00:00'", "a",
			[]string{"'2010-01-01 00:00:00.000001'", "'2010-01-01 00:00:00'", "'2010-01-01 00:00:00.000002'", "'2011-01-01 00:00:00'"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			t.Parallel() // a database of its own; session settings only
			dsn := testdb.MySQL(t)
			ddl := []string{"CREATE TABLE accounts (" + c.cols + ", n INT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (" + c.pk + ")) ENGINE=InnoDB"}
			for i, k := range c.keys {
				ddl = append(ddl, "INSERT INTO accounts VALUES ("+k+", "+string(rune('1'+i))+", 5, 1, 0, '200"+string(rune('0'+i))+"-01-01')")
			}
			testdb.Open(t, "mysql", dsn, ddl...)
			fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			tctx := fencedsql.WithToken(ctx, 10)
			// Holder 10 writes rows 2–4 (n), one statement each so that their updated_at
			// differ: they carry its token and the newest updated_at, in n order.
			for n := 2; n <= 4; n++ {
				if _, err := fenced.ExecContext(tctx, "UPDATE accounts SET balance = balance WHERE n = ?", n); err != nil {
					t.Fatal(err)
				}
			}
			tx, err := fenced.BeginTx(tctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			// Prepared, and run twice. The first claim stamps row 1 (the oldest), which
			// moves it to the newest; the second stamps row 2 and must read it, not row 1,
			// which the first claim recorded under an older nonce.
			st, err := tx.PrepareContext(ctx, "SELECT n FROM accounts WHERE balance < ? ORDER BY updated_at LIMIT 1 FOR UPDATE")
			if err != nil {
				t.Fatal(err)
			}
			defer st.Close()
			for round, want := range []int64{1, 2} {
				var got []int64
				rows, err := st.QueryContext(ctx, 50)
				if err == nil {
					got, err = scanIDs(rows)
				}
				if err != nil || !reflect.DeepEqual(got, []int64{want}) {
					t.Fatalf("claim %d: rows %v, err %v; want [%d], the row it stamped", round+1, got, err, want)
				}
			}
			for n, want := range map[int]int64{1: 1, 2: 2, 3: 1} {
				var v int64
				if err := tx.QueryRowContext(ctx, "SELECT version FROM accounts WHERE n = ?", n).Scan(&v); err != nil || v != want {
					t.Fatalf("row %d's version after two claims: %d (err %v), want %d", n, v, err, want)
				}
			}
		})
	}
}

// TestKeyedClaimWithoutPrimaryKey: a table without a primary key has no key to record,
// so its claim with a LIMIT is refused with ErrUnsupported, stamping nothing; without a
// LIMIT the claim stamps every row it reads and needs none.
func TestKeyedClaimWithoutPrimaryKey(t *testing.T) {
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, balance, fence_token) VALUES (1, 5, 1), (2, 5, 1)")
	ctx, tx := tokenTx(t, dsn)
	_, err := tx.QueryContext(ctx, "SELECT id FROM accounts ORDER BY id LIMIT 1 FOR UPDATE")
	if !errors.Is(err, fencedsql.ErrUnsupported) {
		t.Fatalf("LIMIT claim of a table without a primary key: err %v, want ErrUnsupported", err)
	}
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE version > 0").Scan(&n); err != nil || n != 0 {
		t.Fatalf("rows stamped by the refused claim: %d (err %v)", n, err)
	}
	rows, err := tx.QueryContext(ctx, "SELECT id FROM accounts WHERE id = 1 FOR UPDATE")
	if err == nil {
		var ids []int64
		ids, err = scanIDs(rows)
		if err == nil && !reflect.DeepEqual(ids, []int64{1}) {
			t.Fatalf("claim by key: %v", ids)
		}
	}
	if err != nil {
		t.Fatalf("claim without a LIMIT: %v", err)
	}
}

// TestKeyedClaimApproximateKeyRefused: QUOTE prints a FLOAT with six digits, so
// distinct stored keys (1.0000001, 1) print alike and a read restricted by that text
// would also find rows the claim did not stamp: a claim with a LIMIT of a table keyed
// by an approximate number is refused with ErrUnsupported, stamping nothing (red-team
// rt16k).
func TestKeyedClaimApproximateKeyRefused(t *testing.T) {
	for _, typ := range []string{"FLOAT", "DOUBLE"} {
		t.Run(typ, func(t *testing.T) {
			t.Parallel() // a database of its own
			dsn := testdb.MySQL(t)
			raw := testdb.Open(t, "mysql", dsn,
				"CREATE TABLE accounts (a "+typ+" NOT NULL PRIMARY KEY, n INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
				"INSERT INTO accounts (a, n, fence_token) VALUES (1.0000001, 1, 1), (1, 2, 1)")
			ctx, tx := tokenTx(t, dsn)
			if _, err := tx.QueryContext(ctx, "SELECT n FROM accounts ORDER BY n LIMIT 1 FOR UPDATE"); !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Fatalf("LIMIT claim of a table keyed by %s: err %v, want ErrUnsupported", typ, err)
			}
			var n int
			if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM accounts WHERE version > 0").Scan(&n); err != nil || n != 0 {
				t.Fatalf("rows stamped by the refused claim: %d (err %v)", n, err)
			}
			// Without a LIMIT the claim records no key and runs.
			rows, err := tx.QueryContext(ctx, "SELECT n FROM accounts WHERE n = 2 FOR UPDATE")
			if err == nil {
				_, err = scanIDs(rows)
			}
			if err != nil {
				t.Fatalf("claim without a LIMIT: %v", err)
			}
		})
	}
}

// TestKeyedClaimNamesItsVariables: a locking read that names the keyed claim's session
// variables could rewrite its record; it is refused with a token.
func TestKeyedClaimNamesItsVariables(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, balance, fence_token) VALUES (1, 5, 1)")
	ctx, tx := tokenTx(t, dsn)
	for _, q := range []string{
		"SELECT id, (@fencedsql_claimed := '') FROM accounts ORDER BY id LIMIT 1 FOR UPDATE",
		"SELECT id FROM accounts WHERE @FencedSQL_Claim IS NULL OR id > 0 LIMIT 1 FOR UPDATE",
	} {
		if _, err := tx.QueryContext(ctx, q); !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%s: err %v, want ErrUnsupported", q, err)
		}
	}
}

func scanIDs(rows *sql.Rows) ([]int64, error) {
	defer rows.Close()
	var out []int64
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			return out, err
		}
		out = append(out, id)
	}
	return out, rows.Err()
}

// tokenTx opens a transaction bound to token 10 on a fenced pool guarding accounts in
// dsn's database, and returns it with a context for its statements (the test's
// deadline, no token: the transaction carries it).
func tokenTx(t *testing.T, dsn string) (context.Context, *sql.Tx) {
	t.Helper()
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	t.Cleanup(cancel)
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { tx.Rollback() }) //nolint:errcheck
	return ctx, tx
}

// Claims whose second statement selected differently from their fencing UPDATE, found
// by red-team pass rt17k (each returned a row the claim did not stamp, with the counts
// matching). Every MySQL/MariaDB claim is now keyed, and ENUM/SET keys are recorded by
// their number: each claim returns the rows it stamped or fails with ErrUnsupported.

// TestKeyedClaimEnumErrorValueKeyReturnsOnlyStampedRow: an ENUM primary key whose list holds the empty string
// has two stored values that read as ” — the member ” (index 1) and the error value
// (index 0, stored by a non-strict INSERT) — and keyPart's QUOTE() text is the same for
// both, so the keyed claim's record does not tell them apart. Holder 10 wrote the
// index-0 row before (it carries token 10, older updated_at); the claim stamps the
// member-” row, and its keyed read (ORDER BY updated_at LIMIT 1, restricted to the
// key text and the token) returns the index-0 row, which it did not stamp, with the
// counts matching.
func TestKeyedClaimEnumErrorValueKeyReturnsOnlyStampedRow(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"SET SESSION sql_mode = ''",
		"CREATE TABLE accounts (e ENUM('', 'a') NOT NULL, n INT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (e)) ENGINE=InnoDB",
		// n = 1: the error value (index 0), stamped by holder 10 before; n = 2: the member ''.
		"INSERT INTO accounts VALUES ('bogus', 1, 5, 10, 1, '2001-01-01'), ('', 2, 5, 0, 0, '2000-01-01')")
	raw := testdb.Open(t, "mysql", dsn)
	var idx0, idx1 int64
	if err := raw.QueryRow("SELECT SUM(e + 0 = 0), SUM(e + 0 = 1) FROM accounts").Scan(&idx0, &idx1); err != nil || idx0 != 1 || idx1 != 1 {
		t.Skipf("set-up: index-0 rows %d, index-1 rows %d, %v", idx0, idx1, err)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	tx, err := fenced.BeginTx(fencedsql.WithToken(ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	// The plain read's row is n = 2 (the oldest updated_at).
	claimExact(t, ctx, tx, "SELECT n FROM accounts WHERE balance < 50 ORDER BY updated_at LIMIT 1 FOR UPDATE", 2)
}

// TestClaimSelfAggregateConditionReturnsOnlyStampedRow: a claim whose condition takes an
// aggregate of the table itself over a column an ON UPDATE clause changes.
// Without a LIMIT and without a known clock the claim is not keyed: its read,
// restricted to the token, takes MIN() again after the UPDATE moved row 1 to the
// newest, and returns row 2, which the claim did not stamp.
func TestClaimSelfAggregateConditionReturnsOnlyStampedRow(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6)) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (1, 5, 0, 0, '2000-01-01'), (2, 5, 10, 1, '2001-01-01'), (3, 5, 10, 1, '2002-01-01')")
	ctx, tx := tokenTx(t, dsn)
	claimExact(t, ctx, tx, "SELECT id FROM accounts WHERE updated_at = (SELECT MIN(u) FROM (SELECT updated_at AS u FROM accounts) AS x) FOR UPDATE", 1)
}

// TestKeyedClaimSetKeyTextReturnsOnlyStampedRow: the SET form of TestKeyedClaimEnumErrorValueKeyReturnsOnlyStampedRow, in strict mode: with
// a ” member, SET(”, 'a') values 2 ({a}) and 3 ({”, a}) both read 'a' (and 0, 1
// both ”), so their QUOTE() key texts are equal. The claim stamps n = 2 (value 3, the
// oldest); its keyed read returns n = 1 (value 2), stamped by holder 10 before.
func TestKeyedClaimSetKeyTextReturnsOnlyStampedRow(t *testing.T) {
	dsn := testdb.MySQL(t)
	testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (e SET('', 'a') NOT NULL, n INT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (e)) ENGINE=InnoDB",
		"INSERT INTO accounts VALUES (2, 1, 5, 10, 1, '2001-01-01'), (3, 2, 5, 0, 0, '2000-01-01')")
	ctx, tx := tokenTx(t, dsn)
	claimExact(t, ctx, tx, "SELECT n FROM accounts WHERE balance < 50 ORDER BY updated_at LIMIT 1 FOR UPDATE", 2)
}

// claimExact runs the claim q in tx: it must return exactly the row it stamped
// (stamped) or fail with ErrUnsupported (the count check: the stamped row left the
// selection), never another row.
func claimExact(t *testing.T, ctx context.Context, tx *sql.Tx, q string, stamped int64) {
	t.Helper()
	rows, err := tx.QueryContext(ctx, q)
	var got []int64
	if err == nil {
		got, err = scanIDs(rows)
	}
	switch {
	case err != nil && !errors.Is(err, fencedsql.ErrUnsupported):
		t.Fatalf("claim %s: %v, want the rows it stamped or ErrUnsupported", q, err)
	case err == nil && !reflect.DeepEqual(got, []int64{stamped}):
		t.Fatalf("claim %s returned rows %v; it stamped [%d] only (a row it did not stamp returned)", q, got, stamped)
	}
}
