// Guarded tables named near MariaDB's 64-character limit: their derived trigger,
// tombstone table and routine names are cut and carry a 64-bit hash; an object of such
// a name that is another table's is refused at install; a guard installed under the
// 32-bit names of before is reported and replaced (red-team rt56a F5).

package mysql_test

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/hex"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

const longCols = " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, tok BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"

func longQ(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// newDerived is the dialect's derived name of prefix and table name (boundedTrigger).
func newDerived(prefix, name string) string {
	full := []rune(prefix + name)
	if len(full) <= 64 {
		return string(full)
	}
	sum := sha256.Sum256([]byte(name))
	return string(full[:64-17]) + "_" + hex.EncodeToString(sum[:8])
}

// oldDerived is the derived name a release before this one gave: a 32-bit FNV-1a hash.
func oldDerived(prefix, name string) string {
	full := []rune(prefix + name)
	if len(full) <= 64 {
		return string(full)
	}
	return string(full[:64-9]) + fmt.Sprintf("_%08x", fnv32(name))
}

func fnv32(s string) uint32 {
	h := uint32(2166136261)
	for i := 0; i < len(s); i++ {
		h ^= uint32(s[i])
		h *= 16777619
	}
	return h
}

// fnvCollision returns two distinct table names of 50 characters sharing their first
// 40 and their FNV-32a hash (a birthday search, seeded: about 2^16 tries): every name
// the dialect derived from them used to be one.
func fnvCollision(seed int64) (string, string) {
	prefix := "hash_" + strings.Repeat("q", 35)
	rng := rand.New(rand.NewSource(seed))
	seen := map[uint32]string{}
	buf := make([]byte, 10)
	for {
		for i := range buf {
			buf[i] = byte('a' + rng.Intn(26))
		}
		name := prefix + string(buf)
		h := fnv32(name)
		if other, ok := seen[h]; ok && other != name {
			return other, name
		}
		seen[h] = name
	}
}

func longAllOK(reps []schema.TableReport) bool {
	for _, r := range reps {
		if !r.OK() {
			return false
		}
	}
	return len(reps) > 0
}

// staleRefused checks that on table (guarded on tok, row 1 at token 10 and balance
// 100) a plain UPDATE lowering the token and a plain INSERT of key 2, deleted under
// token 200, under token 150 are refused.
func staleRefused(t *testing.T, ctx context.Context, raw *sql.DB, table, tok, what string) {
	t.Helper()
	q := longQ(table)
	raw.ExecContext(ctx, "UPDATE "+q+" SET balance = -1, "+tok+" = 5, version = version + 1 WHERE id = 1")
	var bal int64
	if err := raw.QueryRowContext(ctx, "SELECT balance FROM "+q+" WHERE id = 1").Scan(&bal); err != nil || bal != 100 {
		t.Errorf("%s: a stale plain UPDATE of %s lowering %s 10 -> 5: balance %d (%v); want 100", what, table, tok, bal, err)
		raw.ExecContext(ctx, "UPDATE "+q+" SET balance = 100, "+tok+" = 10 WHERE id = 1")
	}
	raw.ExecContext(ctx, "INSERT INTO "+q+" (id, balance, "+tok+", version) VALUES (2, 5, 150, 1)")
	var n int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+q+" WHERE id = 2").Scan(&n); err != nil || n != 0 {
		t.Errorf("%s: a stale plain INSERT into %s of a key deleted under 200, under 150: %d rows (%v); want refused", what, table, n, err)
		raw.ExecContext(ctx, "DELETE FROM "+q+" WHERE id = 2")
	}
}

// seedLong creates table (longCols) with row 1 at token 10 (column tok) and a key 2
// deleted under token 200 once the tombstone guard is installed (deleteKey).
func seedLong(t *testing.T, raw *sql.DB, table, tok string) {
	t.Helper()
	testdb.Exec(t, raw, "CREATE TABLE "+longQ(table)+longCols,
		"INSERT INTO "+longQ(table)+" (id, balance, "+tok+", version) VALUES (1, 100, 10, 1), (2, 1, 200, 1)")
}

func deleteKey(t *testing.T, raw *sql.DB, table string) {
	t.Helper()
	testdb.Exec(t, raw, "DELETE FROM "+longQ(table)+" WHERE id = 2")
}

// TestFNVCollidingNamesOwnGuards (red-team rt56a F5): two table names sharing their
// first 40 characters and the 32-bit FNV hash the derived names used to carry (found
// by a birthday search at run time) shared every trigger, tombstone table and routine
// name. Now each has its own: guarded on different token columns, both keep refusing
// stale writes, after the other's -apply, after the other is re-guarded on another
// column, and after the other is dropped.
func TestFNVCollidingNamesOwnGuards(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	a, b := fnvCollision(5707)
	for _, p := range []string{"fencedsql_guard_", "fencedsql_tomb_", "fencedsql_tombdel_", "fencedsql_tombclaim_"} {
		if oldDerived(p, a) != oldDerived(p, b) {
			t.Fatalf("%s and %s: old names %s, %s differ", a, b, oldDerived(p, a), oldDerived(p, b))
		}
	}
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn)
	seedLong(t, raw, a, "tok")
	seedLong(t, raw, b, "fence_token")
	specA := schema.GuardSpec{Table: a, TokenColumn: "tok", VersionColumn: "version"}
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, specA); err != nil || !longAllOK(reps) {
		t.Fatalf("apply %s: %v %q", a, err, fencetest.ReportProblems(reps))
	}
	deleteKey(t, raw, a)
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: b}); err != nil || !longAllOK(reps) {
		t.Fatalf("apply %s: %v %q", b, err, fencetest.ReportProblems(reps))
	}
	deleteKey(t, raw, b)
	staleRefused(t, ctx, raw, a, "tok", "after "+b+"'s -apply")
	staleRefused(t, ctx, raw, b, "fence_token", "after its -apply")
	if reps, err := schema.Check(ctx, raw, mysql.Dialect, specA); err != nil || !longAllOK(reps) {
		t.Errorf("Check of %s after %s's -apply: %v %q", a, b, err, fencetest.ReportProblems(reps))
	}
	// b re-guarded on tok: a's guard stays its own.
	testdb.Exec(t, raw, "UPDATE "+longQ(b)+" SET tok = fence_token, version = version + 1")
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: b, TokenColumn: "tok", VersionColumn: "version"}); err != nil || !longAllOK(reps) {
		t.Fatalf("re-apply %s on tok: %v %q", b, err, fencetest.ReportProblems(reps))
	}
	staleRefused(t, ctx, raw, a, "tok", "after "+b+" was re-guarded")
	staleRefused(t, ctx, raw, b, "tok", "re-guarded on tok")
	testdb.Exec(t, raw, "DROP TABLE "+longQ(b))
	staleRefused(t, ctx, raw, a, "tok", "after "+b+" was dropped")
	if reps, err := schema.Check(ctx, raw, mysql.Dialect, specA); err != nil || !longAllOK(reps) {
		t.Errorf("Check of %s after %s was dropped: %v %q", a, b, err, fencetest.ReportProblems(reps))
	}
}

// TestDerivedNameOfAnotherTableRefused (red-team rt56a F5, the install-time check): a
// table whose guard trigger name, tombstone table name or absence recorder name spells
// another table's hashed one would take it over (DROP TRIGGER IF EXISTS; CREATE TABLE
// IF NOT EXISTS; DROP PROCEDURE IF EXISTS). Its install is refused (error 1050, before any of the refused objects is
// created) and the first table keeps refusing stale writes.
func TestDerivedNameOfAnotherTableRefused(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn)
	long := "own_" + strings.Repeat("l", 56)
	guardTwin := newDerived("fencedsql_guard_", long)[len("fencedsql_guard_"):]
	tombTwin := newDerived("fencedsql_tomb_", long)[len("fencedsql_tomb_"):]
	claimTwin := newDerived("fencedsql_tombclaim_", long)[len("fencedsql_tombclaim_"):]
	seedLong(t, raw, long, "tok")
	spec := schema.GuardSpec{Table: long, TokenColumn: "tok", VersionColumn: "version"}
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, spec); err != nil || !longAllOK(reps) {
		t.Fatalf("apply %s: %v %q", long, err, fencetest.ReportProblems(reps))
	}
	deleteKey(t, raw, long)
	for _, twin := range []string{guardTwin, tombTwin, claimTwin} {
		testdb.Exec(t, raw, "CREATE TABLE "+longQ(twin)+longCols)
		_, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: twin})
		var me *gomysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1050 || !strings.Contains(me.Message, "another table") {
			t.Errorf("apply %s, whose derived name is %s's: %v; want the install refused (1050, another table's object)", twin, long, err)
		}
		staleRefused(t, ctx, raw, long, "tok", "after "+twin+"'s refused -apply")
		if reps, err := schema.Check(ctx, raw, mysql.Dialect, spec); err != nil || !longAllOK(reps) {
			t.Errorf("Check of %s after %s's refused install: %v %q", long, twin, err, fencetest.ReportProblems(reps))
		}
	}
}

// TestLongNameOldHashedGuardReported (upgrade, red-team rt56a F5): a guard and
// tombstone guard installed by a release that named a long table's objects with the
// 32-bit hash sit under other names than this release derives. Simulated by moving
// this release's triggers and tombstone table to the old names: Check reports the
// table with a Fix, the Fix converges, the tombstones recorded under the old names are
// carried over, and stale writes are refused afterwards.
func TestLongNameOldHashedGuardReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn)
	raw.SetMaxOpenConns(1)
	long := "upg_" + strings.Repeat("u", 50) + "é中"
	seedLong(t, raw, long, "fence_token")
	spec := schema.GuardSpec{Table: long}
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, spec); err != nil || !longAllOK(reps) {
		t.Fatalf("apply %s: %v %q", long, err, fencetest.ReportProblems(reps))
	}
	deleteKey(t, raw, long)
	rows, err := raw.QueryContext(ctx, "SELECT TRIGGER_NAME, ACTION_TIMING, EVENT_MANIPULATION, ACTION_STATEMENT FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = ?", long)
	if err != nil {
		t.Fatal(err)
	}
	type trig struct{ name, timing, event, body string }
	var trigs []trig
	for rows.Next() {
		var tr trig
		if err := rows.Scan(&tr.name, &tr.timing, &tr.event, &tr.body); err != nil {
			t.Fatal(err)
		}
		trigs = append(trigs, tr)
	}
	rows.Close()
	if len(trigs) != 6 {
		t.Fatalf("%d triggers on %s; want 6", len(trigs), long)
	}
	newTomb, oldTomb := newDerived("fencedsql_tomb_", long), oldDerived("fencedsql_tomb_", long)
	testdb.Exec(t, raw, "RENAME TABLE "+longQ(newTomb)+" TO "+longQ(oldTomb), "ALTER TABLE "+longQ(oldTomb)+" COMMENT = ''")
	for _, tr := range trigs {
		prefix := ""
		for _, p := range []string{"fencedsql_guard_", "fencedsql_floor_", "fencedsql_tombrep_", "fencedsql_tombdel_", "fencedsql_tombins_", "fencedsql_tombkey_"} {
			if tr.name == newDerived(p, long) {
				prefix = p
			}
		}
		if prefix == "" {
			t.Fatalf("trigger %s on %s: not one of its derived names", tr.name, long)
		}
		testdb.Exec(t, raw, "DROP TRIGGER "+longQ(tr.name),
			"CREATE TRIGGER "+longQ(oldDerived(prefix, long))+" "+tr.timing+" "+tr.event+" ON "+longQ(long)+" FOR EACH ROW "+strings.ReplaceAll(tr.body, newTomb, oldTomb))
	}
	for _, r := range []struct{ kind, prefix string }{{"PROCEDURE", "fencedsql_tombclaim_"}, {"FUNCTION", "fencedsql_fence_"}} {
		var name, mode, def string
		var rest [3]sql.NullString
		if err := raw.QueryRowContext(ctx, "SHOW CREATE "+r.kind+" "+longQ(newDerived(r.prefix, long))).Scan(&name, &mode, &def, &rest[0], &rest[1], &rest[2]); err != nil {
			t.Fatal(err)
		}
		def = strings.ReplaceAll(strings.Replace(def, newDerived(r.prefix, long), oldDerived(r.prefix, long), 1), newTomb, oldTomb)
		testdb.Exec(t, raw, "DROP "+r.kind+" "+longQ(newDerived(r.prefix, long)), def)
	}
	staleRefused(t, ctx, raw, long, "fence_token", "under the old names")
	reps, err := schema.Check(ctx, raw, mysql.Dialect, spec)
	if err != nil || longAllOK(reps) || len(reps) != 1 || len(reps[0].Fix) == 0 {
		t.Fatalf("Check of a guard under the old names: %v %q; want it reported with a Fix", err, fencetest.ReportProblems(reps))
	}
	t.Logf("Check under the old names: %q", fencetest.ReportProblems(reps))
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, spec); err != nil || !longAllOK(reps) {
		t.Fatalf("apply after the upgrade: %v %q", err, fencetest.ReportProblems(reps))
	}
	var old int
	if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND TRIGGER_NAME LIKE '%\\_________'").Scan(&old); err != nil || old != 0 {
		t.Errorf("%d triggers of the old names left after the upgrade (%v)", old, err)
	}
	staleRefused(t, ctx, raw, long, "fence_token", "after the upgrade's Fix")
}

// TestLongMultibyteNames: guarded tables named with 2- and 3-byte characters up to
// MariaDB's 64-character limit (so their derived names are cut at a character, not a
// byte, and hashed) install, re-install to a converged Check, and refuse stale writes.
func TestLongMultibyteNames(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	dsn := testdb.MySQL(t)
	raw := testdb.Open(t, "mysql", dsn)
	rng := rand.New(rand.NewSource(5708))
	pieces := []string{"a", "z", "_", "é", "ß", "中", "日", "ж"}
	for trial := 0; trial < 3; trial++ {
		var b strings.Builder
		b.WriteString(fmt.Sprintf("mb%d_", trial))
		for n, limit := 4, 50+rng.Intn(15); n < limit; n++ {
			b.WriteString(pieces[rng.Intn(len(pieces))])
		}
		name := b.String()
		seedLong(t, raw, name, "fence_token")
		spec := schema.GuardSpec{Table: name}
		if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, spec); err != nil || !longAllOK(reps) {
			t.Errorf("trial %d: apply %s: %v %q", trial, name, err, fencetest.ReportProblems(reps))
			continue
		}
		deleteKey(t, raw, name)
		staleRefused(t, ctx, raw, name, "fence_token", fmt.Sprintf("trial %d", trial))
		if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, spec); err != nil || !longAllOK(reps) {
			t.Errorf("trial %d: re-apply %s: %v %q", trial, name, err, fencetest.ReportProblems(reps))
		}
		var n int
		if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM information_schema.TRIGGERS WHERE TRIGGER_SCHEMA = DATABASE() AND EVENT_OBJECT_TABLE = ? AND TRIGGER_NAME = ?", name, newDerived("fencedsql_guard_", name)).Scan(&n); err != nil || n != 1 {
			t.Errorf("trial %d: the guard trigger of %s is not %s (%d, %v)", trial, name, newDerived("fencedsql_guard_", name), n, err)
		}
		staleRefused(t, ctx, raw, name, "fence_token", fmt.Sprintf("trial %d, re-applied", trial))
	}
}
