package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A stale claim of an absent key is fenced (red-team rt44e F2, absence recorder v3): a
// key whose tombstone holds a newer token than the claim's — deleted under it, or
// claimed absent under it — is the newer holder's, and an older holder's claim of it
// fails with ErrFenced (a *FencedError carrying the claim's token), as the same claim
// of a row written under the newer token does, instead of reporting the key absent.
// The transaction records nothing (its Commit fails) and the tombstone keeps its token.

// tombOf is the token of acc's tombstone of id (0: none).
func tombOf(t *testing.T, raw *sql.DB, table string, where string, args ...any) int64 {
	t.Helper()
	var tok int64
	if err := raw.QueryRow("SELECT fence_token FROM fencedsql_tomb_"+table+" WHERE "+where, args...).Scan(&tok); err != nil && !errors.Is(err, sql.ErrNoRows) {
		t.Fatal(err)
	}
	return tok
}

// staleAbsentSetup makes key 20 of acc (and ('eu', 20) of pair) the newer holder's at
// 70: deleted under 70, or claimed absent under 70.
func staleAbsentSetup(t *testing.T, db *sql.DB, how string) {
	t.Helper()
	switch how {
	case "deleted under 70":
		for _, q := range []string{"INSERT INTO acc (id) VALUES (20)", `INSERT INTO pair ("Region", n) VALUES ('eu', 20)`} {
			if err := insertAs(db, 50, q); err != nil {
				t.Fatal(err)
			}
		}
		for _, q := range []string{"DELETE FROM acc WHERE id = 20", `DELETE FROM pair WHERE "Region" = 'eu' AND n = 20`} {
			if err := insertAs(db, 70, q); err != nil {
				t.Fatal(err)
			}
		}
	case "claimed absent under 70":
		claimAbsent(t, db, 70, true, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 20)
		claimAbsent(t, db, 70, true, `SELECT n FROM pair WHERE "Region" = $1 AND n = $2 FOR UPDATE`, "eu", 20)
	}
}

func TestStaleClaimOfAbsentKeyFenced(t *testing.T) {
	claims := []struct{ name, q string }{
		{"one statement", "SELECT id FROM acc WHERE id = $1 FOR UPDATE"},
		{"two statements", "SELECT id FROM acc WHERE id = $1 ORDER BY id LIMIT 1 FOR UPDATE"},
		{"nowait", "SELECT id FROM acc WHERE id = $1 FOR UPDATE NOWAIT"},
		{"literal", "SELECT id FROM acc WHERE id = 20 FOR NO KEY UPDATE"},
		{"two-column key", `SELECT n FROM pair WHERE "Region" = 'eu' AND n = $1 FOR UPDATE`},
	}
	for _, how := range []string{"deleted under 70", "claimed absent under 70"} {
		t.Run(how, func(t *testing.T) {
			raw, db := absentAcc(t)
			staleAbsentSetup(t, db, how)
			for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
				for _, c := range claims {
					t.Run(iso.String()+"/"+c.name, func(t *testing.T) {
						ctx := fencedsql.WithToken(context.Background(), 60)
						tx, err := db.BeginTx(ctx, &sql.TxOptions{Isolation: iso})
						if err != nil {
							t.Fatal(err)
						}
						defer tx.Rollback() //nolint:errcheck
						var args []any
						if strings.Contains(c.q, "$1") {
							args = append(args, 20)
						}
						var id int64
						err = tx.QueryRowContext(ctx, c.q, args...).Scan(&id)
						var fe *fencedsql.FencedError
						if !errors.Is(err, fencedsql.ErrFenced) || !errors.As(err, &fe) || fe.Token != 60 {
							t.Fatalf("claim under 60 of a key the holder of 70 owns: %v, want a *FencedError with token 60", err)
						}
						if err := tx.Commit(); err == nil {
							t.Fatal("the fenced claim's transaction committed")
						}
					})
				}
			}
			if got, got2 := tombOf(t, raw, "acc", "id = 20"), tombOf(t, raw, "pair", `"Region" = 'eu' AND n = 20`); got != 70 || got2 != 70 {
				t.Fatalf("tombstones after the fenced claims: %d, %d, want 70", got, got2)
			}
			// The holder of 70 re-claims the key (equal token) and a newer holder claims
			// it: both absent; the stale holder's INSERT stays refused.
			claimAbsent(t, db, 70, true, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 20)
			claimAbsent(t, db, 70, true, `SELECT n FROM pair WHERE "Region" = $1 AND n = $2 FOR UPDATE`, "eu", 20)
			if got := tombOf(t, raw, "acc", "id = 20"); got != 70 {
				t.Fatalf("tombstone after the equal claim: %d, want 70", got)
			}
			claimAbsent(t, db, 80, true, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 20)
			if got := tombOf(t, raw, "acc", "id = 20"); got != 80 {
				t.Fatalf("tombstone after the newer claim: %d, want 80", got)
			}
			if err := insertAs(db, 60, "INSERT INTO acc (id) VALUES (20)"); !errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("stale INSERT after the claims: %v, want ErrFenced", err)
			}
		})
	}
}

// TestAbsenceRecorderUpgradedFromPrevious: a database whose recorder is an earlier
// version's (v2, no fence check; v3, no collation rule for an over-long value; v4, no
// refusal under row security forced on its owner; v5, READ UNCOMMITTED judged as a
// snapshot level) reports
// the tombstone guard as not installed, and not the recorder as a guard writer (it is
// the guard's own); the Fix re-creates it, and the stale claim is fenced.
func TestAbsenceRecorderUpgradedFromPrevious(t *testing.T) {
	for _, v := range []int{2, 3, 4, 5} {
		t.Run(fmt.Sprintf("v%d", v), func(t *testing.T) { absenceRecorderUpgradedFrom(t, v) })
	}
}

func absenceRecorderUpgradedFrom(t *testing.T, v int) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	raw, db, dsn := absentAccDSN(t)
	key := []dialect.KeyColumn{{Name: "id", Type: "bigint"}}
	testdb.Exec(t, raw, postgres.PreviousAbsenceDDL(v, dialect.TableName{Schema: "public", Name: "acc"}, key, "fence_token")...)
	var src string
	if err := raw.QueryRow("SELECT prosrc FROM pg_proc WHERE proname = 'fencedsql_tombclaim_acc'").Scan(&src); err != nil || !strings.Contains(src, fmt.Sprintf("fencedsql absence recorder v%d\n", v)) {
		t.Fatalf("previous recorder not installed: %v", err)
	}
	reports, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "acc"})
	if err != nil {
		t.Fatal(err)
	}
	recreated := false
	for _, r := range reports {
		for _, p := range r.Problems {
			if strings.Contains(p, "fencedsql_tombclaim_acc") {
				t.Errorf("the previous recorder reported as a door: %s", p)
			}
		}
		for _, s := range r.Fix {
			if strings.Contains(s, "fencedsql_tombclaim_acc") && strings.Contains(s, "CREATE OR REPLACE FUNCTION") {
				recreated = true
			}
		}
	}
	if !recreated {
		t.Fatalf("schema.Check over the previous recorder: %+v, want a Fix re-creating it", reports)
	}
	for _, r := range reports {
		testdb.Exec(t, raw, r.Fix...)
	}
	db = testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc,pair")
	staleAbsentSetup(t, db, "deleted under 70")
	tctx := fencedsql.WithToken(ctx, 60)
	tx, err := db.BeginTx(tctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var id int64
	if err := tx.QueryRowContext(tctx, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 20).Scan(&id); !errors.Is(err, fencedsql.ErrFenced) {
		t.Fatalf("claim after the upgrade: %v, want ErrFenced", err)
	}
}

// TestStaleClaimOfAbsentKeyFencedAfterWait: the newer holder's claim of the absent key
// is uncommitted when the older holder's claim records; the record waits for it, and
// once it commits, judges its token: READ COMMITTED fails with ErrFenced, REPEATABLE
// READ and SERIALIZABLE with a serialization failure (the snapshot predates the
// tombstone), whose retry is ErrFenced. A rolled-back newer claim leaves the key
// absent to the older one.
func TestStaleClaimOfAbsentKeyFencedAfterWait(t *testing.T) {
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead, sql.LevelSerializable} {
		for _, commit := range []bool{true, false} {
			name := iso.String() + "/newer claim rolled back"
			if commit {
				name = iso.String() + "/newer claim committed"
			}
			t.Run(name, func(t *testing.T) {
				raw, db := absentAcc(t)
				ctx, cancel := context.WithTimeout(context.Background(), 20*time.Second)
				defer cancel()
				newer := fencedsql.WithToken(ctx, 70)
				ntx, err := db.BeginTx(newer, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer ntx.Rollback() //nolint:errcheck
				var id int64
				if err := ntx.QueryRowContext(newer, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 20).Scan(&id); !errors.Is(err, sql.ErrNoRows) {
					t.Fatal(err)
				}
				stale := fencedsql.WithToken(ctx, 60)
				done := make(chan error, 1)
				go func() {
					tx, err := db.BeginTx(stale, &sql.TxOptions{Isolation: iso})
					if err != nil {
						done <- err
						return
					}
					defer tx.Rollback() //nolint:errcheck
					var id int64
					if err := tx.QueryRowContext(stale, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 20).Scan(&id); err != nil {
						done <- err
						return
					}
					done <- tx.Commit()
				}()
				waitBlocked(t, raw, "fencedsql_tombclaim_acc")
				if commit {
					err = ntx.Commit()
				} else {
					err = ntx.Rollback()
				}
				if err != nil {
					t.Fatal(err)
				}
				err = <-done
				switch {
				case !commit:
					if !errors.Is(err, sql.ErrNoRows) && !(iso != sql.LevelReadCommitted && errors.Is(err, fencedsql.ErrClaimConflict)) {
						t.Fatalf("claim under 60 after the newer claim rolled back: %v, want no row", err)
					}
					return
				case iso == sql.LevelReadCommitted:
					if !errors.Is(err, fencedsql.ErrFenced) {
						t.Fatalf("claim under 60 after the claim under 70 committed: %v, want ErrFenced", err)
					}
				default:
					if err == nil || errors.Is(err, sql.ErrNoRows) {
						t.Fatalf("claim under 60 after the claim under 70 committed: %v, want a failure", err)
					}
				}
				if got := tombOf(t, raw, "acc", "id = 20"); got != 70 {
					t.Fatalf("tombstone: %d, want 70", got)
				}
				tx, err := db.BeginTx(stale, &sql.TxOptions{Isolation: iso})
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck
				if err := tx.QueryRowContext(stale, "SELECT id FROM acc WHERE id = $1 FOR UPDATE", 20).Scan(&id); !errors.Is(err, fencedsql.ErrFenced) {
					t.Fatalf("retried claim under 60: %v, want ErrFenced", err)
				}
			})
		}
	}
}
