package mysql_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestCaseAccentTwinsKeepTheKey (red-team rt56a F2; G9): with lower_case_table_names
// = 0 (the Linux default) tables whose names differ by case or by an accent (acc,
// Acc, Ácc, àcc) are distinct tables, and one table may hold the columns id and íd,
// but information_schema compares its name columns under utf8mb3_general_ci, which
// folds both. PrimaryKeyQuery and the tombstone-key check joined KEY_COLUMN_USAGE to
// COLUMNS on c.TABLE_NAME = k.TABLE_NAME (and COLUMN_NAME): the guarded table's key
// column was read once more for every unrelated twin table (or twin column) having a
// column of that name, so -apply failed with the driver's "Duplicate column name"
// (no tombstone guard, nor the row guard), and a twin created after -apply made every
// write refused. The generator picks the twin (table or column) and whether it exists
// before or after -apply. Want: -apply OK, the stale re-INSERT of a key deleted under a
// newer token refused (pool: ErrFenced; plain connection: the guard's refusal), fresh
// writes accepted, the Check still OK.
func TestCaseAccentTwinsKeepTheKey(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn)
	rng := rand.New(rand.NewSource(5604))
	twins := []func(string) string{
		func(s string) string { return strings.ToUpper(s[:1]) + s[1:] },
		func(s string) string { return strings.Replace(s, "a", "à", 1) },
		func(s string) string { return strings.Replace(s, "a", "Á", 1) },
		func(string) string { return "" }, // a twin column íd in the table itself
	}
	for trial := 0; trial < 6; trial++ {
		guarded := fmt.Sprintf("twinacc%d", trial)
		pick := rng.Intn(len(twins))
		if trial == 0 {
			pick = len(twins) - 1
		}
		twin := twins[pick](guarded)
		after := trial%2 == 1
		cols := "id BIGINT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (id)"
		twinDDL := "CREATE TABLE " + myQuote(twin) + " (id VARCHAR(20) NOT NULL, region BIGINT NOT NULL, PRIMARY KEY (region)) ENGINE=InnoDB"
		if twin == "" {
			twin = guarded + ".íd"
			twinDDL = "ALTER TABLE " + myQuote(guarded) + " ADD COLUMN `íd` VARCHAR(20) NULL"
		}
		testdb.Exec(t, raw, "CREATE TABLE "+myQuote(guarded)+" ("+cols+") ENGINE=InnoDB")
		if !after {
			testdb.Exec(t, raw, twinDDL)
		}
		reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: guarded})
		if err != nil || len(fencetest.ReportProblems(reps)) > 0 {
			t.Errorf("trial %d: -apply of %q next to the twin %q: %v %q", trial, guarded, twin, err, fencetest.ReportProblems(reps))
			continue
		}
		if after {
			testdb.Exec(t, raw, twinDDL)
		}
		pool := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables="+guarded))
		q := myQuote(guarded)
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO "+q+" (id, balance) VALUES (1, 1)"); err != nil {
			t.Errorf("trial %d: %q, the twin %q created after -apply=%v: fresh INSERT: %v", trial, guarded, twin, after, err)
			pool.Close()
			continue
		}
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 200), "DELETE FROM "+q+" WHERE id = 1"); err != nil {
			t.Errorf("trial %d: %q: DELETE: %v", trial, guarded, err)
		}
		_, perr := pool.ExecContext(fencedsql.WithToken(ctx, 150), "INSERT INTO "+q+" (id, balance) VALUES (1, 666)")
		var n int
		raw.QueryRowContext(ctx, "SELECT count(*) FROM "+q+" WHERE id = 1").Scan(&n)
		if n != 0 || !errors.Is(perr, fencedsql.ErrFenced) {
			t.Errorf("trial %d: %q next to %q (after=%v): key 1 deleted under 200, re-INSERTed under 150 through the pool: %v, %d row(s); want ErrFenced, none", trial, guarded, twin, after, perr, n)
		}
		raw.ExecContext(ctx, "DELETE FROM "+q+" WHERE id = 1")
		_, rerr := raw.ExecContext(ctx, "INSERT INTO "+q+" (id, balance, fence_token, version) VALUES (1, 666, 150, 1)")
		raw.QueryRowContext(ctx, "SELECT count(*) FROM "+q+" WHERE id = 1").Scan(&n)
		if n != 0 {
			t.Errorf("trial %d: %q next to %q (after=%v): plain stale re-INSERT of key 1 (deleted at 200) under 150: %v, %d row(s); want the guard's refusal", trial, guarded, twin, after, rerr, n)
		}
		pool.Close()
		if reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: guarded}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
			t.Errorf("trial %d: %q next to %q (after=%v): Check: %v %q", trial, guarded, twin, after, err, fencetest.ReportProblems(reps))
		}
	}
}
