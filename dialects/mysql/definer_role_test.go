package mysql_test

import (
	"context"
	"database/sql"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
)

// bqName quotes a MySQL/MariaDB identifier or account part with backquotes.
func bqName(s string) string { return "`" + strings.ReplaceAll(s, "`", "``") + "`" }

// databaseOf returns the admin pool's current database.
func databaseOf(t *testing.T, ctx context.Context, admin *sql.DB) string {
	t.Helper()
	var db string
	if err := admin.QueryRowContext(ctx, "SELECT DATABASE()").Scan(&db); err != nil {
		t.Fatal(err)
	}
	return db
}

// TestDefinerRoleGoneAccountOfItsNameReported (red-team rt58a F3): the guard trigger
// runs as a MariaDB role (DEFINER role, information_schema: role@), the role is
// dropped and an account of its name @'%' created. MariaDB answers SHOW GRANTS FOR
// name for that account, but the trigger resolves its definer as the role only, and
// every write fails with 1449. Oracle: while the role exists (an account of its name
// beside it too) Check says OK; once it is dropped Check reports the definer gone (and
// the lazy check refuses with it, not with a raw 1449), and -apply converges with the
// fence holding. MariaDB only (MySQL roles are accounts, role@%).
func TestDefinerRoleGoneAccountOfItsNameReported(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 60*time.Second)
	defer cancel()
	dsn, admin := guardedAccounts(t, ctx)
	var mariadb bool
	if err := admin.QueryRowContext(ctx, "SELECT VERSION() LIKE '%MariaDB%'").Scan(&mariadb); err != nil {
		t.Fatal(err)
	}
	if !mariadb {
		t.Skip("a role definer without a host is MariaDB's")
	}
	db := databaseOf(t, ctx, admin)
	name := "fsql_role_" + db[len(db)-6:]
	for _, q := range []string{"CREATE ROLE " + bqName(name), "GRANT ALL ON " + bqName(db) + ".* TO " + bqName(name)} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	defer admin.ExecContext(context.Background(), "DROP ROLE IF EXISTS "+bqName(name))        //nolint:errcheck
	defer admin.ExecContext(context.Background(), "DROP USER IF EXISTS "+bqName(name)+"@'%'") //nolint:errcheck
	var guard catalogTrigger
	for _, tr := range guardTriggersOnAccounts(t, ctx, admin) {
		if strings.HasPrefix(tr.name, "fencedsql_guard_") {
			guard = tr
		}
	}
	recreateTrigger(t, ctx, admin, guard, "definer "+bqName(name))
	if ok, p := checkAccounts(t, ctx, admin); !ok {
		t.Fatalf("the role definer exists: Check %q, want OK", p)
	}
	// An account of the role's name beside the role: the role still answers.
	for _, q := range []string{"CREATE USER " + bqName(name) + "@'%'", "GRANT ALL ON " + bqName(db) + ".* TO " + bqName(name) + "@'%'"} {
		if _, err := admin.ExecContext(ctx, q); err != nil {
			t.Fatal(q, err)
		}
	}
	if ok, p := checkAccounts(t, ctx, admin); !ok {
		t.Fatalf("the role definer exists beside an account of its name: Check %q, want OK", p)
	}
	if _, err := admin.ExecContext(ctx, "DROP ROLE "+bqName(name)); err != nil {
		t.Fatal(err)
	}
	ok, p := checkAccounts(t, ctx, admin)
	if ok || !strings.Contains(strings.Join(p, "\n"), "does not exist") {
		t.Errorf("the guard trigger's DEFINER role %s dropped (an account %s@'%%' exists): Check ok=%v %q; want the definer reported gone", name, name, ok, p)
	}
	if _, err := fencetest.ApplyRounds(ctx, admin, mysql.Dialect, false, schema.GuardSpec{Table: "accounts"}); err != nil {
		t.Errorf("apply: %v", err)
	}
	if ok, p := checkAccounts(t, ctx, admin); !ok {
		t.Errorf("not converged: %q", p)
	}
	if bad := fenceOracle(t, ctx, dsn, admin); len(bad) > 0 {
		t.Errorf("after -apply: %q", bad)
	}
}

// TestDefinerOddAccountSpellings (red-team rt58a, held): a generator over account
// spellings (user names with quotes, backquotes, '@', '%', spaces, backslashes, upper
// case; hosts with wildcards, upper case, IPs, empty — which MariaDB stores as '%')
// used as the DEFINER of a guard trigger. Oracle: while the account exists Check says
// OK and the fence holds; once it is dropped Check reports it gone and -apply
// converges.
func TestDefinerOddAccountSpellings(t *testing.T) {
	seed := time.Now().UnixNano()
	t.Logf("seed %d", seed)
	rng := rand.New(rand.NewSource(seed))
	ctx, cancel := context.WithTimeout(context.Background(), 90*time.Second)
	defer cancel()
	dsn, admin := guardedAccounts(t, ctx)
	db := databaseOf(t, ctx, admin)
	users := []string{"fsql_u%d", "fsql'q%d", "fsql`b%d", "fsql@at%d", "fsql%%p%d", "fsql sp%d", `fsql\bs%d`, "FSQL_Up%d", "fsql@%d@x"}
	hosts := []string{"%", "localhost", "127.0.0.1", "10.0.%", "LOCALHOST", "", "%.example.com"}
	var problems []string
	for trial := 0; trial < 8; trial++ {
		user := fmt.Sprintf(users[rng.Intn(len(users))], trial)
		host := hosts[rng.Intn(len(hosts))]
		if trial == 0 {
			host = "" // an account with an empty host
		}
		acct := bqName(user) + "@" + bqName(host)
		desc := fmt.Sprintf("trial %d definer %s", trial, acct)
		if _, err := admin.ExecContext(ctx, "CREATE USER "+acct); err != nil {
			t.Logf("%s: CREATE USER: %v (skipped)", desc, err)
			continue
		}
		dropped := false
		func() {
			defer func() {
				if !dropped {
					admin.ExecContext(context.Background(), "DROP USER IF EXISTS "+acct) //nolint:errcheck
				}
			}()
			if _, err := admin.ExecContext(ctx, "GRANT ALL ON "+bqName(db)+".* TO "+acct); err != nil {
				t.Fatalf("%s: grant: %v", desc, err)
			}
			trs := guardTriggersOnAccounts(t, ctx, admin)
			guard := trs[rng.Intn(len(trs))]
			recreateTrigger(t, ctx, admin, guard, "definer "+acct)
			desc += " (trigger " + guard.name + ")"
			if ok, p := checkAccounts(t, ctx, admin); !ok {
				problems = append(problems, fmt.Sprintf("%s: existing definer reported: %q", desc, p))
			}
			if bad := fenceOracle(t, ctx, dsn, admin); len(bad) > 0 {
				problems = append(problems, fmt.Sprintf("%s: fence with existing definer: %q", desc, bad))
			}
			if _, err := admin.ExecContext(ctx, "DROP USER "+acct); err != nil {
				t.Fatalf("%s: drop: %v", desc, err)
			}
			dropped = true
			if ok, p := checkAccounts(t, ctx, admin); ok {
				problems = append(problems, desc+": dropped definer not reported")
			} else if !strings.Contains(strings.Join(p, "\n"), "does not exist") {
				problems = append(problems, fmt.Sprintf("%s: dropped definer reported otherwise: %q", desc, p))
			}
			if _, err := fencetest.ApplyRounds(ctx, admin, mysql.Dialect, false, schema.GuardSpec{Table: "accounts"}); err != nil {
				problems = append(problems, fmt.Sprintf("%s: apply: %v", desc, err))
			}
			if ok, p := checkAccounts(t, ctx, admin); !ok {
				problems = append(problems, fmt.Sprintf("%s: not converged: %q", desc, p))
			}
		}()
	}
	for _, p := range problems {
		t.Error(p)
	}
}
