package mysql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand"
	"net/url"
	"os"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// caseFlips spell a name's case twin: all upper, the first letter upper, every other
// letter upper.
var caseFlips = []func(string) string{
	strings.ToUpper,
	func(s string) string { return strings.ToUpper(s[:1]) + s[1:] },
	func(s string) string {
		b := []byte(s)
		for i := 0; i < len(b); i += 2 {
			b[i] = strings.ToUpper(string(b[i]))[0]
		}
		return string(b)
	},
}

// needCaseSensitive fails the test unless the server keeps names' case
// (lower_case_table_names = 0: scripts/servers.sh starts such a server).
func needCaseSensitive(t *testing.T, ctx context.Context, raw *sql.DB) {
	t.Helper()
	var lcn int
	if err := raw.QueryRowContext(ctx, "SELECT @@lower_case_table_names").Scan(&lcn); err != nil {
		t.Fatal(err)
	}
	if lcn != 0 {
		t.Fatalf("lower_case_table_names = %d: this test needs a case-sensitive server (scripts/servers.sh starts one)", lcn)
	}
}

// TestDatabaseCaseTwinsGuarded (generator; G9): under lower_case_table_names = 0 the
// databases d and D (a case flip of d) are two databases, and the same guarded table is
// installed by the schema tool in both, in either order. information_schema compares
// its schema columns under utf8mb3_general_ci, and TRIGGERS (TRIGGER_SCHEMA) matches
// both databases' rows: the Check of one twin read the other's guard objects (its
// absence recorder "not its text"), and a REPLACE into the twin's table failed with the
// raw 1146. Oracle, in each twin through its own pool: -apply converges and the Check
// is clean (also after the other twin's install); a stale UPDATE is refused with
// ErrFenced and the current holder is not; a key deleted under the current token stays
// deleted against a stale INSERT, and a key deleted in one twin does not fence the
// other's; a qualified REPLACE into the twin's table through the other twin's pool
// succeeds for the current holder and is refused with ErrFenced when stale; no error is
// a raw 1146 or 1064.
func TestDatabaseCaseTwinsGuarded(t *testing.T) {
	admin := testdb.NeedServer(t, testdb.EnvMySQL, "MySQL/MariaDB")
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), 3)
	t.Logf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d go test -run '^TestDatabaseCaseTwinsGuarded$' ./dialects/mysql/)", k.Seed, k.Seed)
	rng := rand.New(rand.NewSource(k.Seed))
	for trial := 0; trial < k.Iters; trial++ {
		lower := fmt.Sprintf("casetw_%d_%d_%d", os.Getpid(), k.Seed%10000, trial)
		flip := caseFlips[trial%len(caseFlips)]
		if trial >= len(caseFlips) {
			flip = caseFlips[rng.Intn(len(caseFlips))]
		}
		table := []string{"acc", "Konto"}[rng.Intn(2)]
		upperFirst := rng.Intn(2) == 0
		t.Run(fmt.Sprintf("%d_%s", trial, flip(lower)), func(t *testing.T) {
			databaseCaseTwins(t, admin, lower, flip(lower), table, upperFirst)
		})
	}
}

func databaseCaseTwins(t *testing.T, admin, lower, upper, table string, upperFirst bool) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	names := []string{lower, upper}
	if upperFirst {
		names = []string{upper, lower}
	}
	tbl := myQuote(table)
	raws := map[string]*sql.DB{}
	pools := map[string]*sql.DB{}
	for _, n := range names {
		dsn := oddDatabase(t, ctx, admin, n)
		raw := testdb.Open(t, "mysql", dsn,
			"CREATE TABLE "+tbl+" (id BIGINT PRIMARY KEY, email VARCHAR(40) NULL UNIQUE, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB")
		needCaseSensitive(t, ctx, raw)
		raws[n] = raw
		pools[n] = testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables="+url.QueryEscape(table)))
	}
	check := func(when string) {
		for _, n := range names {
			reps, err := schema.Check(ctx, raws[n], mysql.Dialect, schema.GuardSpec{Table: table})
			if err != nil || len(fencetest.ReportProblems(reps)) > 0 {
				t.Errorf("%s: schema.Check in %s: %v %q", when, n, err, fencetest.ReportProblems(reps))
			}
		}
	}
	for i, n := range names {
		reps, err := fencetest.ApplyRounds(ctx, raws[n], mysql.Dialect, false, schema.GuardSpec{Table: table})
		if err != nil || len(fencetest.ReportProblems(reps)) > 0 {
			t.Fatalf("-apply in %s: %v %q", n, err, fencetest.ReportProblems(reps))
		}
		if i == 0 {
			if reps, err := schema.Check(ctx, raws[n], mysql.Dialect, schema.GuardSpec{Table: table}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
				t.Errorf("schema.Check in %s before its twin's install: %v %q", n, err, fencetest.ReportProblems(reps))
			}
		}
	}
	check("after both installs")
	rows := func(n string, id int) (int64, int) {
		var bal int64
		var c int
		if err := raws[n].QueryRowContext(ctx, "SELECT COALESCE(MAX(balance), 0), COUNT(*) FROM "+tbl+" WHERE id = ?", id).Scan(&bal, &c); err != nil {
			t.Fatal(err)
		}
		return bal, c
	}
	exec := func(n string, tok uint64, stmt string) error {
		_, err := pools[n].ExecContext(fencedsql.WithToken(ctx, tok), stmt)
		var me *gomysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1146 || me.Number == 1064) {
			t.Errorf("%s: %s: raw server error %v", n, stmt, err)
		}
		return err
	}
	for i, n := range names {
		other := names[1-i]
		if err := exec(n, 100, "INSERT INTO "+tbl+" (id, balance) VALUES (1, 1), (2, 2)"); err != nil {
			t.Fatalf("%s: INSERT under 100: %v", n, err)
		}
		if err := exec(n, 100, "UPDATE "+tbl+" SET balance = 5 WHERE id = 1"); err != nil {
			t.Errorf("%s: UPDATE by the current holder 100: %v", n, err)
		}
		err := exec(n, 50, "UPDATE "+tbl+" SET balance = 666 WHERE id = 1")
		if bal, _ := rows(n, 1); !errors.Is(err, fencedsql.ErrFenced) || bal != 5 {
			t.Errorf("%s: stale UPDATE (50) after 100: %v, balance %d; want ErrFenced, 5", n, err, bal)
		}
		if err := exec(n, 200+uint64(i)*100, "DELETE FROM "+tbl+" WHERE id = 2"); err != nil {
			t.Errorf("%s: DELETE under %d: %v", n, 200+i*100, err)
		}
		err = exec(n, 150, "INSERT INTO "+tbl+" (id, balance) VALUES (2, 666)")
		if _, c := rows(n, 2); !errors.Is(err, fencedsql.ErrFenced) || c != 0 {
			t.Errorf("%s: stale INSERT (150) of key 2 deleted under %d: %v, %d row(s); want ErrFenced, none", n, 200+i*100, err, c)
		}
		// The other twin's tombstone of key 2 (if it has one) does not fence this twin's key 3.
		if err := exec(n, 250, "INSERT INTO "+tbl+" (id, balance) VALUES (3, 3)"); err != nil {
			t.Errorf("%s: INSERT of key 3 under 250 (deleted nowhere): %v", n, err)
		}
		_ = other
	}
	// A qualified REPLACE into the twin's table: through this twin's pool (the pool
	// refuses a REPLACE on a guarded table, typed, or fences it), and on a plain
	// connection, where it displaces the twin's row 1 through the UNIQUE email and the
	// twin's tombstone guard records key 1 at the REPLACE's token, in that twin only.
	for i, n := range names {
		other := names[1-i]
		q := myQuote(other) + "." + tbl
		if err := exec(n, 400, "REPLACE INTO "+q+" (id, balance) VALUES (3, 33)"); err != nil && !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("REPLACE INTO %s through %s's pool by the current holder 400: %v; want success or ErrUnsupported", q, n, err)
		}
		err := exec(n, 120, "REPLACE INTO "+q+" (id, balance) VALUES (2, 666)")
		if _, c := rows(other, 2); (!errors.Is(err, fencedsql.ErrFenced) && !errors.Is(err, fencedsql.ErrUnsupported)) || c != 0 {
			t.Errorf("stale REPLACE (120) INTO %s of its deleted key 2 through %s's pool: %v, %d row(s); want ErrFenced or ErrUnsupported, none", q, n, err, c)
		}
		tok := uint64(700 + 100*i)
		if _, err := raws[other].ExecContext(ctx, "UPDATE "+tbl+" SET email = 'x', version = version + 1, fence_token = ? WHERE id = 1", tok); err != nil {
			t.Fatalf("%s: %v", other, err)
		}
		tombs := func(db string) (c int) {
			if err := raws[db].QueryRowContext(ctx, "SELECT COUNT(*) FROM "+myQuote("fencedsql_tomb_"+table)).Scan(&c); err != nil {
				t.Fatal(err)
			}
			return c
		}
		before := tombs(n)
		if _, err := raws[n].ExecContext(ctx, "REPLACE INTO "+q+" (id, email, balance, fence_token, version) VALUES (7, 'x', 1, ?, 1)", tok); err != nil {
			t.Errorf("plain REPLACE INTO %s from %s under %d: %v", q, n, tok, err)
			continue
		}
		var tomb int64
		if err := raws[other].QueryRowContext(ctx, "SELECT fence_token FROM "+myQuote("fencedsql_tomb_"+table)+" WHERE id = 1").Scan(&tomb); err != nil || tomb != int64(tok) {
			t.Errorf("%s key 1, displaced by a REPLACE from %s under %d: tombstone %d (%v), want %d", other, n, tok, tomb, err, tok)
		}
		if after := tombs(n); after != before {
			t.Errorf("%s: %d tombstones after a REPLACE in its twin %s, %d before", n, after, other, before)
		}
		err = exec(other, tok-50, "INSERT INTO "+tbl+" (id, balance) VALUES (1, 666)")
		if _, c := rows(other, 1); !errors.Is(err, fencedsql.ErrFenced) || c != 0 {
			t.Errorf("%s: stale INSERT (%d) of key 1 a REPLACE under %d displaced: %v, %d row(s); want ErrFenced, none", other, tok-50, tok, err, c)
		}
		if err := exec(other, tok, "INSERT INTO "+tbl+" (id, balance) VALUES (1, 10)"); err != nil {
			t.Errorf("%s: the current holder (%d) re-inserting key 1: %v", other, tok, err)
		}
	}
	check("after the writes")
	// Each twin's token floor is its own: a raise in one leaves the other's.
	if err := schema.RaiseTokenFloor(ctx, raws[names[0]], mysql.Dialect, 5000); err != nil {
		t.Fatalf("RaiseTokenFloor in %s: %v", names[0], err)
	}
	for n, want := range map[string]bool{names[0]: true, names[1]: false} {
		f, err := schema.TokenFloor(ctx, raws[n], mysql.Dialect)
		if err != nil || (f == 5000) != want {
			t.Errorf("TokenFloor in %s after a raise to 5000 in %s: %d, %v", n, names[0], f, err)
		}
	}
	if err := exec(names[0], 4000, "UPDATE "+tbl+" SET balance = 1 WHERE id = 3"); !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("%s: UPDATE under 4000 below its floor 5000: %v, want ErrFenced", names[0], err)
	}
	if err := exec(names[1], 4000, "UPDATE "+tbl+" SET balance = 1 WHERE id = 3"); err != nil {
		t.Errorf("%s: UPDATE under 4000, its twin's floor raised to 5000: %v", names[1], err)
	}
}

// TestTableCaseTwinsGuarded (G9): under lower_case_table_names = 0 the tables acc and
// Acc (and ACC) of one database are distinct, and both may be guarded. Triggers and
// tables keep their names' case on such a server, but routine names are compared
// case-insensitively: the absence recorder (and the other routines the dialect names
// for a table) of one twin is the other's: the second install replaced the first
// twin's recorder by its own. Oracle: either -apply of both converges and each twin's
// guards judge and record its own rows only, or the second install is refused by the
// install's check (ownedCheck: error 1050, another table's object) before it changes
// anything, leaving the first twin's guards intact: its Check clean, a stale write
// refused with ErrFenced, a deleted key staying deleted (through the pool and on a
// plain connection), the current holder not refused, no raw 1146 or 1064. Twins
// whose derived names are cut and hashed (62 characters) differ by more than case:
// both install, and each twin's tombstones are its own.
func TestTableCaseTwinsGuarded(t *testing.T) {
	for _, pair := range [][2]string{{"acc", "Acc"}, {"Konto", "KONTO"}, {"a_long_table_name_for_the_twins_of_a_bounded_derived_name_xyzw", "A_LONG_TABLE_NAME_FOR_THE_TWINS_OF_A_BOUNDED_DERIVED_NAME_XYZW"}} {
		t.Run(pair[0], func(t *testing.T) { tableCaseTwins(t, pair[0], pair[1]) })
	}
}

func tableCaseTwins(t *testing.T, first, second string) {
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dsn := testdb.MySQL(t)
	cols := " (id BIGINT PRIMARY KEY, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB"
	raw := testdb.Open(t, "mysql", dsn, "CREATE TABLE "+myQuote(first)+cols, "CREATE TABLE "+myQuote(second)+cols)
	needCaseSensitive(t, ctx, raw)
	if reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: first}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
		t.Fatalf("-apply of %s: %v %q", first, err, fencetest.ReportProblems(reps))
	}
	reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: second})
	secondOK := err == nil && len(fencetest.ReportProblems(reps)) == 0
	if !secondOK {
		// The install's own refusal (ownedCheck): error 1050, another table's object.
		var me *gomysql.MySQLError
		if !errors.As(err, &me) || me.Number != 1050 || !strings.Contains(me.Message, "another table") {
			t.Errorf("-apply of %s next to the guarded %s: %v %q; want it converged or refused by the install (1050, another table's object)", second, first, err, fencetest.ReportProblems(reps))
		}
		t.Logf("-apply of %s next to the guarded %s refused: %v %q", second, first, err, fencetest.ReportProblems(reps))
	}
	guarded := []string{first}
	if secondOK {
		guarded = append(guarded, second)
	}
	for _, g := range guarded {
		if reps, err := schema.Check(ctx, raw, mysql.Dialect, schema.GuardSpec{Table: g}); err != nil || len(fencetest.ReportProblems(reps)) > 0 {
			t.Errorf("schema.Check of %s (twin %s installed: %v): %v %q", g, second, secondOK, err, fencetest.ReportProblems(reps))
		}
	}
	pool := testdb.Open(t, "fenced-mysql", fencetest.WithParam(dsn, "fenced_tables="+url.QueryEscape(strings.Join(guarded, ","))))
	exec := func(tok uint64, stmt string) error {
		_, err := pool.ExecContext(fencedsql.WithToken(ctx, tok), stmt)
		var me *gomysql.MySQLError
		if errors.As(err, &me) && (me.Number == 1146 || me.Number == 1064) {
			t.Errorf("%s: raw server error %v", stmt, err)
		}
		return err
	}
	count := func(tbl string, id int) int {
		var c int
		if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+myQuote(tbl)+" WHERE id = ?", id).Scan(&c); err != nil {
			t.Fatal(err)
		}
		return c
	}
	for i, g := range guarded {
		q := myQuote(g)
		if err := exec(100, "INSERT INTO "+q+" (id, balance) VALUES (1, 1), (2, 2)"); err != nil {
			t.Fatalf("INSERT INTO %s under 100: %v", g, err)
		}
		if err := exec(100, "UPDATE "+q+" SET balance = 5 WHERE id = 1"); err != nil {
			t.Errorf("UPDATE %s by the current holder: %v", g, err)
		}
		if err := exec(50, "UPDATE "+q+" SET balance = 666 WHERE id = 1"); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("stale UPDATE of %s: %v, want ErrFenced", g, err)
		}
		if err := exec(200+uint64(i)*100, "DELETE FROM "+q+" WHERE id = 2"); err != nil {
			t.Errorf("DELETE FROM %s: %v", g, err)
		}
		err := exec(150, "INSERT INTO "+q+" (id, balance) VALUES (2, 666)")
		if !errors.Is(err, fencedsql.ErrFenced) || count(g, 2) != 0 {
			t.Errorf("stale INSERT (150) of key 2 deleted from %s: %v, %d row(s); want ErrFenced, none", g, err, count(g, 2))
		}
		// A plain stale re-INSERT is refused by the guard itself.
		if _, err := raw.ExecContext(ctx, "INSERT INTO "+q+" (id, balance, fence_token, version) VALUES (2, 666, 150, 1)"); err == nil || count(g, 2) != 0 {
			t.Errorf("plain stale INSERT (150) of key 2 deleted from %s: %v, %d row(s); want the guard's refusal", g, err, count(g, 2))
		}
	}
	// The first twin's tombstone of key 2 does not reach the unguarded or the other twin.
	if err := exec(120, "INSERT INTO "+myQuote(second)+" (id, balance) VALUES (5, 5)"); err != nil && secondOK {
		t.Errorf("INSERT of a fresh key 5 into %s: %v", second, err)
	}
	for _, g := range guarded {
		var tombs int
		if err := raw.QueryRowContext(ctx, "SELECT COUNT(*) FROM "+myQuote("fencedsql_tomb_"+g)).Scan(&tombs); err != nil {
			if len("fencedsql_tomb_"+g) <= 64 {
				t.Errorf("tombstones of %s: %v", g, err)
			}
			continue
		}
		if tombs != 1 {
			t.Errorf("tombstone table of %s holds %d rows, want 1 (its own key 2)", g, tombs)
		}
	}
}
