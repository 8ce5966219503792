// A guarded table written unqualified, whose schema — resolved from the catalog through
// the search_path — is not a plain identifier (red-team rt56d F4): the schema tool and
// the pool take the catalog's spelling of it byte for byte (dialect.TableName's
// ExactSchema), never fold it or hand it to the server unquoted.

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

// oddSchemaName generates a schema name that is not a plain identifier, or one whose
// spelling the server keeps only quoted: a space, a dot, a quote ("), an apostrophe,
// a backslash, upper-case ASCII, non-ASCII letters, a leading digit; up to 63 bytes.
func oddSchemaName(rng *rand.Rand) string {
	pieces := []string{"a", "b", "s", "Mixed", "X", " ", ".", `"`, `'`, `\`, "é", "Ü", "字", "ſ", "K", "1", "$", "_", "sch"}
	var b strings.Builder
	for n := 1 + rng.Intn(6); n > 0; n-- {
		p := pieces[rng.Intn(len(pieces))]
		if b.Len()+len(p) > 63 {
			break
		}
		b.WriteString(p)
	}
	return b.String()
}

// TestSearchPathOddSchemaGuarded (generator; red-team rt56d F4): accounts lives in a
// schema that is not a plain identifier ("odd sch", "Mixed", "a.b", "q""uote", a
// non-ASCII one, then generated ones: oddSchemaName) and is written unqualified, the
// DSN's search_path naming that schema. Oracle: fencedsql-schema -apply
// (fencetest.ApplyRounds: RegisterTables, Check, Fix) converges with no problem; the
// guard and tombstone objects are in that schema; through the pool a write under the
// current token lands, a stale UPDATE is refused with ErrFenced and changes nothing,
// a key deleted under the current token stays deleted against a stale INSERT
// (ErrFenced), as does a key claimed absent (SELECT … FOR UPDATE); the operator tools
// (PurgeTombstones, MaxToken, RaiseTokenFloor, TokenFloor) resolve the name as Check
// does, and the floor raised refuses a token below it. A schema with a dot in its name, which the wrapper cannot name (Known
// open findings), is guarded by the tool alike, and the pool refuses it typed
// (ErrSchema) and writes nothing. Before, Check failed with the server's 42602 (the schema handed to
// to_regclass unquoted) or gave a Fix naming the lower-cased schema.
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed is time-based and logged;
// FENCEDSQL_SCHEDULES_ITERS sets the trials (default 5, the five fixed names, about
// 5 s); the long form is FENCEDSQL_SCHEDULES_ITERS=40 (about 50 s).
func TestSearchPathOddSchemaGuarded(t *testing.T) {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 5)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d go test -run '^TestSearchPathOddSchemaGuarded$' ./dialects/postgres/)", k.Seed, k.Seed)
	rng := rand.New(rand.NewSource(k.Seed))
	fixed := []string{"odd sch", "Mixed", "a.b", `q"uote`, "Schéma ü"}
	for trial := 0; trial < k.Iters; trial++ {
		sch := oddSchemaName(rng)
		if trial < len(fixed) {
			sch = fixed[trial]
		}
		t.Run(fmt.Sprintf("%d_%q", trial, sch), func(t *testing.T) { oddSchemaGuarded(t, sch) })
	}
}

func oddSchemaGuarded(t *testing.T, sch string) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	q := `"` + strings.ReplaceAll(sch, `"`, `""`) + `"`
	admin := rawWith(t, dsn, "CREATE SCHEMA "+q, "GRANT ALL ON SCHEMA "+q+" TO PUBLIC",
		"CREATE TABLE "+q+".accounts (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO "+q+".accounts (id, balance, fence_token, version) VALUES (1, 5, 60, 1), (2, 5, 60, 1)")
	schDSN := withSearchPath(t, dsn, q)
	raw := rawWith(t, schDSN)
	reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: "accounts"})
	if err != nil {
		t.Fatalf("schema -apply through search_path %s: %v", q, err)
	}
	for _, r := range reps {
		if len(r.Fix) > 0 {
			t.Errorf("schema -apply through search_path %s did not converge: Fix %q", q, r.Fix)
		}
	}
	if p := fencetest.ReportProblems(reps); len(p) > 0 {
		t.Errorf("schema.Check through search_path %s after -apply: %q", q, p)
	}
	var guards, tomb int
	if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_trigger t JOIN pg_class c ON c.oid = t.tgrelid JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'accounts' AND NOT t.tgisinternal", sch).Scan(&guards); err != nil {
		t.Fatal(err)
	}
	if err := admin.QueryRowContext(ctx, "SELECT count(*) FROM pg_class c JOIN pg_namespace n ON n.oid = c.relnamespace WHERE n.nspname = $1 AND c.relname = 'fencedsql_tomb_accounts'", sch).Scan(&tomb); err != nil {
		t.Fatal(err)
	}
	if guards < 4 || tomb != 1 {
		t.Errorf("guards of %s.accounts: %d triggers, %d tombstone tables in that schema; want the guard's and the tombstone triggers and one tombstone table", q, guards, tomb)
	}

	db := testdb.Open(t, "fenced-pgx", fencetest.WithParam(schDSN, "fenced_tables="+url.QueryEscape("accounts")))
	if strings.Contains(sch, ".") {
		// A dot in a name the wrapper guards would be read as a qualifier (Known open
		// findings): the pool refuses to open on it, typed, and writes nothing.
		_, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 7 WHERE id = 1")
		var bal int64
		if err2 := admin.QueryRowContext(ctx, "SELECT balance FROM "+q+".accounts WHERE id = 1").Scan(&bal); err2 != nil {
			t.Fatal(err2)
		}
		if !errors.Is(err, fencedsql.ErrSchema) || bal != 5 {
			t.Errorf("UPDATE through a pool on search_path %s (a dot: the wrapper cannot name the table): err %v, balance %d; want ErrSchema and 5", q, err, bal)
		}
		oddSchemaTools(t, ctx, raw, q, 60)
		return
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "UPDATE accounts SET balance = 7 WHERE id = 1"); err != nil {
		t.Fatalf("UPDATE under the current token 70 through search_path %s: %v", q, err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE accounts SET balance = 99 WHERE id = 1")
	var bal int64
	if err2 := admin.QueryRowContext(ctx, "SELECT balance FROM "+q+".accounts WHERE id = 1").Scan(&bal); err2 != nil {
		t.Fatal(err2)
	}
	if bal != 7 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale UPDATE (10) after 70 through search_path %s: err %v, balance %d; want ErrFenced and 7", q, err, bal)
	}
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 70), "DELETE FROM accounts WHERE id = 2"); err != nil {
		t.Fatalf("DELETE under 70 through search_path %s: %v", q, err)
	}
	_, err = db.ExecContext(fencedsql.WithToken(ctx, 65), "INSERT INTO accounts (id, balance) VALUES (2, 666)")
	var n int
	if err2 := admin.QueryRowContext(ctx, "SELECT count(*) FROM "+q+".accounts WHERE id = 2").Scan(&n); err2 != nil {
		t.Fatal(err2)
	}
	if n != 0 || !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("stale INSERT (65) of key 2 deleted under 70, through search_path %s: err %v, rows %d; want ErrFenced and none", q, err, n)
	}
	// A claim of an absent key records it through the absence recorder in that schema.
	claimAbsent(t, db, 72, true, "SELECT id FROM accounts WHERE id = $1 FOR UPDATE", 3)
	if err := insertAs(db, 71, "INSERT INTO accounts (id, balance) VALUES (3, 1)"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("INSERT (71) of key 3 claimed absent under 72, through search_path %s: %v; want ErrFenced", q, err)
	}
	oddSchemaTools(t, ctx, raw, q, 72)
	if _, err := db.ExecContext(fencedsql.WithToken(ctx, 75), "UPDATE accounts SET balance = 8 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("UPDATE under 75, below the floor 80, through search_path %s: %v; want ErrFenced", q, err)
	}
}

// oddSchemaTools: the operator tools resolve the name as Check does — the tombstones
// (none older than an hour) are kept, the highest token is at least top, and the floor
// raised to 80 is the one the guards read (in the search_path's first schema).
func oddSchemaTools(t *testing.T, ctx context.Context, raw *sql.DB, q string, top uint64) {
	t.Helper()
	if purged, err := schema.PurgeTombstones(ctx, raw, postgres.Dialect, time.Hour, "accounts"); err != nil || purged != 0 {
		t.Errorf("PurgeTombstones(1h) through search_path %s: %d, %v; want 0, nil", q, purged, err)
	}
	if got, err := schema.MaxToken(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: "accounts"}); err != nil || got < top {
		t.Errorf("MaxToken through search_path %s: %d, %v; want at least %d", q, got, err, top)
	}
	if err := schema.RaiseTokenFloor(ctx, raw, postgres.Dialect, 80); err != nil {
		t.Errorf("RaiseTokenFloor(80) through search_path %s: %v", q, err)
	}
	if f, err := schema.TokenFloor(ctx, raw, postgres.Dialect); err != nil || f != 80 {
		t.Errorf("TokenFloor through search_path %s: %d, %v; want 80", q, f, err)
	}
}
