// A table named like a listed one in another schema, carrying the guard's triggers:
// in a schema a guard cannot name (a space, a quote, a backslash), the namesake's guard
// of the name covers it (fe6e201); in a plain one, it is guarded schema-qualified on its
// own guard's columns (red-team rt55c F1, rt56d).

package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"net/url"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// namesakeInSchema creates sch.accounts (fencing columns tok, ver) next to the guarded
// public.accounts (guardedAccounts) and installs its guard and tombstones with
// schema.Check's Fix (not registered: found by its triggers), on a session whose
// search_path names sch. It returns the quoted schema, the DSN and the admin pool.
func namesakeInSchema(t *testing.T, sch, tok, ver string) (q, dsn string, raw *sql.DB) {
	t.Helper()
	ctx, dsn, db := guardedAccounts(t)
	q = `"` + strings.ReplaceAll(sch, `"`, `""`) + `"`
	testdb.Exec(t, db, "CREATE SCHEMA "+q, "GRANT ALL ON SCHEMA "+q+" TO PUBLIC",
		fmt.Sprintf("CREATE TABLE %s.accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, %s BIGINT NOT NULL DEFAULT 0, %s BIGINT NOT NULL DEFAULT 0)", q, tok, ver),
		fmt.Sprintf("INSERT INTO %s.accounts (id, balance, %s, %s) VALUES (1, 5, 60, 1)", q, tok, ver))
	inSch := rawWith(t, withSearchPath(t, dsn, q))
	reps, err := schema.Check(ctx, inSch, postgres.Dialect, schema.GuardSpec{Table: "accounts", TokenColumn: tok, VersionColumn: ver})
	if err != nil {
		t.Fatalf("schema.Check of accounts through search_path %s: %v", q, err)
	}
	testdb.Exec(t, inSch, reps[0].Fix...)
	return q, dsn, db
}

// withSearchPath returns dsn with its search_path set to path.
func withSearchPath(t *testing.T, dsn, path string) string {
	t.Helper()
	u, err := url.Parse(dsn)
	if err != nil {
		t.Fatal(err)
	}
	v := u.Query()
	v.Set("search_path", path)
	u.RawQuery = strings.ReplaceAll(v.Encode(), "+", "%20")
	return u.String()
}

// TestOtherSchemaNamesakeTokenlessRefused (generator; red-team rt56d, held): the pool
// lists public.accounts (or accounts); accounts in another schema — plain (s2, the
// control) or one a guard cannot name ("odd sch", odd'q, b\s, "sp ace"; a dot is the
// known fail-closed limit) — carries the guard's triggers on the same columns. The
// pool guards it from its trigger record, schema-qualified or through its namesake's
// guard of the name. Oracle: a tokenless INSERT into it, schema-qualified or through a
// search_path naming its schema first, is refused with ErrNoToken and inserts nothing.
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed is time-based and logged;
// FENCEDSQL_SCHEDULES_ITERS sets the trials (default 4, about 3 s; the first two are
// fixed: s2 and "odd sch", qualified).
func TestOtherSchemaNamesakeTokenlessRefused(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 4)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d go test -run '^TestOtherSchemaNamesakeTokenlessRefused$' ./dialects/postgres/)", k.Seed, k.Seed)
	rng := rand.New(rand.NewSource(k.Seed))
	schemas := []string{"s2", "odd sch", `odd'q`, `b\s`, "sp ace"}
	for trial := 0; trial < k.Iters; trial++ {
		sch, qualified := schemas[rng.Intn(len(schemas))], rng.Intn(2) == 0
		listing := []string{"public.accounts", "accounts"}[rng.Intn(2)]
		switch trial {
		case 0:
			sch, listing, qualified = "s2", "public.accounts", true
		case 1:
			sch, listing, qualified = "odd sch", "public.accounts", true
		}
		if !qualified {
			// On a search_path naming the other schema first, an unqualified listing
			// names the other table itself.
			listing = "public.accounts"
		}
		t.Run(fmt.Sprintf("%d_%s_%s_qualified=%v", trial, sch, listing, qualified), func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
			defer cancel()
			q, dsn, raw := namesakeInSchema(t, sch, "fence_token", "version")
			poolDSN, target := dsn, q+".accounts"
			if !qualified {
				poolDSN, target = withSearchPath(t, dsn, q+", public"), "accounts"
			}
			db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(poolDSN, "fenced_tables="+url.QueryEscape(listing)))
			if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "INSERT INTO public.accounts (id, balance) VALUES (7, 1)"); err != nil {
				t.Fatalf("fenced INSERT into the listed public.accounts: %v", err)
			}
			_, err := db.ExecContext(ctx, "INSERT INTO "+target+" (id, balance) VALUES (9, 1)")
			var n int
			if err2 := raw.QueryRowContext(ctx, "SELECT count(*) FROM "+q+".accounts WHERE id = 9").Scan(&n); err2 != nil {
				t.Fatal(err2)
			}
			if n != 0 || !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("tokenless INSERT into %s.accounts (carrying the guard's triggers) through a pool listing %s: rows %d, err %v; want ErrNoToken and no row", q, listing, n, err)
			}
		})
	}
}

// TestOtherSchemaNamesakeOtherColumns (red-team rt56d, held): accounts in another
// schema carries a guard on other fencing columns (tok2, ver2) than its listed
// namesake's. Oracle: a stale UPDATE, upsert or DELETE (token 10, row written under 60)
// through the pool never changes the row and is refused typed: for a schema a guard
// cannot name, or a listing of the bare name (which covers every namesake), the
// *SchemaError of the namesake's columns; for the plain schema s2 beside a listing of
// public.accounts, the table's own guard on tok2 (ErrFenced). A write under the current
// token is fenced on tok2 there, and refused typed elsewhere. (The guard's refusal
// names the relation accounts and its schema s2: read by its schema, it is s2's own
// guard's on tok2, ErrFenced; read by the bare name, it was taken for
// public.accounts', whose columns it does not name, and came back as the driver's
// 23502.)
func TestOtherSchemaNamesakeOtherColumns(t *testing.T) {
	for _, sch := range []string{"s2", "odd sch", `odd'q`} {
		for _, listing := range []string{"accounts", "public.accounts"} {
			t.Run(sch+"_"+listing, func(t *testing.T) {
				ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
				defer cancel()
				q, dsn, raw := namesakeInSchema(t, sch, "tok2", "ver2")
				db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(dsn, "fenced_tables="+url.QueryEscape(listing)))
				ownGuard := sch == "s2" && listing == "public.accounts"
				for _, w := range []struct {
					q   string
					tok uint64
				}{
					{"UPDATE " + q + ".accounts SET balance = 99 WHERE id = 1", 10},
					{"INSERT INTO " + q + ".accounts (id, balance) VALUES (1, 98) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance", 10},
					{"DELETE FROM " + q + ".accounts WHERE id = 1", 10},
					{"UPDATE " + q + ".accounts SET balance = 7 WHERE id = 1", 70},
				} {
					_, err := db.ExecContext(fencedsql.WithToken(ctx, w.tok), w.q)
					var bal, tok int64
					if err2 := raw.QueryRowContext(ctx, "SELECT balance, tok2 FROM "+q+".accounts WHERE id = 1").Scan(&bal, &tok); err2 != nil {
						t.Fatalf("after %s under %d (err %v): %v", w.q, w.tok, err, err2)
					}
					var se *fencedsql.SchemaError
					switch {
					case w.tok == 10 && (bal != 5 || tok != 60):
						t.Errorf("FAIL-OPEN: stale %s under 10 changed the row: balance %d tok2 %d (err %v)", w.q, bal, tok, err)
					case w.tok == 70 && ownGuard:
						if err != nil || bal != 7 || tok != 70 {
							t.Errorf("%s under the current token 70, fenced on tok2: err %v, balance %d tok2 %d", w.q, err, bal, tok)
						}
					case ownGuard:
						if errors.Is(err, fencedsql.ErrFenced) {
							break
						}
						t.Errorf("stale %s under 10: %v (%T); want ErrFenced", w.q, err, err)
					case !errors.As(err, &se):
						t.Errorf("%s under %d through a pool listing %s: %v (%T); want the *SchemaError of the namesake's columns", w.q, w.tok, listing, err, err)
					}
				}
			})
		}
	}
}
