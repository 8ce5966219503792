package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// RunGuards tests a dialect's database-side guard (fencedsql.Guarder) on a real
// database: writes through the plain driver that bypass the wrapper are refused, the
// wrapper's own writes still pass and its fenced ones still fail with ErrFenced /
// ErrVersionConflict, UnguardDDL removes the guard, GuardInstalledQuery and
// fencedsql.CheckSchema see both states, and applying CheckSchema's Fix makes a table
// fit; the tombstone guard (fencedsql.Tombstoner, G9) refuses resurrecting a deleted
// row under an older token. d must be b's dialect; isGuardError recognises a refusal by the guard.
//
//	func TestGuards(t *testing.T) {
//		fencetest.RunGuards(t, fencetest.Postgres(), postgres.Dialect, postgres.IsGuardError)
//	}
//
// Only PostgreSQL guards DELETE; for the others the suite checks that a plain DELETE
// still passes, which is the documented limit.
func RunGuards(t *testing.T, b Backend, d fencedsql.Dialect, isGuardError func(error) bool) {
	g, ok := d.(fencedsql.Guarder)
	if !ok {
		t.Fatalf("dialect %s does not implement fencedsql.Guarder", d.Name())
	}
	gs := &guardSuite{b: b, d: d, g: g, isGuard: isGuardError}
	tests := []struct {
		name string
		fn   func(*testing.T)
	}{
		{"RefusesBypass", gs.testRefusesBypass},
		{"Delete", gs.testDelete},
		{"WrapperUnaffected", gs.testWrapperUnaffected},
		{"UnguardAndInstalled", gs.testUnguard},
		{"CheckSchemaFixesTable", gs.testCheckSchemaFix},
		{"CustomColumnsQualifiedName", gs.testCustomColumns},
		{"NullableColumn", gs.testNullable},
		{"LongTableNames", gs.testLongNames},
		{"NoResurrection", gs.testTombstones},
		{"NoResurrectionCompositeKey", gs.testTombstonesCompositeKey},
		{"NoResurrectionKeyClasses", gs.testTombstoneKeyClasses},
		{"NoResurrectionRekey", gs.testTombstoneRekey},
		{"AdminPath", gs.testAdminPath},
		{"TokenFloor", gs.testFloor},
		{"ConfigMistakes", gs.testConfigMistakes},
		{"Resolve", gs.testResolve},
		{"SideDoors", gs.testSideDoors},
	}
	add := func(name string, fn func(*testing.T)) {
		tests = append(tests, struct {
			name string
			fn   func(*testing.T)
		}{name, fn})
	}
	if b.MySQL {
		add("NonStrictSession", gs.testNonStrict)
	}
	if b.Name != "sqlite" { // SQLite serialises writers: no INSERT runs while a DELETE is open
		add("NoResurrectionRace", gs.testTombstoneRace)
	}
	if !b.MySQL { // MySQL: a TEMPORARY table shadows any table for its session (see the threat model)
		add("NoResurrectionShadow", gs.testTombstoneShadow)
	}
	if b.Name == "postgres" {
		add("GuardsInReplicaMode", gs.testReplicaMode)
		add("GuardsIgnoreSearchPath", gs.testSearchPathHijack)
	}
	if !b.MySQL {
		// The whole conformance suite with the guard installed. Not on MySQL: its
		// NonStrictMySQLSession test proves a danger with a plain UPDATE that does not
		// advance the version, which the guard refuses (see NonStrictSession instead).
		tests = append(tests, struct {
			name string
			fn   func(*testing.T)
		}{"ConformanceWithGuard", func(t *testing.T) { Run(t, gs.guardedBackend()) }})
	}
	for _, tc := range tests {
		t.Run(tc.name, tc.fn)
	}
}

type guardSuite struct {
	b       Backend
	d       fencedsql.Dialect
	g       fencedsql.Guarder
	isGuard func(error) bool
}

// execAll runs statements one by one through db (a plain driver).
func execAll(t testing.TB, ctx context.Context, db *sql.DB, stmts []string) {
	t.Helper()
	for _, s := range stmts {
		if _, err := db.ExecContext(ctx, s); err != nil {
			t.Fatalf("%v\n-- statement:\n%s", err, s)
		}
	}
}

func (s *guardSuite) install(e *env, table string) {
	e.t.Helper()
	execAll(e.t, e.ctx, e.raw, s.g.GuardDDL(tableName(e.t, table), fencedsql.DefaultTokenColumn, fencedsql.DefaultVersionColumn))
}

// tableName parses "table" or "schema.table".
func tableName(t testing.TB, s string) fencedsql.TableName {
	t.Helper()
	tn, err := fencedsql.ParseTableName(s)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func (s *guardSuite) installed(e *env, schema, table string) bool {
	e.t.Helper()
	q, args := s.g.GuardInstalledQuery(fencedsql.TableName{Schema: schema, Name: table})
	var n sql.NullInt64
	if err := e.raw.QueryRowContext(e.ctx, q, args...).Scan(&n); err != nil && err != sql.ErrNoRows {
		e.t.Fatalf("GuardInstalledQuery: %v", err)
	}
	return n.Int64 == 1
}

func (s *guardSuite) wantGuard(t *testing.T, err error, what string) {
	t.Helper()
	if err == nil {
		t.Fatalf("%s: passed, want a refusal by the guard", what)
	}
	if !s.isGuard(err) || !strings.Contains(err.Error(), "fencedsql: guard on") {
		t.Fatalf("%s: err = %v, want a refusal by the guard", what, err)
	}
}

func (s *guardSuite) check(e *env, specs ...fencedsql.GuardSpec) []fencedsql.TableReport {
	e.t.Helper()
	reps, err := fencedsql.CheckSchema(e.ctx, e.raw, s.d, specs...)
	if err != nil {
		e.t.Fatalf("CheckSchema: %v", err)
	}
	if len(reps) != len(specs) {
		e.t.Fatalf("CheckSchema returned %d reports for %d tables", len(reps), len(specs))
	}
	return reps
}

// applyFix runs a report's Fix through the plain driver, in a transaction where the
// database has transactional DDL.
func (s *guardSuite) applyFix(e *env, fix []string) {
	e.t.Helper()
	if s.b.MySQL {
		execAll(e.t, e.ctx, e.raw, fix)
		return
	}
	tx, err := e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		e.t.Fatal(err)
	}
	defer tx.Rollback()
	for _, st := range fix {
		if _, err := tx.ExecContext(e.ctx, st); err != nil {
			e.t.Fatalf("%v\n-- statement:\n%s", err, st)
		}
	}
	if err := tx.Commit(); err != nil {
		e.t.Fatal(err)
	}
}

func (s *guardSuite) engine() string {
	if s.b.MySQL {
		return " ENGINE=InnoDB"
	}
	return ""
}

// Plain-driver writes that bypass the wrapper are refused by the database.
func (s *guardSuite) testRefusesBypass(t *testing.T) {
	e := setup(t, s.b)
	e.seed(5, 1, 2, 3)
	s.install(e, "accounts")
	before := map[int64]row{1: e.row(1), 2: e.row(2), 3: e.row(3)}
	for _, c := range []struct{ what, sql string }{
		{"UPDATE not touching the version", "UPDATE accounts SET balance = 0 WHERE id = 1"},
		{"multi-row UPDATE not touching the version", "UPDATE accounts SET balance = 0"},
		{"UPDATE keeping the version", "UPDATE accounts SET balance = 0, version = version WHERE id = 1"},
		{"UPDATE lowering the version", "UPDATE accounts SET balance = 0, version = version - 1, fence_token = 9 WHERE id = 1"},
		{"UPDATE lowering the token", "UPDATE accounts SET balance = 0, version = version + 1, fence_token = 4 WHERE id = 1"},
		{"UPDATE resetting the token", "UPDATE accounts SET balance = 0, version = version + 1, fence_token = 0"},
	} {
		_, err := e.raw.ExecContext(e.ctx, c.sql)
		s.wantGuard(t, err, c.what)
	}
	// An upsert whose UPDATE branch runs through the plain driver.
	_, err := e.raw.ExecContext(e.ctx, e.q(s.b.Upsert), 1, 555)
	s.wantGuard(t, err, "plain upsert")
	for id, r := range before {
		if got := e.row(id); got != r {
			t.Fatalf("a refused write changed row %d: %+v, was %+v", id, got, r)
		}
	}
	// The guard checks the protocol, not the token's origin: a plain UPDATE that
	// raises the version and does not lower the token passes.
	if _, err := e.raw.ExecContext(e.ctx, "UPDATE accounts SET balance = 1, version = version + 1, fence_token = 6 WHERE id = 1"); err != nil {
		t.Fatalf("protocol-following plain UPDATE: %v", err)
	}
	// The fenced driver still fences on top of it.
	_, err = e.db.ExecContext(tok(e.ctx, 5), e.q("UPDATE accounts SET balance = 2 WHERE id = ?"), 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if r := e.row(1); r.balance != 1 || r.token != 6 {
		t.Fatalf("row 1 = %+v", r)
	}
}

// PostgreSQL refuses a DELETE of rows the transaction did not fence first; MySQL and
// SQLite cannot tell (documented limit).
func (s *guardSuite) testDelete(t *testing.T) {
	e := setup(t, s.b)
	e.seed(5, 1, 2, 3, 4, 5)
	s.install(e, "accounts")
	_, err := e.raw.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), 1)
	if s.b.Name != "postgres" {
		if err != nil {
			t.Fatalf("plain DELETE on %s: %v (the guard is documented not to cover DELETE here)", s.b.Name, err)
		}
		if e.count() != 4 {
			t.Fatal("plain DELETE did not delete")
		}
		// The wrapper's DELETE works with the guard installed.
		if _, err := e.db.ExecContext(tok(e.ctx, 6), e.q("DELETE FROM accounts WHERE id = ?"), 2); err != nil {
			t.Fatal(err)
		}
		if e.count() != 3 {
			t.Fatal("fenced DELETE did not delete")
		}
		return
	}
	s.wantGuard(t, err, "plain DELETE")
	_, err = e.raw.ExecContext(e.ctx, "DELETE FROM accounts")
	s.wantGuard(t, err, "plain DELETE of all rows")
	_, err = e.raw.ExecContext(e.ctx, "TRUNCATE accounts")
	s.wantGuard(t, err, "TRUNCATE")
	if n := e.count(); n != 5 {
		t.Fatalf("refused DELETEs removed rows: %d left", n)
	}

	// A transaction that locked the row but did not write it is refused too.
	tx, err := e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, "SELECT 1 FROM accounts WHERE id = 1 FOR UPDATE"); err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(e.ctx, "DELETE FROM accounts WHERE id = 1")
	s.wantGuard(t, err, "DELETE after SELECT … FOR UPDATE")
	tx.Rollback()

	// A write rolled back to a savepoint does not count.
	tx, err = e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	for _, st := range []string{"SAVEPOINT a", "UPDATE accounts SET version = version + 1, fence_token = 9 WHERE id = 1", "ROLLBACK TO SAVEPOINT a"} {
		if _, err := tx.ExecContext(e.ctx, st); err != nil {
			t.Fatalf("%s: %v", st, err)
		}
	}
	_, err = tx.ExecContext(e.ctx, "DELETE FROM accounts WHERE id = 1")
	s.wantGuard(t, err, "DELETE after a rolled-back write")
	tx.Rollback()

	// The wrapper's DELETE: outside a transaction, inside one, inside a savepoint
	// (the fencing UPDATE then runs in a subtransaction), and fenced.
	if _, err := e.db.ExecContext(tok(e.ctx, 6), e.q("DELETE FROM accounts WHERE id = ?"), 1); err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
	ftx, err := e.db.BeginTx(tok(e.ctx, 6), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := ftx.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), 2); err != nil {
		t.Fatalf("fenced DELETE in a transaction: %v", err)
	}
	for _, st := range []string{"SAVEPOINT s1", "SAVEPOINT s2"} {
		if _, err := ftx.ExecContext(e.ctx, st); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := ftx.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), 3); err != nil {
		t.Fatalf("fenced DELETE inside a savepoint: %v", err)
	}
	if _, err := ftx.ExecContext(e.ctx, "RELEASE SAVEPOINT s1"); err != nil {
		t.Fatal(err)
	}
	if err := ftx.Commit(); err != nil {
		t.Fatal(err)
	}
	if n := e.count(); n != 2 {
		t.Fatalf("%d rows left, want 2", n)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = 0 WHERE id = ?"), 4); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 7), "DELETE FROM accounts")
	wantErr(t, err, fencedsql.ErrFenced)
	if e.count() != 2 {
		t.Fatal("a fenced DELETE removed rows")
	}

	// A plain transaction that writes a row the way the guard accepts, then deletes
	// it, passes: the guard asks for a write in the same transaction, not for a token.
	tx, err = e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, "UPDATE accounts SET version = version + 1, fence_token = 10 WHERE id = 5"); err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, "DELETE FROM accounts WHERE id = 5"); err != nil {
		t.Fatalf("DELETE after an UPDATE in the same transaction: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatal(err)
	}
	if e.count() != 1 {
		t.Fatal("row 5 not deleted")
	}
}

// The wrapper's writes pass the guard; its fenced writes keep their errors.
func (s *guardSuite) testWrapperUnaffected(t *testing.T) {
	e := setup(t, s.b)
	s.install(e, "accounts")
	e.seed(5, 1, 2, 3)
	upd := e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ?")
	for i, tk := range []uint64{6, 6, 7} {
		if _, err := e.db.ExecContext(tok(e.ctx, tk), upd, 1); err != nil {
			t.Fatalf("write %d (token %d): %v", i, tk, err)
		}
	}
	if r := e.row(1); r != (row{103, 7, 4}) {
		t.Fatalf("row 1 = %+v, want 103/7/4", r)
	}
	// Stale token: ErrFenced, not the guard.
	_, err := e.db.ExecContext(tok(e.ctx, 6), upd, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if s.isGuard(err) {
		t.Fatalf("fenced write reported by the guard: %v", err)
	}
	// Multi-row, the middle row newer: all or nothing (the row before it, already
	// updated when the middle one fails, is restored).
	e.seed(5, 11, 12, 13)
	if _, err := e.db.ExecContext(tok(e.ctx, 9), upd, 12); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 7), e.q("UPDATE accounts SET balance = 0 WHERE id >= ?"), 11)
	wantErr(t, err, fencedsql.ErrFenced)
	for _, id := range []int64{11, 13} {
		if r := e.row(id); r != (row{100, 5, 1}) {
			t.Fatalf("row %d changed by a fenced statement: %+v", id, r)
		}
	}
	// Upserts.
	up := e.q(s.b.Upsert)
	_, err = e.db.ExecContext(tok(e.ctx, 6), up, 1, 555)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(tok(e.ctx, 8), up, 1, 555); err != nil {
		t.Fatalf("upsert: %v", err)
	}
	if r := e.row(1); r != (row{555, 8, 5}) {
		t.Fatalf("upserted row = %+v, want 555/8/5", r)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 8), up, 9, 1); err != nil {
		t.Fatalf("upsert inserting: %v", err)
	}
	// ExpectVersion.
	cur := e.row(2).version
	upd0 := e.q("UPDATE accounts SET balance = 0 WHERE id = ?")
	_, err = e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 8), cur+5), upd0, 2)
	wantErr(t, err, fencedsql.ErrVersionConflict)
	if errors.Is(err, fencedsql.ErrFenced) || s.isGuard(err) {
		t.Fatalf("version conflict misreported: %v", err)
	}
	// Row 1 carries token 8: a stale token is fenced whether the version matches or not.
	_, err = e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 7), e.row(1).version), upd0, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 7), e.row(1).version+5), upd0, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(fencedsql.ExpectVersion(tok(e.ctx, 8), cur), upd0, 2); err != nil {
		t.Fatalf("ExpectVersion with the current version: %v", err)
	}
	if r := e.row(2); r != (row{0, 8, cur + 1}) {
		t.Fatalf("row 2 = %+v", r)
	}
	// Strict mode: an equal token is fenced.
	strict, err := sql.Open(s.b.DriverName, WithParam(WithParam(e.dsn, "fenced_tables=accounts"), "fenced_strict=true"))
	if err != nil {
		t.Fatal(err)
	}
	defer strict.Close()
	_, err = strict.ExecContext(tok(e.ctx, 8), upd, 2)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := strict.ExecContext(tok(e.ctx, 9), upd, 2); err != nil {
		t.Fatal(err)
	}
	// DELETE.
	_, err = e.db.ExecContext(tok(e.ctx, 8), e.q("DELETE FROM accounts WHERE id = ?"), 2) // row 2 has token 9
	wantErr(t, err, fencedsql.ErrFenced)
	res, err := e.db.ExecContext(tok(e.ctx, 9), e.q("DELETE FROM accounts WHERE id = ? OR id = ?"), 2, 3)
	if err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
	if n, _ := res.RowsAffected(); n != 2 {
		t.Fatalf("RowsAffected = %d, want 2", n)
	}
	if s.b.Returning {
		var bal int64
		if err := e.db.QueryRowContext(tok(e.ctx, 9), e.q("UPDATE accounts SET balance = balance + 1 WHERE id = ? RETURNING balance"), 1).Scan(&bal); err != nil || bal != 556 {
			t.Fatalf("UPDATE … RETURNING = %d, %v", bal, err)
		}
	}
	// Prepared statement across tokens.
	st, err := e.db.PrepareContext(e.ctx, upd)
	if err != nil {
		t.Fatal(err)
	}
	defer st.Close()
	if _, err := st.ExecContext(tok(e.ctx, 10), 1); err != nil {
		t.Fatal(err)
	}
	_, err = st.ExecContext(tok(e.ctx, 9), 1)
	wantErr(t, err, fencedsql.ErrFenced)
}

// UnguardDDL removes the guard; GuardInstalledQuery and CheckSchema follow (the
// tombstone guard, which CheckSchema also checks, is installed with it and stays).
func (s *guardSuite) testUnguard(t *testing.T) {
	e := setup(t, s.b)
	e.seed(5, 1)
	spec := fencedsql.GuardSpec{Table: "accounts"}
	if s.installed(e, "", "accounts") {
		t.Fatal("guard reported installed before installing it")
	}
	rep := s.check(e, spec)[0]
	if rep.Guarded || rep.OK() || !rep.Exists || !rep.HasToken || !rep.HasVersion || !rep.TokenNotNull || !rep.VersionNotNull {
		t.Fatalf("report before the guard: %+v", rep)
	}
	// The guard, then the tombstone guard (CheckSchema checks both).
	want := s.g.GuardDDL(fencedsql.TableName{Name: "accounts"}, fencedsql.DefaultTokenColumn, fencedsql.DefaultVersionColumn)
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

	un := s.g.UnguardDDL(fencedsql.TableName{Name: "accounts"})
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

// CheckSchema's Fix makes a table without fencing columns fit, guard included.
func (s *guardSuite) testCheckSchemaFix(t *testing.T) {
	e := setup(t, s.b)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE ledger (id BIGINT PRIMARY KEY, amount BIGINT NOT NULL)"+s.engine()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.raw.ExecContext(e.ctx, "INSERT INTO ledger (id, amount) VALUES (1, 10)"); err != nil {
		t.Fatal(err)
	}
	reps := s.check(e, fencedsql.GuardSpec{Table: "ledger"}, fencedsql.GuardSpec{Table: "nosuchtable"})
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
	rep = s.check(e, fencedsql.GuardSpec{Table: "ledger"})[0]
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
	var schema string
	switch {
	case s.b.MySQL:
		if err := e.raw.QueryRowContext(e.ctx, "SELECT DATABASE()").Scan(&schema); err != nil {
			t.Fatal(err)
		}
	case s.b.Name == "postgres":
		schema = "public"
	default:
		schema = "main"
	}
	table := schema + ".ledger2"
	spec := fencedsql.GuardSpec{Table: table, TokenColumn: "tok", VersionColumn: "ver"}
	rep := s.check(e, spec)[0]
	if !rep.HasToken || !rep.HasVersion || rep.Guarded || rep.Tombstoned || len(rep.Problems) != 2 {
		t.Fatalf("report = %+v", rep)
	}
	// The default names are missing from this table.
	if def := s.check(e, fencedsql.GuardSpec{Table: table})[0]; def.HasToken || def.HasVersion {
		t.Fatalf("report with default names = %+v", def)
	}
	s.applyFix(e, rep.Fix)
	if !s.installed(e, schema, "ledger2") || !s.check(e, spec)[0].OK() {
		t.Fatal("guard on a qualified table not reported installed")
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
	if s.installed(e, schema, "ledger2") {
		t.Fatal("guard still reported installed")
	}
}

// A nullable fencing column: CheckSchema proposes NOT NULL where the database can
// alter a column (not SQLite, whose problem stays with no statement for it).
func (s *guardSuite) testNullable(t *testing.T) {
	e := setup(t, s.b)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE ledger3 (id BIGINT PRIMARY KEY, fence_token BIGINT DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"+s.engine()); err != nil {
		t.Fatal(err)
	}
	spec := fencedsql.GuardSpec{Table: "ledger3"}
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
	execAll(t, e.ctx, e.raw, s.g.UnguardDDL(fencedsql.TableName{Name: names[0]}))
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

// guardedBackend is b with the guard and the tombstone guard installed on accounts in
// every fresh database.
func (s *guardSuite) guardedBackend() Backend {
	gb := s.b
	gb.TableDDL = strings.Replace(s.b.TableDDL, "CREATE TABLE ", "CREATE TABLE IF NOT EXISTS ", 1)
	gb.DSN = func(tb testing.TB) string {
		dsn := s.b.DSN(tb)
		raw, err := sql.Open(s.b.RawName, dsn)
		if err != nil {
			tb.Fatal(err)
		}
		defer raw.Close()
		ctx := context.Background()
		ddl := append([]string{s.b.TableDDL}, s.g.GuardDDL(fencedsql.TableName{Name: "accounts"}, fencedsql.DefaultTokenColumn, fencedsql.DefaultVersionColumn)...)
		execAll(tb, ctx, raw, ddl)
		if _, ok := s.d.(fencedsql.Tombstoner); ok {
			tombFix, err := fencedsql.TombstoneFix(ctx, raw, s.d, fencedsql.GuardSpec{Table: "accounts"})
			if err != nil {
				tb.Fatal(err)
			}
			execAll(tb, ctx, raw, tombFix)
		}
		return dsn
	}
	return gb
}
