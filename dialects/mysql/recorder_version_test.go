package mysql_test

// The absence recorder must be judged whole: an older version's body under the
// current version's COMMENT is outdated, reported by schema.Check (and refused by the
// lazy check), not taken for the current recorder (red-team rt46b F1). The fix is the
// recorder's whole-text judgement (branch fix46k); these tests fail without it.

import (
	"context"
	"database/sql"
	"errors"
	"strconv"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestRecorderOlderBodyUnderCurrentCommentReported (rt46b F1): the absence recorder re-created
// with version 1's body (no strict-mode check, no refusal of a stale claim: GREATEST)
// but version 3's COMMENT passes both checks: AbsenceRecorderQuery /
// TombstoneInstalledQuery read the COMMENT (v3: installed), and the routine-door
// judge (ownRecorder → ownAbsence) accepts any version's body as the guard's own. A
// stale claim of a key deleted under a newer token then succeeds instead of ErrFenced.
func TestRecorderOlderBodyUnderCurrentCommentReported(t *testing.T) {
	for _, v := range []int{1} {
		t.Run(strconv.Itoa(v), func(t *testing.T) {
			_, admin, db := absentMy(t)
			key := []dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}
			ddl := mysql.PreviousAbsenceDDL(v, dialect.TableName{Name: "acc"}, key, "fence_token")
			ddl[1] = strings.Replace(ddl[1], "fencedsql absence recorder v"+strconv.Itoa(v), mysql.AbsenceMarker, 1)
			testdb.Exec(t, admin, ddl...)
			problems := accCheckProblems(t, admin)

			// Key 7 inserted and deleted under 70: its tombstone holds 70.
			if err := writeAs(db, 70, "INSERT INTO acc (id) VALUES (7)"); err != nil {
				t.Fatal(err)
			}
			if err := writeAs(db, 70, "DELETE FROM acc WHERE id = 7"); err != nil {
				t.Fatal(err)
			}
			// A stale holder (60) claims key 7 absent.
			ctx := fencedsql.WithToken(context.Background(), 60)
			tx, err := db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			var id int64
			claimErr := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 7).Scan(&id)
			_ = tx.Rollback()
			if len(problems) == 0 && !errors.Is(claimErr, fencedsql.ErrFenced) && !errors.Is(claimErr, fencedsql.ErrSchema) {
				t.Fatalf("recorder v%d body under the v3 COMMENT: schema.Check reports nothing, and a stale claim (60) of a key deleted under 70 gives %v, want ErrFenced (or the lazy check's ErrSchema)", v, claimErr)
			}
		})
	}
}

// TestRecorderV2BodyUnderCurrentCommentReported (rt46b F1): F1 with version 2's body under the
// v3 COMMENT. Both checks pass it (the COMMENT says v3, ownAbsence accepts the v2
// body), and v2 has no lookup: under READ COMMITTED an older holder's INSERT committed
// between the claim's fencing UPDATE and the recorder's CALL lands, and the claim
// answers "absent" and commits (the rt45a F1 fail-open, back through an outdated
// recorder the checks call current).
func TestRecorderV2BodyUnderCurrentCommentReported(t *testing.T) {
	dsn, admin, _ := absentMy(t)
	key := []dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}
	ddl := mysql.PreviousAbsenceDDL(2, dialect.TableName{Name: "acc"}, key, "fence_token")
	ddl[1] = strings.Replace(ddl[1], "fencedsql absence recorder v2", mysql.AbsenceMarker, 1)
	testdb.Exec(t, admin, ddl...)
	problems := accCheckProblems(t, admin)

	cfg, err := gomysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	cfg.Net = recheckNet()
	db, err := sql.Open("fenced-mysql", cfg.FormatDSN()+"&fenced_tables=acc,pair")
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxIdleConns(4)
	if err := writeAs(db, 1, "UPDATE acc SET balance = 0 WHERE id = 99"); err != nil {
		t.Fatal(err)
	}
	staleErr := make(chan error, 1)
	recheckMu.Lock()
	recheckHook = func() {
		_, err := admin.Exec("INSERT INTO acc (id, balance, fence_token) VALUES (20, 666, 60)")
		staleErr <- err
	}
	recheckMu.Unlock()
	defer func() { recheckMu.Lock(); recheckHook = nil; recheckMu.Unlock() }()

	ctx := fencedsql.WithToken(context.Background(), 70)
	tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		t.Fatal(err)
	}
	var id int64
	claimErr := tx.QueryRowContext(ctx, "SELECT id FROM acc WHERE id = ? FOR UPDATE", 20).Scan(&id)
	commitErr := tx.Commit()
	select {
	case e := <-staleErr:
		if e != nil {
			t.Logf("stale insert: %v", e)
		}
	case <-time.After(3 * time.Second):
	}
	var tok int64
	rowErr := admin.QueryRow("SELECT fence_token FROM acc WHERE id = 20").Scan(&tok)
	if len(problems) == 0 && rowErr == nil && tok < 70 && errors.Is(claimErr, sql.ErrNoRows) && commitErr == nil {
		t.Fatalf("recorder v2 body under the v3 COMMENT: schema.Check reports nothing; the claim under 70 (READ COMMITTED) answered absent and committed while an older holder's row of key 20 (token %d) landed in between; want a problem reported or ErrClaimConflict", tok)
	}
}
