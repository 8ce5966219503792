package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMySQLAbsentClaimOverlongValueUnderCollation: a claim's key value longer than the
// key column (VARCHAR(4)/CHAR(4)) that still compares equal to a key the column can
// hold under the column's collation — an ignorable character (U+200B, U+200D, U+0000,
// U+00AD under UCA 14) or a combining mark (U+0301) after 'abcd' under the
// utf8mb4_unicode*/uca1400 collations — matches row 'abcd' in the claim's WHERE; the
// recorder recorded nothing for it ("too long: no row of it can exist") and an older
// holder's INSERT of 'abcd' landed (red-team rt45a F2). The recorder now refuses such a
// value under a collation where a longer value may equal a storable key
// (ErrUnsupported); under utf8mb4_general_ci (no such value) it still records nothing.
func TestMySQLAbsentClaimOverlongValueUnderCollation(t *testing.T) {
	cols := []string{
		"VARCHAR(4) COLLATE utf8mb4_unicode_ci",
		"VARCHAR(4) COLLATE utf8mb4_general_ci",
		"VARCHAR(4) COLLATE utf8mb4_unicode_520_ci",
		"CHAR(4) COLLATE utf8mb4_unicode_ci",
		"VARCHAR(4) COLLATE utf8mb4_uca1400_ai_ci",
	}
	for i, ct := range cols {
		t.Run(fmt.Sprint(i), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
			defer cancel()
			dsn := testdb.MySQL(t)
			admin := testdb.Open(t, "mysql", dsn)
			if _, err := admin.Exec("CREATE TABLE k (name " + ct + " NOT NULL PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"); err != nil {
				t.Skip(err)
			}
			reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "k"})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reports {
				testdb.Exec(t, admin, r.Fix...)
			}
			db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=k"))
			for _, claimed := range []string{"abcd\u200b", "abcd\u0301", "abcd\u00ad", "abcd\x00", "abcd\u200d"} {
				var eq int
				admin.QueryRow("SELECT CAST(? AS CHAR CHARACTER SET utf8mb4) COLLATE "+collOf(ct)+" = 'abcd'", claimed).Scan(&eq)
				ctx70 := fencedsql.WithToken(ctx, 70)
				tx, _ := db.BeginTx(ctx70, nil)
				var got []byte
				err := tx.QueryRowContext(ctx70, "SELECT name FROM k WHERE name = ? FOR UPDATE", claimed).Scan(&got)
				cerr := tx.Commit()
				_, ierr := admin.Exec("INSERT INTO k (name, fence_token) VALUES ('abcd', 60)")
				t.Logf("%s claimed %q (equal to 'abcd': %d): claim %v commit %v; plain INSERT 'abcd' under 60: %v", ct, claimed, eq, err, cerr, ierr)
				if eq == 1 && errors.Is(err, sql.ErrNoRows) && cerr == nil && ierr == nil {
					t.Errorf("fail-open: %s", claimed)
				}
				if eq == 1 && !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Errorf("claim of %q: %v, want ErrUnsupported", claimed, err)
				}
				if strings.Contains(ct, "general_ci") && !errors.Is(err, sql.ErrNoRows) {
					t.Errorf("claim of %q (equal to no storable key): %v, want sql.ErrNoRows", claimed, err)
				}
				admin.Exec("DELETE FROM k")
				admin.Exec("DELETE FROM fencedsql_tomb_k")
			}
		})
	}
}

func collOf(ct string) string {
	for i := len(ct) - 1; i >= 0; i-- {
		if ct[i] == ' ' {
			return ct[i+1:]
		}
	}
	return ct
}
