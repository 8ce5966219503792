// Guarded tables named at PostgreSQL's limits: names longer than the 63 bytes the
// server keeps, their hashed derived objects, keyword names (red-team rt56a F3, F5).

package postgres_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
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

// longName generates a plain identifier (as dialect.PlainIdent accepts it) of about n
// bytes, starting with prefix, mixing ASCII and 2-, 3- and 4-byte UTF-8 characters.
func longName(rng *rand.Rand, prefix string, n int) string {
	pieces := []string{"a", "b", "z", "_", "é", "ß", "中", "日", "😀", "𝔸"}
	var b strings.Builder
	b.WriteString(prefix)
	for b.Len() < n {
		b.WriteString(pieces[rng.Intn(len(pieces))])
	}
	return b.String()
}

func longTrunc(s string) string {
	if len(s) <= 63 {
		return s
	}
	n := 63
	for n > 0 && s[n]&0xC0 == 0x80 {
		n--
	}
	return s[:n]
}

func longQ(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }

func longAllOK(reps []schema.TableReport) bool {
	for _, r := range reps {
		if !r.OK() {
			return false
		}
	}
	return len(reps) > 0
}

// TestLongNameRecordedCheckConverges (red-team rt56a F3): a table whose name is
// longer than 63 bytes, installed by -apply -tables <name as written>, is recorded by
// the registry under that name and by its triggers under the catalog's 63 bytes; both
// are one table (dialect.SameRecordedName) and derive one set of guard objects
// (boundedName on the kept name), so the recorded tables' Check is OK right after
// -apply and stays OK after its own Fix.
func TestLongNameRecordedCheckConverges(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	full := "rt56a_conv_" + strings.Repeat("y", 60)
	raw := rawWith(t, dsn, "CREATE TABLE "+full+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: full}); err != nil || !reps[0].OK() {
		t.Fatalf("apply %q: %v %q", full, err, fencetest.ReportProblems(reps))
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect)
	if err != nil || !longAllOK(reps) {
		t.Errorf("Check of the recorded tables right after -apply -tables %s: %v %q", full, err, fencetest.ReportProblems(reps))
	}
	if _, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true); err != nil {
		t.Fatal(err)
	}
	reps, err = schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: full})
	if err != nil || !longAllOK(reps) {
		t.Errorf("Check of %s after the recorded tables' Fix: %v %q", full, err, fencetest.ReportProblems(reps))
	}
}

// fnvCollision returns two distinct table names of 50 bytes sharing their first 40
// and their FNV-32a hash (a birthday search, seeded: about 2^16 tries).
func fnvCollision(seed int64) (string, string) {
	prefix := "rt56a_hash_" + strings.Repeat("q", 29) // 40 bytes
	rng := rand.New(rand.NewSource(seed))
	seen := map[uint32]string{}
	buf := make([]byte, 10)
	for {
		for i := range buf {
			buf[i] = byte('a' + rng.Intn(26))
		}
		name := prefix + string(buf)
		h := uint32(2166136261)
		for i := 0; i < len(name); i++ {
			h ^= uint32(name[i])
			h *= 16777619
		}
		if other, ok := seen[h]; ok && other != name {
			return other, name
		}
		seen[h] = name
	}
}

// TestFNVCollidingNamesOwnGuards (red-team rt56a F5): two names sharing their first
// 40 bytes and the 32-bit FNV hash the derived names used to carry (found by a birthday
// search at run time) shared every guard object, and the second table's -apply made the
// first's guard check the second's token column. Now each has its own: a stale plain
// write to the first table, lowering its token tok, is refused by the database.
func TestFNVCollidingNamesOwnGuards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	a, b := fnvCollision(5607)
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn,
		"CREATE TABLE "+a+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, tok BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE "+b+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO "+a+" (id, balance, tok, version) VALUES (1, 100, 10, 1)")
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: a, TokenColumn: "tok", VersionColumn: "version"}); err != nil || !longAllOK(reps) {
		t.Fatalf("apply %s: %v %q", a, err, fencetest.ReportProblems(reps))
	}
	reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: b})
	if err != nil {
		var ce *schema.ConfigError
		if errors.As(err, &ce) {
			return // refused, typed
		}
		t.Fatalf("apply %s: %v", b, err)
	}
	reps2, err2 := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: a, TokenColumn: "tok", VersionColumn: "version"})
	_, werr := raw.ExecContext(ctx, "UPDATE "+a+" SET balance = -1, tok = 5, version = version + 1 WHERE id = 1")
	var bal int64
	raw.QueryRowContext(ctx, "SELECT balance FROM "+a+" WHERE id = 1").Scan(&bal)
	if bal != 100 {
		t.Errorf("%s and %s (same FNV-32a hash) guarded on tok and fence_token: after %s's -apply (%q), a plain UPDATE of %s lowering tok 10 -> 5: %v, balance %d; %s's Check: %v %q; want the guard's refusal", a, b, b, fencetest.ReportProblems(reps), a, werr, bal, a, err2, fencetest.ReportProblems(reps2))
	}
}

// TestLongNameSpellings: a guarded table whose name is longer than 63 bytes (ASCII or
// multibyte, the cut falling inside a character or not) is installed by -apply under
// one spelling; the pool lists it under that spelling or the server's truncated one,
// and -apply is re-run under the other. After every step a stale UPDATE and a stale
// re-INSERT of a key deleted under a newer token are refused (pool and plain writes).
func TestLongNameSpellings(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn)
	seed := int64(5601)
	rng := rand.New(rand.NewSource(seed))
	for trial := 0; trial < 3; trial++ {
		full := longName(rng, fmt.Sprintf("rt56a_%d_", trial), 64+rng.Intn(40))
		short := longTrunc(full)
		tbl := short
		testdb.Exec(t, raw, "CREATE TABLE "+longQ(tbl)+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)")
		installAs, poolAs, reapplyAs := full, short, ""
		switch trial % 3 {
		case 1:
			installAs, poolAs, reapplyAs = short, full, full
		case 2:
			installAs, poolAs, reapplyAs = full, full, short
		}
		step := func(what string) {
			t.Helper()
			pool := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables="+url.QueryEscape(poolAs))
			defer pool.Close()
			id := int64(rng.Intn(1 << 30))
			q := longQ(poolAs)
			if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO "+q+" (id, balance) VALUES ($1, 1)", id); err != nil {
				t.Errorf("trial %d (%s) %q: fresh INSERT: %v", trial, what, full, err)
				return
			}
			if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 90), "UPDATE "+q+" SET balance = 2 WHERE id = $1", id); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("trial %d (%s) %q: stale UPDATE: %v; want ErrFenced", trial, what, full, err)
			}
			if _, err := pool.ExecContext(ctx, "UPDATE "+q+" SET balance = 3 WHERE id = $1", id); !errors.Is(err, fencedsql.ErrNoToken) {
				t.Errorf("trial %d (%s) %q: tokenless UPDATE: %v; want ErrNoToken", trial, what, full, err)
			}
			if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 200), "DELETE FROM "+q+" WHERE id = $1", id); err != nil {
				t.Errorf("trial %d (%s) %q: DELETE: %v", trial, what, full, err)
				return
			}
			if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 150), "INSERT INTO "+q+" (id, balance) VALUES ($1, 4)", id); !errors.Is(err, fencedsql.ErrFenced) {
				t.Errorf("trial %d (%s) %q: stale re-INSERT through the pool: %v; want ErrFenced", trial, what, full, err)
			}
			_, perr := raw.ExecContext(ctx, "INSERT INTO "+longQ(tbl)+" (id, balance, fence_token, version) VALUES ($1, 5, 150, 1)", id)
			var n int
			if err := raw.QueryRowContext(ctx, "SELECT count(*) FROM "+longQ(tbl)+" WHERE id = $1", id).Scan(&n); err != nil {
				t.Fatal(err)
			}
			if n != 0 {
				t.Errorf("trial %d (%s) %q: plain stale re-INSERT of a key deleted at 200 under 150 accepted (err %v)", trial, what, full, perr)
				raw.ExecContext(ctx, "DELETE FROM "+longQ(tbl)+" WHERE id = $1", id)
			}
		}
		reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: installAs})
		if err != nil || !reps[0].OK() {
			t.Errorf("trial %d %q: apply as %q: %v %q", trial, full, installAs, err, fencetest.ReportProblems(reps))
			continue
		}
		step("installed as " + installAs)
		if reapplyAs != "" {
			reps, err = fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: reapplyAs})
			if err != nil || !longAllOK(reps) {
				t.Errorf("trial %d %q: re-apply as %q: %v %q", trial, full, reapplyAs, err, fencetest.ReportProblems(reps))
			}
			step("re-applied as " + reapplyAs)
		}
	}
}

// TestLongNameListedColumnsMismatch: a table named past 63 bytes, guarded on tok; a
// pool listing it (full or truncated spelling) on the default columns with the schema
// check off is refused (ErrSchema/ErrFenced), the row unchanged.
func TestLongNameListedColumnsMismatch(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	rng := rand.New(rand.NewSource(5602))
	for trial := 0; trial < 3; trial++ {
		full := longName(rng, fmt.Sprintf("rt56a_cols_%d_", trial), 70+rng.Intn(30))
		if trial == 0 {
			full = fmt.Sprintf("rt56a_cols_%d_", trial) + strings.Repeat("x", 60)
		}
		short := longTrunc(full)
		raw := rawWith(t, dsn, "CREATE TABLE "+longQ(full)+` (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0,
			fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, tok BIGINT NOT NULL DEFAULT 0)`,
			"INSERT INTO "+longQ(short)+" (id, balance) VALUES (1, 0)")
		if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: full, TokenColumn: "tok", VersionColumn: "version"}); err != nil || !reps[0].OK() {
			t.Fatalf("apply %q on tok: %v %q", full, err, fencetest.ReportProblems(reps))
		}
		good := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables="+url.QueryEscape(full)+"&fenced_token_column=tok")
		if _, err := good.ExecContext(fencedsql.WithToken(ctx, 10), "UPDATE "+longQ(full)+" SET balance = 100 WHERE id = 1"); err != nil {
			t.Fatalf("newer holder: %v", err)
		}
		good.Close()
		for _, listAs := range []string{full, short} {
			db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_schema_check=false&fenced_tables="+url.QueryEscape(listAs))
			_, err := db.ExecContext(fencedsql.WithToken(ctx, 5), "UPDATE "+longQ(listAs)+" SET balance = -1 WHERE id = 1")
			db.Close()
			var b, ft, tk int64
			if err := raw.QueryRowContext(ctx, "SELECT balance, fence_token, tok FROM "+longQ(short)+" WHERE id = 1").Scan(&b, &ft, &tk); err != nil {
				t.Fatal(err)
			}
			if b != 100 || !(errors.Is(err, fencedsql.ErrSchema) || errors.Is(err, fencedsql.ErrFenced)) {
				t.Errorf("table %q (%d bytes) guarded on tok, pool listing %q (%d bytes) on the default columns, check off: stale write under 5 after 10: %v; row balance=%d fence_token=%d tok=%d; want ErrSchema/ErrFenced and balance 100",
					full, len(full), listAs, len(listAs), err, b, ft, tk)
				raw.ExecContext(ctx, "UPDATE "+longQ(short)+" SET balance = 100, tok = 10 WHERE id = 1")
			}
		}
	}
}

// TestKeywordNames: guarded tables, schemas and fencing columns named like SQL
// keywords (quoted where the grammar needs it), in mixed case as written by the
// application (folded by the server), installed by -apply: stale UPDATE, tokenless
// UPDATE, stale re-INSERT after a newer DELETE are refused, through the pool and as
// plain writes.
func TestKeywordNames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 55*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw := rawWith(t, dsn)
	rng := rand.New(rand.NewSource(5608))
	kws := []string{"order", "user", "group", "table", "select", "limit", "window", "end", "check", "column", "default", "analyse", "offset", "returning", "with", "key", "exists", "loop"}
	for trial := 0; trial < 4; trial++ {
		tbl := kws[rng.Intn(len(kws))]
		sch := kws[rng.Intn(len(kws))]
		tok := kws[rng.Intn(len(kws))]
		ver := kws[rng.Intn(len(kws))]
		for ver == tok {
			ver = kws[rng.Intn(len(kws))]
		}
		sch = sch + "_s" // a distinct schema per trial
		sch = sch + strings.Repeat("x", trial)
		q := longQ(sch) + "." + longQ(tbl)
		testdb.Exec(t, raw, "CREATE SCHEMA "+longQ(sch),
			"CREATE TABLE "+q+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, "+longQ(tok)+" BIGINT NOT NULL DEFAULT 0, "+longQ(ver)+" BIGINT NOT NULL DEFAULT 0)")
		spec := schema.GuardSpec{Table: sch + "." + tbl, TokenColumn: tok, VersionColumn: ver}
		if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, spec); err != nil || !longAllOK(reps) {
			t.Errorf("trial %d: apply %+v: %v %q", trial, spec, err, fencetest.ReportProblems(reps))
			continue
		}
		pool := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables="+url.QueryEscape(spec.Table)+"&fenced_token_column="+tok+"&fenced_version_column="+ver)
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 100), "INSERT INTO "+q+" (id, balance) VALUES (1, 1)"); err != nil {
			t.Errorf("trial %d %s (%s, %s): INSERT: %v", trial, q, tok, ver, err)
			pool.Close()
			continue
		}
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 90), "UPDATE "+q+" AS x SET balance = 2 WHERE x.id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("trial %d %s: stale UPDATE: %v", trial, q, err)
		}
		if _, err := pool.ExecContext(ctx, "UPDATE "+q+" SET balance = 2 WHERE id = 1"); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Errorf("trial %d %s: tokenless UPDATE: %v", trial, q, err)
		}
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 200), "DELETE FROM "+q+" WHERE id = 1"); err != nil {
			t.Errorf("trial %d %s: DELETE: %v", trial, q, err)
		}
		if _, err := pool.ExecContext(fencedsql.WithToken(ctx, 150), "INSERT INTO "+q+" (id, balance) VALUES (1, 3) ON CONFLICT (id) DO UPDATE SET balance = 4"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("trial %d %s: stale upsert of a deleted key: %v", trial, q, err)
		}
		raw.ExecContext(ctx, "INSERT INTO "+q+" (id, balance, "+longQ(tok)+", "+longQ(ver)+") VALUES (1, 5, 150, 1)")
		var n int
		raw.QueryRowContext(ctx, "SELECT count(*) FROM "+q+" WHERE id = 1").Scan(&n)
		if n != 0 {
			t.Errorf("trial %d %s: plain stale re-INSERT accepted", trial, q)
		}
		pool.Close()
	}
}

// hashedSpelling returns a table name of under 63 bytes whose guard function name,
// "fencedsql_guard_" and the name, is the hashed guard function name of long (an
// ASCII name longer than 47 bytes), as the PostgreSQL dialect derives it: from the
// name as the server keeps it.
func hashedSpelling(long string) string {
	long = longTrunc(long)
	full := "fencedsql_guard_" + long
	sum := sha256.Sum256([]byte(long))
	return full[len("fencedsql_guard_"):63-17] + "_" + hex.EncodeToString(sum[:8])
}

// TestDerivedObjectOfAnotherTableRefused (red-team rt56a F5, the install-time check):
// a table whose name spells another table's hashed guard function name would take
// that function over (CREATE OR REPLACE), its columns replacing the other's. The
// install refuses it (duplicate_object, nothing installed) and the first table's
// guard keeps refusing a stale plain write.
func TestDerivedObjectOfAnotherTableRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	raw, long, short := guardedLongAndItsSpelling(ctx, t, dsn)
	_, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: short})
	if err == nil || !strings.Contains(err.Error(), "42710") {
		t.Errorf("apply %s, whose guard function is %s's: %v; want the install refused (duplicate_object)", short, long, err)
	}
	raw.ExecContext(ctx, "UPDATE "+long+" SET balance = -1, tok = 5, version = version + 1 WHERE id = 1")
	var bal int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM "+long+" WHERE id = 1").Scan(&bal); err != nil || bal != 100 {
		t.Errorf("a stale plain write to %s after %s's -apply: balance %d (%v); want 100", long, short, bal, err)
	}
	if reps, err := schema.Check(ctx, raw, postgres.Dialect, schema.GuardSpec{Table: long, TokenColumn: "tok", VersionColumn: "version"}); err != nil || !longAllOK(reps) {
		t.Errorf("Check of %s after the refused install: %v %q", long, err, fencetest.ReportProblems(reps))
	}
}

// TestLongNameOldHashedObjectsReported (upgrade, red-team rt56a F5): a guard installed
// by a release that named a long table's objects with the 32-bit hash has them under
// other names than this release derives. Simulated by renaming this release's guard
// and tombstone functions (the triggers follow them by oid): Check reports the guard
// with a Fix instead of taking the old objects as the guard, the Fix converges, and
// a stale write is refused afterwards.
func TestLongNameOldHashedObjectsReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
	defer cancel()
	dsn := testdb.Postgres(t)
	long := "upg_" + strings.Repeat("u", 60)
	raw := rawWith(t, dsn,
		"CREATE TABLE "+long+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO "+long+" (id, balance, fence_token, version) VALUES (1, 100, 10, 1)")
	spec := schema.GuardSpec{Table: long}
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, spec); err != nil || !longAllOK(reps) {
		t.Fatalf("apply %s: %v %q", long, err, fencetest.ReportProblems(reps))
	}
	for _, prefix := range []string{"fencedsql_guard_", "fencedsql_tombstone_"} {
		var fn string
		if err := raw.QueryRowContext(ctx, "SELECT p.oid::regprocedure::text FROM pg_proc p WHERE p.proname LIKE $1", prefix+"upg_%").Scan(&fn); err != nil {
			t.Fatal(err)
		}
		testdb.Exec(t, raw, "ALTER FUNCTION "+fn+" RENAME TO "+longQ(prefix+"upg_uuuu_0badc0de"))
	}
	reps, err := schema.Check(ctx, raw, postgres.Dialect, spec)
	if err != nil || longAllOK(reps) || len(reps) != 1 || len(reps[0].Fix) == 0 {
		t.Fatalf("Check of a guard under the old names: %v %q; want it reported with a Fix", err, fencetest.ReportProblems(reps))
	}
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, spec); err != nil || !longAllOK(reps) {
		t.Fatalf("apply after the upgrade: %v %q", err, fencetest.ReportProblems(reps))
	}
	raw.ExecContext(ctx, "UPDATE "+long+" SET balance = -1, fence_token = 5, version = version + 1 WHERE id = 1")
	var bal int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM "+longTrunc(long)+" WHERE id = 1").Scan(&bal); err != nil || bal != 100 {
		t.Errorf("stale plain write after the upgrade's Fix: balance %d (%v); want 100", bal, err)
	}
}

// guardedLongAndItsSpelling creates a table with a name longer than 63 bytes, guarded
// on tok and version with one row (id 1, token 10), and an unguarded table short whose
// name spells the long table's hashed guard function name (hashedSpelling).
func guardedLongAndItsSpelling(ctx context.Context, t *testing.T, dsn string) (raw *sql.DB, long, short string) {
	t.Helper()
	long = "own_" + strings.Repeat("l", 60)
	short = hashedSpelling(long)
	raw = rawWith(t, dsn,
		"CREATE TABLE "+long+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, tok BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE "+longQ(short)+" (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"INSERT INTO "+long+" (id, balance, tok, version) VALUES (1, 100, 10, 1)")
	if reps, err := fencetest.ApplyRounds(ctx, raw, postgres.Dialect, true, schema.GuardSpec{Table: long, TokenColumn: "tok", VersionColumn: "version"}); err != nil || !longAllOK(reps) {
		t.Fatalf("apply %s: %v %q", long, err, fencetest.ReportProblems(reps))
	}
	return raw, long, short
}
