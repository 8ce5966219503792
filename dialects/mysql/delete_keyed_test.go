package mysql_test

// Keyed DELETEs: a DELETE run as two statements (no guard installed) deletes only the
// rows its fencing UPDATE stamped, whatever its condition reads. Each case's condition
// selects differently in the DELETE than in the fencing UPDATE — the statement's clock
// read later, behind a function, an aggregate over an ON UPDATE column, a table the
// guarded table's trigger writes, a sequence, a window moved by the UPDATE — with a
// row the same holder stamped before ready to take the stamped row's place (red-team
// rt14c F2, rt16k F2, rt17k F1–F3, F5: unkeyed, the counts matched and that row was
// deleted). The DELETE must delete exactly the rows its UPDATE stamped, or fail with
// ErrUnsupported and change nothing.

import (
	"context"
	"database/sql"
	"errors"
	"reflect"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// keyedTable is the cases' table: updated_at moves on every UPDATE.
const keyedTable = "CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6)) ENGINE=InnoDB"

// keyedRows: row 1 unstamped and oldest, rows 2 and 3 stamped by holder 10 before.
const keyedRows = "INSERT INTO accounts VALUES (1, 5, 0, 0, '2000-01-01'), (2, 5, 10, 1, '2001-01-01'), (3, 5, 10, 1, '2002-01-01')"

// slowUpdates delays the fencing UPDATE by 5 s, as a lock wait would (row 2 of the
// clock cases starts 5 s short of the 8 s window: room for the pool's first checks on
// a loaded machine; row 1, stamped, stays out of the window for 3 s after the UPDATE).
const slowUpdates = "CREATE TRIGGER slow BEFORE UPDATE ON accounts FOR EACH ROW SET NEW.balance = NEW.balance + 0 * SLEEP(5)"

func keyedDeleteCases() []fencetest.DeleteTableCase {
	return []fencetest.DeleteTableCase{
		{Name: "OrderLimitOnUpdateColumn", Setup: []string{keyedTable, keyedRows},
			Del: "DELETE FROM accounts ORDER BY updated_at LIMIT 1", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
		{Name: "OrderLimitTie", Setup: []string{keyedTable, "INSERT INTO accounts VALUES (1, 5, 0, 0, '2000-01-01'), (2, 5, 10, 1, '2000-01-01')"},
			Del: "DELETE FROM accounts WHERE balance < 10 ORDER BY balance LIMIT 1", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
		{Name: "StatementClock", Setup: []string{keyedTable, slowUpdates, "INSERT INTO accounts VALUES (1, 5, 10, 1, '2000-01-01'), (2, 5, 10, 1, NOW(6) - INTERVAL 3 SECOND)"},
			Del: "DELETE FROM accounts WHERE updated_at <= NOW(6) - INTERVAL 8 SECOND", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		{Name: "SessionTimestamp", Setup: []string{keyedTable, slowUpdates, "INSERT INTO accounts VALUES (1, 5, 10, 1, '2000-01-01'), (2, 5, 10, 1, NOW(6) - INTERVAL 3 SECOND)"},
			Del: "DELETE FROM accounts WHERE updated_at <= FROM_UNIXTIME(@@timestamp) - INTERVAL 8 SECOND", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		{Name: "StoredFunctionClock", Setup: []string{keyedTable, slowUpdates, "INSERT INTO accounts VALUES (1, 5, 10, 1, '2000-01-01'), (2, 5, 10, 1, NOW(6) - INTERVAL 3 SECOND)",
			"CREATE FUNCTION cutoff() RETURNS DATETIME(6) NOT DETERMINISTIC RETURN NOW(6) - INTERVAL 8 SECOND"},
			Del: "DELETE FROM accounts WHERE updated_at <= cutoff()", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		{Name: "AggregateOverOnUpdateColumn", Setup: []string{keyedTable, keyedRows},
			Del: "DELETE FROM accounts WHERE updated_at = (SELECT MIN(u) FROM (SELECT updated_at AS u FROM accounts) AS x)", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		{Name: "TriggerMaintainedColumn", Setup: []string{
			"CREATE TABLE accounts (id INT NOT NULL PRIMARY KEY, rnk INT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
			"INSERT INTO accounts VALUES (1, 1, 0, 0), (2, 2, 10, 1), (3, 3, 10, 1)",
			"CREATE TRIGGER rerank BEFORE UPDATE ON accounts FOR EACH ROW SET NEW.rnk = NEW.rnk + 10"},
			Del: "DELETE FROM accounts WHERE rnk = (SELECT MIN(r) FROM (SELECT rnk AS r FROM accounts) AS x)", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		{Name: "Sequence", Setup: []string{keyedTable, keyedRows, "CREATE SEQUENCE s START WITH 1"},
			Del: "DELETE FROM accounts WHERE id = (SELECT NEXT VALUE FOR s)", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}}},
		{Name: "CompositeKeyWithSeparators", Setup: []string{
			"CREATE TABLE accounts (a VARCHAR(20) NOT NULL, id INT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6), PRIMARY KEY (a, id)) ENGINE=InnoDB",
			"INSERT INTO accounts VALUES ('x,y:', 1, 5, 0, 0, '2000-01-01'), ('x', 2, 5, 10, 1, '2001-01-01'), ('x,y', 3, 5, 10, 1, '2002-01-01')"},
			Del: "DELETE FROM accounts WHERE balance < 10 ORDER BY updated_at LIMIT 1", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
		// Exec of a DELETE … RETURNING: the driver reports 0 rows affected for a statement
		// answering with rows; the count failed it (red-team rt18d F8).
		{Name: "ReturningThroughExec", Setup: []string{keyedTable, keyedRows},
			Del: "DELETE FROM accounts WHERE id = 1 RETURNING id", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
		// More rows than the wrapper searches the record for: deleted by lists of the
		// recorded keys (fencedsql's delete_listed.go), exact as the search is.
		{Name: "ManyRowsListed", Setup: []string{keyedTable, "INSERT INTO accounts (id, balance) SELECT seq, 1 FROM seq_1_to_1300",
			"INSERT INTO accounts VALUES (5000, 1, 10, 1, '2000-01-01')"},
			Del: "DELETE FROM accounts WHERE balance < 10 AND id < 2000", DeleteCase: fencetest.DeleteCase{Stamped: fencetest.Seq(1, 1300), Run: true}},
		{Name: "ManyRowsOrderLimitListed", Setup: []string{keyedTable, "INSERT INTO accounts (id, balance) SELECT seq, 1 FROM seq_1_to_1300"},
			Del: "DELETE FROM accounts WHERE balance < 10 ORDER BY id LIMIT 1100", DeleteCase: fencetest.DeleteCase{Stamped: fencetest.Seq(1, 1100), Run: true}},
		{Name: "ManyRowsAggregateListed", Setup: []string{keyedTable,
			"INSERT INTO accounts (id, balance, updated_at) SELECT seq, 1, '2000-01-01' FROM seq_1_to_600",
			"INSERT INTO accounts (id, balance, fence_token, version, updated_at) SELECT 1000 + seq, 1, 10, 1, '2001-01-01' FROM seq_1_to_600"},
			Del: "DELETE FROM accounts WHERE updated_at = (SELECT MIN(u) FROM (SELECT updated_at AS u FROM accounts) AS x)", DeleteCase: fencetest.DeleteCase{Stamped: fencetest.Seq(1, 600)}},
		{Name: "UserVariable", Setup: []string{keyedTable, keyedRows},
			Del: "DELETE FROM accounts WHERE id = @x", DeleteCase: fencetest.DeleteCase{Refused: true}},
		{Name: "NoPrimaryKeyClock", Setup: []string{
			"CREATE TABLE accounts (id INT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, updated_at TIMESTAMP(6) NOT NULL DEFAULT '2000-01-01 00:00:00' ON UPDATE CURRENT_TIMESTAMP(6)) ENGINE=InnoDB", keyedRows},
			Del: "DELETE FROM accounts WHERE updated_at <= NOW(6) - INTERVAL 8 SECOND", DeleteCase: fencetest.DeleteCase{Refused: true}},
		{Name: "NoPrimaryKeyPlain", Setup: []string{
			"CREATE TABLE accounts (id INT NOT NULL, balance BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
			"INSERT INTO accounts VALUES (1, 5, 0, 0), (2, 5, 10, 1)"},
			Del: "DELETE FROM accounts WHERE id = 1", DeleteCase: fencetest.DeleteCase{Stamped: []int64{1}, Run: true}},
	}
}

// TestKeyedDeleteSelectionClasses runs each case in autocommit (the wrapper's own
// transaction) and in the caller's transaction, then committed.
func TestKeyedDeleteSelectionClasses(t *testing.T) {
	fencetest.RunDeleteCases(t, keyedDeleteCases(), func(t *testing.T, setup []string) (raw, fenced *sql.DB) {
		dsn := testdb.MySQL(t)
		return testdb.Open(t, "mysql", dsn, setup...), testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	})
}

// TestKeyedDeleteRecordTooLarge: the keyed DELETE's record of the stamped keys lives in
// one user variable, which cannot grow past max_allowed_packet (16 MiB by default):
// here ~1450 rows of 3 KiB binary keys (12 KiB of record each). The fencing UPDATE
// fails whole, nothing changes, and the error is ErrUnsupported saying why; it was the
// driver's raw error 1301 (red-team rt18d F6).
func TestKeyedDeleteRecordTooLarge(t *testing.T) {
	t.Parallel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id INT NOT NULL, k VARBINARY(3072) NOT NULL PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB",
		"INSERT INTO accounts (id, k) SELECT seq, CONCAT(LPAD(seq, 8, '0'), REPEAT(CHAR(0), 3064)) FROM seq_1_to_1450")
	before := fencetest.IDs(t, raw)
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	fenced := testdb.Open(t, "fenced-mysql", dsn+"&fenced_tables=accounts")
	_, err := fenced.ExecContext(fencedsql.WithToken(ctx, 10), "DELETE FROM accounts WHERE id > 0")
	if !errors.Is(err, fencedsql.ErrUnsupported) || !strings.Contains(err.Error(), "max_allowed_packet") {
		t.Fatalf("DELETE of %d rows with 3 KiB keys: %v (%T); want ErrUnsupported naming max_allowed_packet", len(before), err, err)
	}
	if after := fencetest.IDs(t, raw); !reflect.DeepEqual(after, before) {
		t.Fatalf("the failed DELETE changed the table: %d rows left of %d", len(after), len(before))
	}
}
