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
		// The statement's clock can add the row in the read (TestRT19pPointClaimClockAddsRow).
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
