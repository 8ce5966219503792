package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestGuardUpgradedFromPrevious: a database upgraded to this version keeps the previous
// version's guard functions (guard v7, fences v4: red-team rt58b F2 changed their
// floor slow path) until each guard is re-installed. Meanwhile the previous guard of
// pair is not a guard writer of acc (its exact text is recognised, ownGuardTextSQL:
// otherwise every guarded table's writes were refused until every guard was
// re-installed), writes to both go on through the pool and a stale one is still
// refused; schema.Check reports pair's guard not installed, with a Fix, and after the
// Fix reports nothing.
func TestGuardUpgradedFromPrevious(t *testing.T) {
	raw, db := absentAcc(t)
	testdb.Exec(t, raw, postgres.PreviousGuardFunctionsDDL(dialect.TableName{Schema: "public", Name: "pair"}, "fence_token", "version")...)
	var src string
	if err := raw.QueryRow("SELECT prosrc FROM pg_proc WHERE proname = 'fencedsql_guard_pair'").Scan(&src); err != nil || !strings.Contains(src, "fencedsql guard v7\n") {
		t.Fatalf("set-up: the previous guard function is not installed (%v)", err)
	}
	upgradedPairChecked(t, raw, "pair's previous guard", func() {
		for _, q := range []string{
			"INSERT INTO acc (id) VALUES (1)",
			`INSERT INTO pair ("Region", n) VALUES ('eu', 1)`,
			`UPDATE pair SET balance = 3 WHERE "Region" = 'eu' AND n = 1`,
			`DELETE FROM acc WHERE id = 1`,
		} {
			if err := insertAs(db, 60, q); err != nil {
				t.Errorf("%s under token 60 beside the previous guard: %v, want it through", q, err)
			}
		}
		if err := insertAs(db, 50, `UPDATE pair SET balance = 4 WHERE "Region" = 'eu' AND n = 1`); !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("stale UPDATE of pair under token 50 over the previous guard: %v, want ErrFenced", err)
		}
	})
}

// upgradedPairChecked is the upgrade oracle of a previous release's guard object
// (what) installed for table pair beside acc's current guard: schema.Check reports
// nothing for acc and reports pair not installed with a Fix; writes runs meanwhile (the
// pool's writes over the previous object); after the Fix, Check reports nothing for
// pair.
func upgradedPairChecked(t *testing.T, raw *sql.DB, what string, writes func()) {
	t.Helper()
	report := func(table string) (problems, fix []string) {
		t.Helper()
		reps, err := schema.Check(context.Background(), raw, postgres.Dialect, schema.GuardSpec{Table: table})
		if err != nil {
			t.Fatal(err)
		}
		for _, r := range reps {
			problems, fix = append(problems, r.Problems...), append(fix, r.Fix...)
		}
		return problems, fix
	}
	if probs, _ := report("acc"); len(probs) != 0 {
		t.Errorf("acc beside %s: %q, want no problem", what, probs)
	}
	probs, fix := report("pair")
	if len(probs) == 0 || len(fix) == 0 {
		t.Fatalf("%s: problems %q, Fix %d statements; want it reported not installed, with a Fix", what, probs, len(fix))
	}
	writes()
	testdb.Exec(t, raw, fix...)
	if probs, _ := report("pair"); len(probs) != 0 {
		t.Errorf("pair after its Fix: %q, want no problem", probs)
	}
}
