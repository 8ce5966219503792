package fencetest

import (
	"context"
	"database/sql"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// RunGuards tests a dialect's database-side guard (dialect.Guarder) on a real
// database: writes through the plain driver that bypass the wrapper are refused, the
// wrapper's own writes still pass and its fenced ones still fail with ErrFenced /
// ErrVersionConflict, UnguardDDL removes the guard, GuardInstalledQuery and
// schema.Check see both states, and applying schema.Check's Fix makes a table
// fit; the tombstone guard (dialect.Tombstoner, G9) refuses resurrecting a deleted
// row under an older token. d must be b's dialect; isGuardError recognises a refusal by the guard.
//
//	func TestGuards(t *testing.T) {
//		fencetest.RunGuards(t, fencetest.Postgres(), postgres.Dialect, postgres.IsGuardError)
//	}
//
// Only PostgreSQL guards DELETE; for the others the suite checks that a plain DELETE
// still passes, which is the documented limit.
func RunGuards(t *testing.T, b Backend, d dialect.Dialect, isGuardError func(error) bool) {
	g, ok := d.(dialect.Guarder)
	if !ok {
		t.Fatalf("dialect %s does not implement dialect.Guarder", d.Name())
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
		{"DeleteOneStatement", gs.testDeleteFence},
		{"DeleteOneStatementExact", gs.testDeleteFenceExact},
		{"NoResurrection", gs.testTombstones},
		{"NoResurrectionCompositeKey", gs.testTombstonesCompositeKey},
		{"NoResurrectionKeyClasses", gs.testTombstoneKeyClasses},
		{"NoResurrectionRekey", gs.testTombstoneRekey},
		{"NoResurrectionAutoKey", gs.testTombstoneAutoKey},
		{"UniqueKeyNoted", gs.testUniqueKeyNoted},
		{"AdminPath", gs.testAdminPath},
		{"TokenFloor", gs.testFloor},
		{"TokenFloorNoGuard", gs.testFloorNoGuard},
		{"TokenFloorListedUnguarded", gs.testFloorListedUnguarded},
		{"MaxTokenTombstones", gs.testMaxTokenTombstones},
		{"ConfigMistakes", gs.testConfigMistakes},
		{"GuardRecords", gs.testGuardRecords},
		{"Resolve", gs.testResolve},
		{"SideDoors", gs.testSideDoors},
		{"TableSwap", gs.testTableSwap},
		{"TableSwapUnguarded", gs.testTableSwapUnguarded},
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
		add("NoResurrectionAfterSnapshot", gs.testTombstoneAfterSnapshot)
		// nor a raise of the floor while a transaction that read is open
		add("TokenFloorSnapshot", gs.testFloorSnapshot)
	}
	if !b.MySQL { // MySQL: a TEMPORARY table shadows any table for its session (see the threat model)
		add("NoResurrectionShadow", gs.testTombstoneShadow)
	}
	if b.Name != "sqlite" {
		add("NotNullDropped", gs.testNotNullDropped)
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
	d       dialect.Dialect
	g       dialect.Guarder
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
	execAll(e.t, e.ctx, e.raw, s.g.GuardDDL(tableName(e.t, table), schema.DefaultTokenColumn, schema.DefaultVersionColumn))
}

// tableName parses "table" or "schema.table".
func tableName(t testing.TB, s string) dialect.TableName {
	t.Helper()
	tn, err := dialect.ParseTableName(s)
	if err != nil {
		t.Fatal(err)
	}
	return tn
}

func (s *guardSuite) installed(e *env, schema, table string) bool {
	e.t.Helper()
	q, args := s.g.GuardInstalledQuery(dialect.TableName{Schema: schema, Name: table})
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

func (s *guardSuite) check(e *env, specs ...schema.GuardSpec) []schema.TableReport {
	e.t.Helper()
	reps, err := schema.Check(e.ctx, e.raw, s.d, specs...)
	if err != nil {
		e.t.Fatalf("schema.Check: %v", err)
	}
	if len(reps) != len(specs) {
		e.t.Fatalf("schema.Check returned %d reports for %d tables", len(reps), len(specs))
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
		ddl := append([]string{s.b.TableDDL}, s.g.GuardDDL(dialect.TableName{Name: "accounts"}, schema.DefaultTokenColumn, schema.DefaultVersionColumn)...)
		execAll(tb, ctx, raw, ddl)
		if _, ok := s.d.(dialect.Tombstoner); ok {
			tombFix, err := schema.TombstoneFix(ctx, raw, s.d, schema.GuardSpec{Table: "accounts"})
			if err != nil {
				tb.Fatal(err)
			}
			execAll(tb, ctx, raw, tombFix)
		}
		return dsn
	}
	return gb
}
