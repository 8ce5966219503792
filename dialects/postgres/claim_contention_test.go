package postgres_test

import (
	"context"
	"errors"
	"fmt"
	"math/rand/v2"
	"sort"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/jackc/pgx/v5/pgconn"
)

// TestClaimsUnderContentionExactAndOrdered (red-team rt46e, held): many goroutines, each under its own token
// (in random order), claim overlapping sets of rows with SELECT … FOR UPDATE in a
// transaction, then log their token per row in an unguarded table while the row locks
// are held. Each claim must be exact (the rows returned are the ids asked for, each
// stamped with the claim's token) or fail typed; per row, the committed tokens must
// increase in commit order (no older token wins after a newer committed).
func TestClaimsUnderContentionExactAndOrdered(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn, guardTableAccounts,
		"INSERT INTO accounts (id, balance) SELECT g, 0 FROM generate_series(1, 6) g",
		"CREATE TABLE claim_contention_log (seq BIGSERIAL PRIMARY KEY, id BIGINT, tok BIGINT)")
	reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatal(err)
	}
	testdb.Exec(t, raw, reps[0].Fix...)
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=accounts")
	db.SetMaxOpenConns(24)

	for k, fp := range [][2]string{{"id, fence_token", ""}, {"id, (SELECT fence_token)", ""},
		{"id, fence_token", "balance < 40 ORDER BY balance, id LIMIT 2"}, {"id, (SELECT fence_token)", "balance < 40"}, {"id, fence_token", "balance < 40"}} {
		form, pred := fp[0], fp[1]
		const n = 16
		toks := rand.Perm(n)
		var wg sync.WaitGroup
		var mu sync.Mutex
		var bad []string
		for i := range n {
			tok := uint64(1000000*(k+1) + toks[i] + 1)
			ids := rand.Perm(6)[:2+rand.IntN(3)]
			for j := range ids {
				ids[j]++
			}
			wg.Add(1)
			go func() {
				defer wg.Done()
				err := func() error {
					tctx := fencedsql.WithToken(ctx, tok)
					tx, err := db.BeginTx(tctx, nil)
					if err != nil {
						return err
					}
					defer tx.Rollback() //nolint:errcheck
					var in []string
					for _, id := range ids {
						in = append(in, fmt.Sprint(id))
					}
					q := fmt.Sprintf("SELECT %s FROM accounts WHERE id IN (%s) ORDER BY id FOR UPDATE", form, strings.Join(in, ","))
					if pred != "" {
						q = "SELECT " + form + " FROM accounts WHERE " + pred + " FOR UPDATE"
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
						ids = got
					}
					for _, id := range ids {
						if pred != "" {
							if _, err := tx.ExecContext(tctx, "UPDATE accounts SET balance = balance + 7 WHERE id = $1", id); err != nil {
								return err
							}
						}
						if _, err := tx.ExecContext(tctx, "INSERT INTO claim_contention_log (id, tok) VALUES ($1, $2)", id, tok); err != nil {
							return err
						}
					}
					return tx.Commit()
				}()
				if err == nil || errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrClaimConflict) {
					return
				}
				var pe *pgconn.PgError
				if errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001") {
					return
				}
				mu.Lock()
				bad = append(bad, fmt.Sprintf("token %d: untyped error %T: %v", tok, err, err))
				mu.Unlock()
			}()
		}
		wg.Wait()
		for _, b := range bad {
			t.Errorf("%s %s: %s", form, pred, b)
		}
		rows, err := raw.QueryContext(ctx, "SELECT id, tok FROM claim_contention_log ORDER BY seq")
		if err != nil {
			t.Fatal(err)
		}
		last := map[int64]int64{}
		commits := 0
		for rows.Next() {
			var id, tok int64
			if err := rows.Scan(&id, &tok); err != nil {
				t.Fatal(err)
			}
			commits++
			if tok <= last[id] {
				t.Errorf("%s: row %d: token %d committed after token %d", form, id, tok, last[id])
			}
			last[id] = tok
		}
		rows.Close()
		t.Logf("%s: %d row commits", form, commits)
		testdb.Exec(t, raw, "TRUNCATE claim_contention_log")
		base := uint64(1000000*(k+1) + 999)
		if _, err := db.ExecContext(fencedsql.WithToken(ctx, base), "UPDATE accounts SET balance = 0"); err != nil {
			t.Fatal(err)
		}
	}
}
