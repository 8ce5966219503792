// Guard cases on the schema: unguarding, schema.Check's fix, custom and nullable columns, long names, non-strict sessions.

package fencetest

import (
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// UnguardDDL removes the guard; GuardInstalledQuery and schema.Check follow (the
// tombstone guard, which schema.Check also checks, is installed with it and stays).
func (s *guardSuite) testUnguard(t *testing.T) {
	e := setup(t, s.b)
	e.seed(5, 1)
	spec := schema.GuardSpec{Table: "accounts"}
	if s.installed(e, "", "accounts") {
		t.Fatal("guard reported installed before installing it")
	}
	rep := s.check(e, spec)[0]
	if rep.Guarded || rep.OK() || !rep.Exists || !rep.HasToken || !rep.HasVersion || !rep.TokenNotNull || !rep.VersionNotNull {
		t.Fatalf("report before the guard: %+v", rep)
	}
	// The guard, then the tombstone guard (schema.Check checks both).
	want := s.g.GuardDDL(dialect.TableName{Name: "accounts"}, schema.DefaultTokenColumn, schema.DefaultVersionColumn)
	if !slices.Equal(rep.Fix[:min(len(want), len(rep.Fix))], want) {
		t.Fatalf("Fix = %q, want the guard DDL %q first", rep.Fix, want)
	}
	if len(rep.Problems) != 2 || !strings.Contains(rep.Problems[0], "guard") || !strings.Contains(rep.Problems[1], "tombstone") {
		t.Fatalf("Problems = %q", rep.Problems)
	}
	// Through the fenced driver, DDL whose text holds several statements that
	// mention a guarded table is refused: guards are installed through a plain one.
	if !s.b.Numbered {
		var err error
		for _, st := range rep.Fix {
			if _, err = e.db.ExecContext(e.ctx, st); err != nil {
				break
			}
		}
		wantErr(t, err, fencedsql.ErrUnsupported)
	}
	s.applyFix(e, rep.Fix)
	if !s.installed(e, "", "accounts") {
		t.Fatal("guard not reported installed")
	}
	if rep := s.check(e, spec)[0]; !rep.OK() || !rep.Guarded || len(rep.Fix) != 0 {
		t.Fatalf("report with the guard: %+v", rep)
	}
	_, err := e.raw.ExecContext(e.ctx, "UPDATE accounts SET balance = 0 WHERE id = 1")
	s.wantGuard(t, err, "plain UPDATE")
	// Installing twice is harmless.
	s.install(e, "accounts")
	if !s.installed(e, "", "accounts") {
		t.Fatal("guard not installed after re-installing")
	}

	un := s.g.UnguardDDL(dialect.TableName{Name: "accounts"})
	if len(un) == 0 {
		t.Fatal("UnguardDDL returned no statement")
	}
	execAll(t, e.ctx, e.raw, un)
	execAll(t, e.ctx, e.raw, un) // idempotent
	if s.installed(e, "", "accounts") {
		t.Fatal("guard reported installed after UnguardDDL")
	}
	if _, err := e.raw.ExecContext(e.ctx, "UPDATE accounts SET balance = 0 WHERE id = 1"); err != nil {
		t.Fatalf("plain UPDATE without the guard: %v", err)
	}
	if rep := s.check(e, spec)[0]; rep.Guarded || rep.OK() || !rep.Tombstoned || len(rep.Problems) != 1 {
		t.Fatalf("report after UnguardDDL: %+v", rep)
	}
}

// schema.Check's Fix makes a table without fencing columns fit, guard included.
func (s *guardSuite) testCheckSchemaFix(t *testing.T) {
	e := setup(t, s.b)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)"+s.engine()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.raw.ExecContext(e.ctx, "INSERT INTO ledger (id, amount) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	reps := s.check(e, schema.GuardSpec{Table: "ledger"}, schema.GuardSpec{Table: "nosuchtable"})
	rep, missing := reps[0], reps[1]
	if !rep.Exists || rep.HasToken || rep.HasVersion || rep.Guarded || rep.Tombstoned || len(rep.Problems) != 4 {
		t.Fatalf("report = %+v", rep)
	}
	if len(rep.Fix) < 4 {
		t.Fatalf("Fix = %q, want the two columns, the guard and the tombstone guard", rep.Fix)
	}
	if missing.Exists || missing.OK() || len(missing.Fix) != 0 {
		t.Fatalf("missing table report = %+v", missing)
	}
	s.applyFix(e, rep.Fix)
	rep = s.check(e, schema.GuardSpec{Table: "ledger"})[0]
	if !rep.OK() || !rep.HasToken || !rep.HasVersion || !rep.TokenNotNull || !rep.VersionNotNull || !rep.Guarded || !rep.Tombstoned {
		t.Fatalf("report after applying Fix = %+v", rep)
	}
	db, err := sql.Open(s.b.DriverName, WithParam(e.dsn, "fenced_tables=ledger"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(tok(e.ctx, 3), "UPDATE ledger SET amount = amount + 1"); err != nil {
		t.Fatalf("fenced UPDATE of the fixed table: %v", err)
	}
	_, err = db.ExecContext(tok(e.ctx, 2), "UPDATE ledger SET amount = amount + 1")
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = e.raw.ExecContext(e.ctx, "UPDATE ledger SET amount = 0")
	s.wantGuard(t, err, "plain UPDATE of the fixed table")
}

// Custom column names and a schema-qualified table name.
func (s *guardSuite) testCustomColumns(t *testing.T) {
	e := setup(t, s.b)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE ledger2 (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0)"+s.engine()); err != nil {
		t.Fatal(err)
	}
	var sch string
	switch {
	case s.b.MySQL:
		if err := e.raw.QueryRowContext(e.ctx, "SELECT DATABASE()").Scan(&sch); err != nil {
			t.Fatal(err)
		}
	case s.b.Name == "postgres":
		sch = "public"
	default:
		sch = "main"
	}
	table := sch + ".ledger2"
	spec := schema.GuardSpec{Table: table, TokenColumn: "tok", VersionColumn: "ver"}
	rep := s.check(e, spec)[0]
	if !rep.HasToken || !rep.HasVersion || rep.Guarded || rep.Tombstoned || len(rep.Problems) != 2 {
		t.Fatalf("report = %+v", rep)
	}
	// The default names are missing from this table.
	if def := s.check(e, schema.GuardSpec{Table: table})[0]; def.HasToken || def.HasVersion {
		t.Fatalf("report with default names = %+v", def)
	}
	s.applyFix(e, rep.Fix)
	if !s.installed(e, sch, "ledger2") || !s.check(e, spec)[0].OK() {
		t.Fatalf("guard on a qualified table not reported installed: %+v", s.check(e, spec)[0])
	}
	db, err := sql.Open(s.b.DriverName, WithParam(WithParam(WithParam(e.dsn, "fenced_tables=ledger2"), "fenced_token_column=tok"), "fenced_version_column=ver"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	if _, err := db.ExecContext(tok(e.ctx, 4), e.q("INSERT INTO ledger2 (id, amount) VALUES (?, ?)"), 1, 1); err != nil {
		t.Fatal(err)
	}
	if _, err := db.ExecContext(tok(e.ctx, 5), "UPDATE ledger2 SET amount = 2"); err != nil {
		t.Fatalf("fenced UPDATE: %v", err)
	}
	_, err = db.ExecContext(tok(e.ctx, 4), "UPDATE ledger2 SET amount = 3")
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 5), 99), "UPDATE ledger2 SET amount = 3")
	wantErr(t, err, fencedsql.ErrVersionConflict)
	_, err = e.raw.ExecContext(e.ctx, "UPDATE ledger2 SET amount = 0")
	s.wantGuard(t, err, "plain UPDATE not touching ver")
	_, err = e.raw.ExecContext(e.ctx, "UPDATE ledger2 SET amount = 0, ver = ver + 1, tok = 1")
	s.wantGuard(t, err, "plain UPDATE lowering tok")
	execAll(t, e.ctx, e.raw, s.g.UnguardDDL(tableName(t, table)))
	if s.installed(e, sch, "ledger2") {
		t.Fatal("guard still reported installed")
	}
}

// A nullable fencing column: schema.Check proposes NOT NULL where the database can
// alter a column (not SQLite, whose problem stays with no statement for it).
func (s *guardSuite) testNullable(t *testing.T) {
	e := setup(t, s.b)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE ledger3 (id BIGINT PRIMARY KEY, fence_token BIGINT DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"+s.engine()); err != nil {
		t.Fatal(err)
	}
	spec := schema.GuardSpec{Table: "ledger3"}
	rep := s.check(e, spec)[0]
	if !rep.HasToken || rep.TokenNotNull || !rep.VersionNotNull || len(rep.Problems) != 3 {
		t.Fatalf("report = %+v", rep)
	}
	s.applyFix(e, rep.Fix)
	rep = s.check(e, spec)[0]
	if !rep.Guarded {
		t.Fatalf("guard not installed by Fix: %+v", rep)
	}
	if s.b.Name == "sqlite" {
		if rep.OK() || rep.TokenNotNull || len(rep.Fix) != 0 || !strings.Contains(rep.Problems[0], "rebuild") {
			t.Fatalf("SQLite report for a nullable column = %+v", rep)
		}
		return
	}
	if !rep.OK() || !rep.TokenNotNull {
		t.Fatalf("report after Fix = %+v", rep)
	}
}

// Table names past the identifier limit once prefixed get distinct guard objects.
func (s *guardSuite) testLongNames(t *testing.T) {
	e := setup(t, s.b)
	base := strings.Repeat("a", 55)
	names := []string{base + "_one", base + "_two"}
	for _, n := range names {
		if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE "+n+" (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"+s.engine()); err != nil {
			t.Fatal(err)
		}
		if _, err := e.raw.ExecContext(e.ctx, "INSERT INTO "+n+" (id) VALUES (1)"); err != nil {
			t.Fatal(err)
		}
		s.install(e, n)
	}
	for _, n := range names {
		if !s.installed(e, "", n) {
			t.Fatalf("guard on %s not reported installed", n)
		}
	}
	execAll(t, e.ctx, e.raw, s.g.UnguardDDL(dialect.TableName{Name: names[0]}))
	if s.installed(e, "", names[0]) || !s.installed(e, "", names[1]) {
		t.Fatal("removing one long-named guard affected the other")
	}
	if _, err := e.raw.ExecContext(e.ctx, "UPDATE "+names[0]+" SET id = id"); err != nil {
		t.Fatalf("unguarded table: %v", err)
	}
	_, err := e.raw.ExecContext(e.ctx, "UPDATE "+names[1]+" SET id = id")
	s.wantGuard(t, err, "plain UPDATE of the long-named table")
}

// MySQL in a non-strict session stores 0 for the fencing NULL; with the guard the
// plain write fails like in strict mode.
func (s *guardSuite) testNonStrict(t *testing.T) {
	e := setup(t, s.b)
	e.seed(9, 1)
	s.install(e, "accounts")
	conn, err := e.raw.Conn(e.ctx)
	if err != nil {
		t.Fatal(err)
	}
	defer conn.Close()
	if _, err := conn.ExecContext(e.ctx, "SET SESSION sql_mode = ''"); err != nil {
		t.Fatal(err)
	}
	_, err = conn.ExecContext(e.ctx, "UPDATE accounts SET balance = 1, version = version + 1, fence_token = CASE WHEN fence_token <= 7 THEN 7 ELSE NULL END WHERE id = 1")
	if err == nil || !strings.Contains(err.Error(), "1048") {
		t.Fatalf("non-strict fencing NULL: err = %v, want error 1048", err)
	}
	if r := e.row(1); r.token != 9 || r.balance != 100 {
		t.Fatalf("row = %+v", r)
	}
}

// The wrapper's rewrite gives a write under an older token a NULL token, which the
// column's NOT NULL constraint refuses (ErrFenced). A migration that drops the
// constraint while pools run — after their check passed — must not turn those writes
// into accepted ones: the guard refuses a NULL fencing column itself, with the
// constraint's own error. (SQLite cannot drop a constraint but by rebuilding the
// table, which drops the guard with it: not run there.)
func (s *guardSuite) testNotNullDropped(t *testing.T) {
	e := setup(t, s.b)
	s.install(e, "accounts")
	e.seed(5, 1, 2, 3)
	upd := e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?")
	if _, err := e.db.ExecContext(tok(e.ctx, 7), upd, 1); err != nil { // the pool's checks run
		t.Fatal(err)
	}
	drop := []string{"ALTER TABLE accounts ALTER COLUMN fence_token DROP NOT NULL", "ALTER TABLE accounts ALTER COLUMN version DROP NOT NULL"}
	if s.b.MySQL {
		drop = []string{"ALTER TABLE accounts MODIFY fence_token BIGINT NULL DEFAULT 0, MODIFY version BIGINT NULL DEFAULT 0"}
	}
	execAll(t, e.ctx, e.raw, drop)
	stale := []struct {
		what, q string
		arg     int64
	}{
		{"stale single-row UPDATE", upd, 1},
		{"stale multi-row UPDATE", e.q("UPDATE accounts SET balance = 0 WHERE id >= ?"), 1},
		{"stale DELETE", e.q("DELETE FROM accounts WHERE id = ?"), 1},
	}
	for _, c := range stale {
		_, err := e.db.ExecContext(tok(e.ctx, 6), c.q, c.arg)
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("%s after the NOT NULL was dropped: err = %v, want ErrFenced", c.what, err)
		}
	}
	if r := e.row(1); r != (row{101, 7, 2}) {
		t.Fatalf("row 1 after the stale writes = %+v, want 101/7/2", r)
	}
	for _, q := range []string{
		"UPDATE accounts SET fence_token = NULL, version = version + 1 WHERE id = 2",
		"UPDATE accounts SET version = NULL WHERE id = 2",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (40, 1, NULL, 1)",
		"INSERT INTO accounts (id, balance, fence_token, version) VALUES (41, 1, 9, NULL)",
	} {
		if _, err := e.raw.ExecContext(e.ctx, q); err == nil {
			t.Fatalf("%s: accepted after the NOT NULL was dropped", q)
		}
	}
	if r := e.row(2); r != (row{100, 5, 1}) {
		t.Fatalf("row 2 after the refused plain writes = %+v", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 8), upd, 1); err != nil {
		t.Fatalf("a current token's write: %v", err)
	}
}
