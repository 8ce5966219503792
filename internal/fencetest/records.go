package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// testGuardRecords (G13, nothing fails open): what the database records as guarded —
// the registry and the guard's own triggers — is guarded by every pool, whatever its
// options and its list say; a red-team pass found each case below written unfenced:
//   - the schema check off (fenced_schema_check=false, copied from a test set-up): the
//     registry is read all the same;
//   - a registered table renamed by a migration: its guard's triggers move with it, and
//     the pool guards it under its new name;
//   - a typo in fenced_tables on a pool allowed to run DDL (which opens with a listed
//     table that does not exist yet, and refuses writes until it does): the real table
//     carries the guard, and is guarded once the listed one is created;
//   - MaxToken without a table list counts a table guarded but not registered, and
//     refuses rather than answer 0 when nothing is recorded or a registry row names a
//     table that is gone.
func (s *guardSuite) testGuardRecords(t *testing.T) {
	e := setup(t, s.b)
	ins := func(table string) string { return e.q("INSERT INTO " + table + " (id, balance) VALUES (?, ?)") }
	upd := func(table string) string {
		return e.q("UPDATE " + table + " SET balance = 7, version = version + 1 WHERE id = ?")
	}
	if _, err := schema.MaxToken(e.ctx, e.raw, s.d); err == nil {
		t.Fatal("MaxToken with nothing recorded as guarded answered; want an error naming the missing list")
	}
	s.exec(e, strings.Replace(s.b.TableDDL, "accounts", "tenants", 1),
		strings.Replace(s.b.TableDDL, "accounts", "ledger", 1),
		strings.Replace(s.b.TableDDL, "accounts", "payees", 1))
	if err := schema.RegisterTables(e.ctx, e.raw, s.d, schema.GuardSpec{Table: "tenants"}, schema.GuardSpec{Table: "ledger"}); err != nil {
		t.Fatal(err)
	}

	// Each table gets a row under token 20, payees under 30 (through a pool that lists it).
	for _, table := range []string{"tenants", "ledger", "payees"} {
		seed := uint64(20)
		if table == "payees" {
			seed = 30
		}
		if _, err := e.fencedOn(t, table).ExecContext(tok(e.ctx, seed), ins(table), 1, 1); err != nil {
			t.Fatalf("seed %s: %v", table, err)
		}
	}
	// fenced: a no-token write is ErrNoToken and a stale one ErrFenced, the row unchanged.
	fenced := func(t *testing.T, what, table string, db *sql.DB) {
		t.Helper()
		if _, err := db.ExecContext(e.ctx, upd(table), 1); !errors.Is(err, fencedsql.ErrNoToken) {
			t.Fatalf("%s: no-token UPDATE of %s: err = %v, want ErrNoToken (guarded)", what, table, err)
		}
		var before, after int64
		if err := e.raw.QueryRowContext(e.ctx, "SELECT fence_token FROM "+table+" WHERE id = 1").Scan(&before); err != nil {
			t.Fatal(err)
		}
		_, err := db.ExecContext(tok(e.ctx, 10), upd(table), 1)
		wantErr(t, err, fencedsql.ErrFenced)
		if err := e.raw.QueryRowContext(e.ctx, "SELECT fence_token FROM "+table+" WHERE id = 1").Scan(&after); err != nil || after != before {
			t.Fatalf("%s: %s row 1 token = %d (%v), want %d unchanged", what, table, after, err, before)
		}
	}

	t.Run("SchemaCheckOff", func(t *testing.T) {
		fenced(t, "fenced_schema_check=false", "tenants", e.fencedOnDSN(t, WithParam(e.dsn, "fenced_schema_check=false")))
	})

	t.Run("TypoWithDDL", func(t *testing.T) {
		s.install(e, "payees") // guarded, not registered
		// A pool allowed to run DDL opens with its listed table missing, but refuses
		// every write (ErrSchema naming the typo) until it exists (red-team rt34d F2);
		// the real table behind the typo, carrying the guard, is guarded all the same.
		typo := e.fencedOnDSN(t, WithParam(WithParam(e.dsn, "fenced_tables=payes"), "fenced_allow=ddl"))
		for _, ctx := range []context.Context{e.ctx, tok(e.ctx, 10)} {
			if _, err := typo.ExecContext(ctx, upd("payees"), 1); !errors.Is(err, fencedsql.ErrSchema) || !strings.Contains(err.Error(), "payes") {
				t.Fatalf("UPDATE payees through a pool listing the missing payes: err = %v, want ErrSchema naming payes", err)
			}
		}
		var tokNow int64
		if err := e.raw.QueryRowContext(e.ctx, "SELECT fence_token FROM payees WHERE id = 1").Scan(&tokNow); err != nil || tokNow != 30 {
			t.Fatalf("payees row 1 token = %d (%v), want 30 unchanged", tokNow, err)
		}
		typoDB := e.fencedOnDSN(t, WithParam(WithParam(e.dsn, "fenced_tables=payes"), "fenced_allow=ddl"))
		if _, err := typoDB.ExecContext(e.ctx, strings.Replace(s.b.TableDDL, "accounts", "payes", 1)); err != nil {
			t.Fatalf("creating the listed payes through the pool (DDL passes): %v", err)
		}
		fenced(t, "fenced_tables=payes (created) with fenced_allow=ddl", "payees", typoDB)
		max, err := schema.MaxToken(e.ctx, e.raw, s.d)
		if err != nil || max != 30 {
			t.Fatalf("MaxToken = %d, %v; want 30 (payees, not registered, counted through its guard)", max, err)
		}
	})
	t.Run("Renamed", func(t *testing.T) {
		s.install(e, "ledger")
		s.exec(e, "ALTER TABLE ledger RENAME TO ledger_v2")
		fenced(t, "registered ledger renamed to ledger_v2, no list", "ledger_v2", e.fencedOnDSN(t, e.dsn))
		fenced(t, "the same, listing only accounts", "ledger_v2", e.fencedOn(t, "accounts"))
		if _, err := e.raw.ExecContext(e.ctx, e.q("UPDATE ledger_v2 SET fence_token = 90 WHERE id = 1")); err == nil {
			t.Fatal("the guard did not move with the renamed table: a plain UPDATE that does not advance the version passed")
		}
		// A registry row naming a table that is gone fails MaxToken (never a lower
		// answer): the operator registers the tables again.
		if _, err := schema.MaxToken(e.ctx, e.raw, s.d); err == nil || !strings.Contains(err.Error(), "ledger") {
			t.Fatalf("MaxToken with a registry row naming the renamed ledger: err = %v, want an error naming it", err)
		}
	})

}
