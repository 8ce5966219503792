package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestClaimsUnderContentionExactAndOrdered (red-team rt46e, held), MariaDB: many goroutines under tokens in
// random order claim overlapping rows (SELECT … FOR UPDATE) in a transaction and log
// their token per row while holding the locks. Each claim is exact or fails typed;
// per row the committed tokens increase in commit order.
func TestClaimsUnderContentionExactAndOrdered(t *testing.T) {
	for _, c := range []struct {
		iso  sql.IsolationLevel
		pred string
	}{
		{sql.LevelDefault, ""},
		{sql.LevelReadCommitted, "balance < 40 ORDER BY balance, id LIMIT 2"},
		{sql.LevelDefault, "balance < 40"},
	} {
		t.Run(c.iso.String()+"/"+c.pred, func(t *testing.T) { claimContention(t, c.iso, c.pred) })
	}
}

func claimContention(t *testing.T, iso sql.IsolationLevel, pred string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	admin := testdb.Open(t, "mysql", dsn,
		"CREATE TABLE accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO accounts (id) VALUES (1),(2),(3),(4),(5),(6)",
		"CREATE TABLE claim_contention_log (seq BIGINT AUTO_INCREMENT PRIMARY KEY, id BIGINT, tok BIGINT)")
	fencetest.Guard(t, ctx, admin, mysql.Dialect, schema.GuardSpec{Table: "accounts"})
	// A claim that waits out a lock wait fails typed (1205): a short wait keeps the
	// test fast.
	db := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn+"&fenced_tables=accounts", "innodb_lock_wait_timeout=2"))
	db.SetMaxOpenConns(8)

	const n = 8
	toks := rand.Perm(n)
	var wg sync.WaitGroup
	var mu sync.Mutex
	var bad []string
	for i := range n {
		tok := uint64(toks[i] + 1)
		ids := rand.Perm(6)[:2+rand.IntN(3)]
		for j := range ids {
			ids[j]++
		}
		wg.Add(1)
		go func() {
			defer wg.Done()
			err := func() error {
				tctx := fencedsql.WithToken(ctx, tok)
				tx, err := db.BeginTx(tctx, &sql.TxOptions{Isolation: iso})
				if err != nil {
					return err
				}
				defer tx.Rollback() //nolint:errcheck
				var in []string
				for _, id := range ids {
					in = append(in, fmt.Sprint(id))
				}
				q := fmt.Sprintf("SELECT id, fence_token FROM accounts WHERE id IN (%s) ORDER BY id FOR UPDATE", strings.Join(in, ","))
				if pred != "" {
					q = "SELECT id, fence_token FROM accounts WHERE " + pred + " FOR UPDATE"
				}
				rows, err := tx.QueryContext(tctx, q)
				if err != nil {
					return err
				}
				var got []int
				for rows.Next() {
					var id int
					var ft int64
					if err := rows.Scan(&id, &ft); err != nil {
						rows.Close()
						return err
					}
					if uint64(ft) != tok {
						mu.Lock()
						bad = append(bad, fmt.Sprintf("token %d: row %d returned with fence_token %d", tok, id, ft))
						mu.Unlock()
					}
					got = append(got, id)
				}
				if err := rows.Err(); err != nil {
					return err
				}
				want := append([]int(nil), ids...)
				sort.Ints(want)
				if pred == "" && fmt.Sprint(got) != fmt.Sprint(want) {
					mu.Lock()
					bad = append(bad, fmt.Sprintf("token %d: claimed %v, returned %v", tok, want, got))
					mu.Unlock()
				}
				if pred != "" {
					ids = nil
					for _, id := range got {
						ids = append(ids, id)
					}
				}
				for _, id := range ids {
					if pred != "" {
						if _, err := tx.ExecContext(tctx, "UPDATE accounts SET balance = balance + 7 WHERE id = ?", id); err != nil {
							return err
						}
					}
					if _, err := tx.ExecContext(tctx, "INSERT INTO claim_contention_log (id, tok) VALUES (?, ?)", id, tok); err != nil {
						return err
					}
				}
				return tx.Commit()
			}()
			if err == nil || errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrClaimConflict) {
				return
			}
			var me *gomysql.MySQLError
			if errors.As(err, &me) && (me.Number == 1213 || me.Number == 1205) {
				return
			}
			var se *fencedsql.SessionError
			if errors.As(err, &se) && se.Setting == "timestamp" {
				// Fail-closed, seen on a heavily loaded shared server: the session
				// query stalled past clockTolerance (docs/design.md, Known open
				// findings). Nothing was written; not what this test checks.
				t.Logf("token %d: %v (known open finding: session clock check under load)", tok, err)
				return
			}
			mu.Lock()
			bad = append(bad, fmt.Sprintf("token %d: untyped error %T: %v", tok, err, err))
			mu.Unlock()
		}()
	}
	wg.Wait()
	for _, b := range bad {
		t.Error(b)
	}
	rows, err := admin.QueryContext(ctx, "SELECT id, tok FROM claim_contention_log ORDER BY seq")
	if err != nil {
		t.Fatal(err)
	}
	defer rows.Close()
	last := map[int64]int64{}
	commits := 0
	for rows.Next() {
		var id, tok int64
		if err := rows.Scan(&id, &tok); err != nil {
			t.Fatal(err)
		}
		commits++
		if tok <= last[id] {
			t.Errorf("row %d: token %d committed after token %d", id, tok, last[id])
		}
		last[id] = tok
	}
	t.Logf("%d row commits", commits)
}
