package postgres_test

import (
	"context"
	"crypto/rand"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"

	"github.com/fencedsql/fencedsql/dialects/postgres"
)

// The least-privilege check (schema.Check with WithRoles) reports a partition or an
// inheritance child of a guarded table that the application role owns, or that a
// role it is a member of owns: the owner can disable the guard's triggers cloned to it
// (a red-team pass: the check passed, and the application then disabled them and
// lowered tokens). The fix hands the descendant to the owner role.
func TestPrivilegesDescendants(t *testing.T) {
	admin := testdb.NeedServer(t, testdb.EnvPostgres, "PostgreSQL")
	var b [5]byte
	if _, err := rand.Read(b[:]); err != nil {
		t.Fatal(err)
	}
	sfx := hex.EncodeToString(b[:])
	owner, app, other := "fsql_owner_"+sfx, "fsql_app_"+sfx, "fsql_other_"+sfx
	adb := rawWith(t, admin, "CREATE ROLE "+owner+" NOLOGIN", "CREATE ROLE "+app+" LOGIN", "CREATE ROLE "+other+" NOLOGIN")
	// Registered before the database: runs after it was dropped, when the roles own
	// nothing any more.
	t.Cleanup(func() {
		if _, err := adb.Exec("DROP ROLE IF EXISTS " + app + ", " + owner + ", " + other); err != nil {
			t.Errorf("dropping roles: %v", err)
		}
	})
	dsn := testdb.Postgres(t)
	const cols = "(id BIGINT NOT NULL, amount BIGINT NOT NULL DEFAULT 0)"
	raw := rawWith(t, dsn,
		"CREATE TABLE ledger "+cols+" PARTITION BY RANGE (id)",
		"CREATE TABLE ledger_lo PARTITION OF ledger FOR VALUES FROM (0) TO (100) PARTITION BY RANGE (id)",
		"CREATE TABLE ledger_lo_1 PARTITION OF ledger_lo FOR VALUES FROM (0) TO (50)",
		"CREATE TABLE inh "+cols+"",
		"ALTER TABLE ledger ADD PRIMARY KEY (id)", "ALTER TABLE inh ADD PRIMARY KEY (id)",
		"CREATE TABLE inh_child () INHERITS (inh)",
	)
	ctx := context.Background()
	roles := dialect.Roles{App: app, Owner: owner}
	check := func() []schema.TableReport {
		t.Helper()
		reps, err := schema.Check(schema.WithRoles(ctx, roles), raw, postgres.Dialect, schema.GuardSpec{Table: "ledger"}, schema.GuardSpec{Table: "inh"})
		if err != nil {
			t.Fatal(err)
		}
		return reps
	}
	apply := func() {
		t.Helper()
		for _, rep := range check() {
			for _, q := range rep.Fix {
				if _, err := raw.ExecContext(ctx, q); err != nil {
					t.Fatalf("fix %s: %v", q, err)
				}
			}
		}
	}
	apply()
	apply() // the descendants' triggers, once the parents are guarded
	for _, rep := range check() {
		if p := ownProblems(rep); len(p) > 0 {
			t.Fatalf("after the fix: %s: %q", rep.Table, p)
		}
	}
	// A partition two levels down owned by the application, an inheritance child
	// owned by a role the application is a member of.
	for _, q := range []string{"ALTER TABLE ledger_lo_1 OWNER TO " + app, "ALTER TABLE inh_child OWNER TO " + other, "GRANT " + other + " TO " + app} {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	reps := check()
	for _, c := range []struct{ table, child, who, fix string }{
		{"ledger", "public.ledger_lo_1", "application role " + app + " owns public.ledger_lo_1", `ALTER TABLE "public"."ledger_lo_1" OWNER TO "` + owner + `"`},
		{"inh", "public.inh_child", "is a member of " + other + ", which owns public.inh_child", `ALTER TABLE "public"."inh_child" OWNER TO "` + owner + `"`},
	} {
		var rep schema.TableReport
		for _, r := range reps {
			if r.Table == c.table {
				rep = r
			}
		}
		if !strings.Contains(strings.Join(rep.Problems, "\n"), c.who) || !strings.Contains(strings.Join(rep.Fix, "\n"), c.fix) {
			t.Errorf("%s: problems %q, fix %q; want %q and %q", c.table, rep.Problems, rep.Fix, c.who, c.fix)
		}
		if strings.Contains(strings.Join(rep.Problems, "\n"), "ledger_lo ") {
			t.Errorf("%s: the admin's partition reported: %q", c.table, rep.Problems)
		}
	}
	apply()
	for _, rep := range check() {
		if p := ownProblems(rep); len(p) > 0 {
			t.Errorf("after the fix: %s: %q", rep.Table, p)
		}
	}
	// TRUNCATE and TRIGGER granted on a partition (its rights are its own): a TRUNCATE
	// of the partition fires none of the root's statement triggers.
	if _, err := raw.ExecContext(ctx, "GRANT TRUNCATE, TRIGGER ON ledger_lo_1 TO "+app); err != nil {
		t.Fatal(err)
	}
	var rep schema.TableReport
	for _, r := range check() {
		if r.Table == "ledger" {
			rep = r
		}
	}
	if want := "has TRIGGER, TRUNCATE on public.ledger_lo_1"; !strings.Contains(strings.Join(rep.Problems, "\n"), want) ||
		!strings.Contains(strings.Join(rep.Fix, "\n"), `REVOKE TRIGGER, TRUNCATE ON "public"."ledger_lo_1" FROM "`+app+`", PUBLIC`) {
		t.Errorf("rights on a partition: problems %q, fix %q; want %q and its REVOKE", rep.Problems, rep.Fix, want)
	}
	apply()
	for _, rep := range check() {
		if p := ownProblems(rep); len(p) > 0 {
			t.Errorf("after revoking: %s: %q", rep.Table, p)
		}
	}
}

// ownProblems is rep's problems but the inheritance hierarchy's own: a child of a table
// with tombstones is reported whatever its owner (no unique key across the hierarchy,
// see childKeys), which is not what this test checks.
func ownProblems(rep schema.TableReport) []string {
	var out []string
	for _, p := range rep.Problems {
		if !strings.Contains(p, "no unique key across an inheritance hierarchy") {
			out = append(out, p)
		}
	}
	return out
}
