package mysql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The absence recorder judged (docs/design.md, "A claim of an absent key"; the
// MySQL/MariaDB leftovers of red-team rt45b F4/F7): a claim of an absent key on a table
// whose tombstone triggers are there but whose recorder of this version is not
// (dropped, of an older version) records nothing — it is refused with ErrUnsupported,
// as on PostgreSQL; a recorder whose text (body, parameters, COMMENT, SQL SECURITY,
// sql_mode) is not the installer's is a door, which the lazy check refuses
// (ErrSchema) and schema.Check reports with the recorder's install statements as Fix.

// claimAfterRecorderChange opens a pool on dsn after the recorder was changed, claims
// the absent key 20 of acc under 70 and commits, then lets a stale holder (60) insert
// the key through the pool. It returns the claim's error and the stale INSERT's.
func claimAfterRecorderChange(t *testing.T, dsn string) (claimErr, staleErr error) {
	t.Helper()
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables=acc,pair"))
	ctx70 := fencedsql.WithToken(context.Background(), 70)
	tx, err := db.BeginTx(ctx70, nil)
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	claimErr = tx.QueryRowContext(ctx70, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20).Scan(&id)
	if errors.Is(claimErr, sql.ErrNoRows) {
		claimErr = tx.Commit()
	} else {
		tx.Rollback() //nolint:errcheck
	}
	return claimErr, writeAs(db, 60, "INSERT INTO acc (id) VALUES (20)")
}

// TestMySQLClaimWithoutRecorderRefused: the tombstone triggers are on acc but no
// recorder of this version is (dropped; an older version's): the claim of an absent
// key used to answer "absent" having recorded nothing, and the stale holder's INSERT
// landed after it. It is refused with ErrUnsupported, nothing recorded.
func TestMySQLClaimWithoutRecorderRefused(t *testing.T) {
	for _, c := range []struct {
		name   string
		change func(t *testing.T, admin *sql.DB)
	}{
		{"Dropped", func(t *testing.T, admin *sql.DB) {
			testdb.Exec(t, admin, "DROP PROCEDURE fencedsql_tombclaim_acc")
		}},
		{"PreviousVersion", func(t *testing.T, admin *sql.DB) {
			testdb.Exec(t, admin, mysql.PreviousAbsenceDDL(2, dialect.TableName{Name: "acc"}, []dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}, "fence_token")...)
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			dsn, admin, _ := absentMy(t)
			c.change(t, admin)
			claimErr, staleErr := claimAfterRecorderChange(t, dsn)
			if !errors.Is(claimErr, fencedsql.ErrUnsupported) {
				t.Errorf("claim of an absent key without the recorder: %v, want ErrUnsupported (then the stale INSERT under 60: %v)", claimErr, staleErr)
			}
			if got := tombToken(t, admin, "acc", "id = 20"); got != 0 {
				t.Errorf("tombstone of 20 after the refused claim: %d, want none", got)
			}
		})
	}
}

// TestMySQLRecorderJudgedWhole: a procedure of the recorder's name with this version's
// COMMENT and parameters but not its text — an older version's body, a body that
// records nothing, SQL SECURITY INVOKER, created in a non-strict sql_mode — used to
// pass the check by COMMENT (and ownRecorder accepted an older body under the current
// COMMENT: a stale claim answered "absent" instead of ErrFenced). schema.Check reports
// it with the recorder's install statements as its Fix, and the claim is refused.
func TestMySQLRecorderJudgedWhole(t *testing.T) {
	acc := dialect.TableName{Name: "acc"}
	key := []dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}
	withMarker := func(v int) func(t *testing.T, admin *sql.DB) {
		return func(t *testing.T, admin *sql.DB) {
			ddl := mysql.PreviousAbsenceDDL(v, acc, key, "fence_token")
			ddl[1] = strings.Replace(ddl[1], "fencedsql absence recorder v"+string(rune('0'+v)), mysql.AbsenceMarker, 1)
			testdb.Exec(t, admin, ddl...)
		}
	}
	ownDDL := mysql.AbsenceDDL(acc, key, "fence_token")
	for _, c := range []struct {
		name   string
		change func(t *testing.T, admin *sql.DB)
	}{
		{"Version1BodyCurrentComment", withMarker(1)},
		{"Version2BodyCurrentComment", withMarker(2)},
		{"RecordsNothing", func(t *testing.T, admin *sql.DB) {
			testdb.Exec(t, admin, "DROP PROCEDURE fencedsql_tombclaim_acc",
				"CREATE PROCEDURE fencedsql_tombclaim_acc(fencedsql_k1 LONGTEXT CHARACTER SET utf8mb4, fencedsql_tok BIGINT) MODIFIES SQL DATA SQL SECURITY DEFINER COMMENT '"+mysql.AbsenceMarker+"'\nBEGIN\nEND")
		}},
		{"SecurityInvoker", func(t *testing.T, admin *sql.DB) {
			testdb.Exec(t, admin, ownDDL[0], strings.Replace(ownDDL[1], "SQL SECURITY DEFINER", "SQL SECURITY INVOKER", 1))
		}},
		{"NonStrictMode", func(t *testing.T, admin *sql.DB) {
			ctx := context.Background()
			conn, err := admin.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			for _, s := range []string{"SET SESSION sql_mode = ''", ownDDL[0], ownDDL[1]} {
				if _, err := conn.ExecContext(ctx, s); err != nil {
					t.Fatal(err)
				}
			}
			conn.Raw(func(any) error { return driver.ErrBadConn }) //nolint:errcheck // the session's sql_mode goes with it
		}},
	} {
		t.Run(c.name, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 3*time.Minute)
			defer cancel()
			dsn, admin, _ := absentMy(t)
			c.change(t, admin)
			reports, err := schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
			if err != nil {
				t.Fatal(err)
			}
			reported, fixed := false, false
			for _, r := range reports {
				for _, p := range r.Problems {
					if strings.Contains(p, "fencedsql_tombclaim_acc") || strings.Contains(p, "tombstone") {
						reported = true
					}
				}
				for _, s := range r.Fix {
					if strings.Contains(s, "CREATE PROCEDURE") && strings.Contains(s, "fencedsql_tombclaim_acc") {
						fixed = true
					}
				}
			}
			claimErr, staleErr := claimAfterRecorderChange(t, dsn)
			if !errors.Is(claimErr, fencedsql.ErrSchema) && !errors.Is(claimErr, fencedsql.ErrUnsupported) {
				t.Errorf("claim of an absent key through the changed recorder: %v, want it refused (ErrSchema or ErrUnsupported); the stale INSERT under 60 after it: %v", claimErr, staleErr)
			}
			if !reported || !fixed {
				t.Errorf("schema.Check over the changed recorder: %+v, want it reported with a Fix re-creating it", reports)
			}
			for _, r := range reports {
				testdb.Exec(t, admin, r.Fix...)
			}
			reports, err = schema.Check(ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "acc"})
			if err != nil {
				t.Fatal(err)
			}
			for _, r := range reports {
				if len(r.Problems) != 0 || len(r.Fix) != 0 {
					t.Errorf("schema.Check after the Fix: %v %v, want nothing", r.Problems, r.Fix)
				}
			}
		})
	}
}
