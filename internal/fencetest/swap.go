package fencetest

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// testTableSwap: an online schema change's table swap (PostgreSQL ALTER TABLE …
// RENAME TO twice, MySQL/MariaDB RENAME TABLE accounts TO _accounts_old,
// _accounts_new TO accounts, SQLite's rename or twelve-step rebuild), with the old
// table kept or dropped, leaves the new accounts without the guard's and the tombstone
// guard's triggers. A fenced pool opened afterwards must refuse the table's guarded
// writes with ErrSchema ("guard lost", naming fencedsql-schema -apply) — a stale
// re-insert of a deleted key included, nothing written — and schema.Check must report
// the door; once schema.Check's Fix is applied again, the same pool fences as before:
// the stale re-insert fails with ErrFenced, a plain write is refused by the guard, a
// current token writes.
func (s *guardSuite) testTableSwap(t *testing.T) {
	for _, c := range []struct {
		name           string
		dropOld, tombs bool
	}{
		{"OldKept", false, true},
		{"OldDropped", true, true},
		{"GuardOnlyOldKept", false, false},
		{"GuardOnlyOldDropped", true, false},
	} {
		t.Run(c.name, func(t *testing.T) {
			if c.dropOld && !c.tombs && s.b.Name == "sqlite" {
				t.Skip("SQLite: a table guarded without the tombstone guard and rebuilt leaves nothing named for it (docs/design.md, Known open findings)")
			}
			s.tableSwap(t, c.dropOld, c.tombs)
		})
	}
}

func (s *guardSuite) tableSwap(t *testing.T, dropOld, tombs bool) {
	e := setup(t, s.b)
	e.seed(5, 1, 2, 3)
	spec := schema.GuardSpec{Table: "accounts"}
	install := func() {
		t.Helper()
		if !tombs {
			s.install(e, "accounts")
			return
		}
		s.applyFix(e, s.check(e, spec)[0].Fix)
		if rep := s.check(e, spec)[0]; !rep.OK() || !rep.Guarded || !rep.Tombstoned {
			t.Fatalf("report after Fix = %+v", rep)
		}
	}
	install()
	if err := schema.RegisterTables(e.ctx, e.raw, s.d, spec); err != nil {
		t.Fatal(err)
	}
	ins := e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)")
	upd := e.q("UPDATE accounts SET balance = ? WHERE id = ?")
	exists := func(id int64) bool {
		t.Helper()
		var n int
		if err := e.raw.QueryRowContext(e.ctx, e.q("SELECT COUNT(*) FROM accounts WHERE id = ?"), id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	// Holder 20 deletes row 2; the stale holder 10 cannot bring it back.
	if _, err := e.db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM accounts WHERE id = ?"), 2); err != nil {
		t.Fatal(err)
	}
	if tombs {
		_, err := e.db.ExecContext(tok(e.ctx, 10), ins, 2, 1)
		wantErr(t, err, fencedsql.ErrFenced)
	}

	s.swap(e, dropOld)

	// A pool opened after the swap (its tables from the registry) refuses the table.
	p := e.fencedOnDSN(t, e.dsn)
	wantLost := func(what string, err error) {
		t.Helper()
		var se *fencedsql.SchemaError
		if !errors.Is(err, fencedsql.ErrSchema) || !errors.As(err, &se) || se.Table != "accounts" ||
			!strings.Contains(err.Error(), string(dialect.SideDoorGuardLost)) || !strings.Contains(err.Error(), "fencedsql-schema -apply") {
			t.Fatalf("%s after the swap: err = %v, want ErrSchema naming accounts, %q and the fix", what, err, dialect.SideDoorGuardLost)
		}
	}
	_, err := p.ExecContext(tok(e.ctx, 10), ins, 2, 1)
	wantLost("stale re-insert of the deleted key", err)
	if exists(2) {
		t.Fatal("the stale re-insert wrote the deleted key")
	}
	_, err = p.ExecContext(tok(e.ctx, 30), upd, 7, 1)
	wantLost("UPDATE under a current token", err)
	if r := e.row(1); r.balance != 100 {
		t.Fatalf("row 1 = %+v: written while refused", r)
	}

	// schema.Check reports the door; its Fix (the guards, installed on the new table)
	// closes it.
	rep := s.check(e, spec)[0]
	lost := 0
	for _, sd := range rep.SideDoors {
		if sd.Kind == dialect.SideDoorGuardLost && !sd.Note {
			lost++
		}
	}
	if lost == 0 || rep.OK() || rep.Guarded {
		t.Fatalf("schema.Check after the swap: %d guard-lost doors in %+v", lost, rep)
	}
	install()
	for _, sd := range s.check(e, spec)[0].SideDoors {
		if sd.Kind == dialect.SideDoorGuardLost {
			t.Fatalf("guard-lost door after the Fix: %+v", sd)
		}
	}

	// The same pool (a refusal is not cached) fences again.
	if tombs {
		_, err = p.ExecContext(tok(e.ctx, 10), ins, 2, 1)
		wantErr(t, err, fencedsql.ErrFenced)
		if exists(2) {
			t.Fatal("the stale re-insert wrote the deleted key after the Fix")
		}
		if _, err := p.ExecContext(tok(e.ctx, 30), ins, 2, 1); err != nil {
			t.Fatalf("re-insert under a newer token after the Fix: %v", err)
		}
	}
	_, err = p.ExecContext(tok(e.ctx, 4), upd, 8, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := p.ExecContext(tok(e.ctx, 30), upd, 9, 1); err != nil {
		t.Fatalf("UPDATE under a current token after the Fix: %v", err)
	}
	_, err = e.raw.ExecContext(e.ctx, e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 1)
	s.wantGuard(t, err, "plain UPDATE after the Fix")
}

// swap replaces accounts by a copy the way an online schema change does, keeping the
// old table under another name or dropping it.
func (s *guardSuite) swap(e *env, dropOld bool) {
	e.t.Helper()
	create := strings.Replace(s.b.TableDDL, "accounts", "accounts_new", 1)
	copyRows := "INSERT INTO accounts_new SELECT * FROM accounts"
	var stmts []string
	switch {
	case s.b.MySQL:
		stmts = []string{create, copyRows, "RENAME TABLE accounts TO accounts_old, accounts_new TO accounts"}
		if dropOld {
			stmts = append(stmts, "DROP TABLE accounts_old")
		}
	case s.b.Name == "sqlite" && dropOld:
		// SQLite's twelve-step rebuild.
		stmts = []string{create, copyRows, "DROP TABLE accounts", "ALTER TABLE accounts_new RENAME TO accounts"}
	default:
		stmts = []string{create, copyRows, "ALTER TABLE accounts RENAME TO accounts_old", "ALTER TABLE accounts_new RENAME TO accounts"}
		if dropOld {
			stmts = append(stmts, "DROP TABLE accounts_old")
		}
	}
	s.exec(e, stmts...)
}

// testTableSwapUnguarded: no over-refusal. A table registered without the guard and
// swapped, and a table whose guards were removed on purpose (UnguardDDL,
// UntombstoneDDL), hold no evidence of a lost guard: a pool opened afterwards writes
// them as before (fenced by the wrapper, a deleted key re-inserted without the
// tombstone guard).
func (s *guardSuite) testTableSwapUnguarded(t *testing.T) {
	ts, ok := s.d.(dialect.Tombstoner)
	if !ok {
		t.Fatalf("dialect %s does not implement dialect.Tombstoner", s.d.Name())
	}
	for _, removed := range []bool{false, true} {
		name := "RegisteredWithoutGuard"
		if removed {
			name = "GuardsRemoved"
		}
		t.Run(name, func(t *testing.T) {
			e := setup(t, s.b)
			e.seed(5, 1, 2, 3)
			spec := schema.GuardSpec{Table: "accounts"}
			if err := schema.RegisterTables(e.ctx, e.raw, s.d, spec); err != nil {
				t.Fatal(err)
			}
			if removed {
				s.applyFix(e, s.check(e, spec)[0].Fix)
			}
			if _, err := e.db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM accounts WHERE id = ?"), 2); err != nil {
				t.Fatal(err)
			}
			if removed {
				tn := dialect.TableName{Name: "accounts"}
				s.exec(e, ts.UntombstoneDDL(tn)...)
				s.exec(e, s.g.UnguardDDL(tn)...)
			} else {
				s.swap(e, true)
			}
			p := e.fencedOnDSN(t, e.dsn)
			if _, err := p.ExecContext(tok(e.ctx, 10), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 2, 1); err != nil {
				t.Fatalf("re-insert without the tombstone guard: %v", err)
			}
			_, err := p.ExecContext(tok(e.ctx, 4), e.q("UPDATE accounts SET balance = 1 WHERE id = ?"), 1)
			wantErr(t, err, fencedsql.ErrFenced)
			if _, err := p.ExecContext(tok(e.ctx, 30), e.q("UPDATE accounts SET balance = 2 WHERE id = ?"), 1); err != nil {
				t.Fatalf("UPDATE under a current token: %v", err)
			}
			for _, sd := range s.check(e, spec)[0].SideDoors {
				if sd.Kind == dialect.SideDoorGuardLost {
					t.Fatalf("guard-lost door without evidence: %+v", sd)
				}
			}
		})
	}
}
