package fencetest

import (
	"database/sql"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// testTombstones checks G9, no resurrection: once holder 20 deleted a row, an INSERT
// or upsert of its key under an older token fails with ErrFenced through the wrapper
// and is refused for a plain writer too; the deleter and newer holders re-insert;
// composite keys; schema.Check reports the missing tombstone guard and its Fix
// installs it; a table without a primary key is reported; PurgeTombstones bounds the
// table, after which a stale insert succeeds (the documented trade-off).
func (s *guardSuite) testTombstones(t *testing.T) {
	ts, ok := s.d.(dialect.Tombstoner)
	if !ok {
		t.Fatalf("dialect %s does not implement dialect.Tombstoner", s.d.Name())
	}
	e := setup(t, s.b)
	e.seed(5, 400, 401, 402, 403)
	spec := schema.GuardSpec{Table: "accounts"}

	// schema.Check checks the tombstone guard.
	rep := s.check(e, spec)[0]
	if rep.OK() || rep.Guarded || rep.Tombstoned || !slices.Equal(rep.PrimaryKey, []string{"id"}) || len(rep.Problems) != 2 || !strings.Contains(rep.Problems[1], "tombstone") {
		t.Fatalf("schema.Check report = %+v", rep)
	}
	tombFix, err := schema.TombstoneFix(e.ctx, e.raw, s.d, spec)
	if err != nil {
		t.Fatal(err)
	}
	want := append(s.g.GuardDDL(dialect.TableName{Name: "accounts"}, schema.DefaultTokenColumn, schema.DefaultVersionColumn), tombFix...)
	if !slices.Equal(rep.Fix, want) {
		t.Fatalf("Fix = %q\nwant %q", rep.Fix, want)
	}
	s.applyFix(e, rep.Fix)
	if rep := s.checkTomb(e, spec)[0]; !rep.OK() || !rep.Guarded || !rep.Tombstoned || len(rep.Fix) != 0 {
		t.Fatalf("report after Fix = %+v", rep)
	}
	// Installing twice is harmless.
	execAll(t, e.ctx, e.raw, tombFix)

	ins := e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)")
	up := e.q(s.b.Upsert)
	del := e.q("DELETE FROM accounts WHERE id = ?")
	exists := func(id int64) bool {
		var n int
		if err := e.raw.QueryRowContext(e.ctx, e.q("SELECT COUNT(*) FROM accounts WHERE id = ?"), id).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n == 1
	}
	// Holder 20 deletes 401 and 402 through the wrapper.
	for _, id := range []int64{401, 402} {
		if _, err := e.db.ExecContext(tok(e.ctx, 20), del, id); err != nil {
			t.Fatalf("fenced DELETE %d: %v", id, err)
		}
	}
	if exists(401) || exists(402) {
		t.Fatal("rows not deleted")
	}
	// Stale holder 10: INSERT and upsert are fenced, the row stays absent.
	_, err = e.db.ExecContext(tok(e.ctx, 10), ins, 401, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	_, err = e.db.ExecContext(tok(e.ctx, 10), up, 401, 2)
	wantErr(t, err, fencedsql.ErrFenced)
	if !s.b.MySQL {
		// ON CONFLICT DO NOTHING: the stale row is refused, not silently skipped.
		_, err = e.db.ExecContext(tok(e.ctx, 10), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?) ON CONFLICT (id) DO NOTHING"), 401, 3)
		wantErr(t, err, fencedsql.ErrFenced)
	}
	// In a transaction, with other rows: all or nothing.
	tx, err := e.db.BeginTx(tok(e.ctx, 10), nil)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := tx.ExecContext(e.ctx, ins, 500, 1); err != nil {
		t.Fatal(err)
	}
	_, err = tx.ExecContext(e.ctx, e.q("INSERT INTO accounts (id, balance) VALUES (?, ?), (?, ?)"), 501, 1, 401, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	tx.Rollback()
	if exists(401) || exists(500) || exists(501) {
		t.Fatal("a stale insert resurrected a row")
	}
	// A plain writer outside the wrapper is refused too, as a NOT NULL violation on
	// the token column.
	plainRefused := func(what, q string, args ...any) {
		t.Helper()
		_, err := e.raw.ExecContext(e.ctx, q, args...)
		if err == nil {
			t.Fatalf("%s: passed, want a refusal by the tombstone", what)
		}
		if info := s.d.Classify(err); info.Kind != dialect.ErrorNotNull || !strings.EqualFold(info.Column, schema.DefaultTokenColumn) {
			t.Fatalf("%s: err = %v classified %+v, want a NOT NULL violation on fence_token", what, err, info)
		}
	}
	plainRefused("plain INSERT with the default token", ins, 401, 4)
	plainRefused("plain INSERT with token 19", e.q("INSERT INTO accounts (id, balance, fence_token) VALUES (?, ?, ?)"), 401, 4, 19)
	plainRefused("plain upsert", up, 401, 5)
	if exists(401) {
		t.Fatal("a plain insert resurrected row 401")
	}
	// Another key is unaffected; the deleter (equal token) re-inserts.
	if _, err := e.db.ExecContext(tok(e.ctx, 10), ins, 600, 1); err != nil {
		t.Fatalf("stale holder inserting a never-deleted key: %v", err)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 20), ins, 401, 6); err != nil {
		t.Fatalf("the deleter re-inserting: %v", err)
	}
	// Holder 30 deletes it again; 20 is now stale, 30 re-inserts by upsert.
	if _, err := e.db.ExecContext(tok(e.ctx, 30), del, 401); err != nil {
		t.Fatal(err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 20), ins, 401, 7)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(tok(e.ctx, 30), up, 401, 8); err != nil {
		t.Fatalf("holder 30 upserting: %v", err)
	}
	if r := e.row(401); r.balance != 8 || r.token != 30 {
		t.Fatalf("row 401 = %+v", r)
	}
	// The row exists again: a stale upsert is still fenced (by the row and the tombstone).
	_, err = e.db.ExecContext(tok(e.ctx, 10), up, 401, 9)
	wantErr(t, err, fencedsql.ErrFenced)
	// A newer holder (40) inserts a key deleted under 20.
	if _, err := e.db.ExecContext(tok(e.ctx, 40), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 402, 1); err != nil {
		t.Fatalf("newer holder re-inserting: %v", err)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 40), del, 402); err != nil {
		t.Fatal(err)
	}
	// Holder 20 deletes 403: its tombstone is purged below.
	if _, err := e.db.ExecContext(tok(e.ctx, 20), del, 403); err != nil {
		t.Fatal(err)
	}

	// Purge: nothing is older than an hour; then everything older than now.
	if n, err := schema.PurgeTombstones(e.ctx, e.raw, s.d, time.Hour, "accounts"); err != nil || n != 0 {
		t.Fatalf("PurgeTombstones(1h) = %d, %v", n, err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 10), ins, 403, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	time.Sleep(20 * time.Millisecond)
	n, err := schema.PurgeTombstones(e.ctx, e.raw, s.d, 0, "accounts")
	if err != nil || n != 3 { // 401, 402, 403
		t.Fatalf("PurgeTombstones(0) = %d, %v; want 3", n, err)
	}
	// The trade-off: with its tombstone gone, the stale holder resurrects 403.
	if _, err := e.db.ExecContext(tok(e.ctx, 10), ins, 403, 1); err != nil {
		t.Fatalf("stale insert after the purge: %v (the documented trade-off is that it passes)", err)
	}
	if _, err := schema.PurgeTombstones(e.ctx, e.raw, s.d, -time.Second, "accounts"); err == nil {
		t.Fatal("negative retention accepted")
	}

	// UntombstoneDDL removes the triggers; schema.Check sees it.
	execAll(t, e.ctx, e.raw, ts.UntombstoneDDL(dialect.TableName{Name: "accounts"}))
	execAll(t, e.ctx, e.raw, ts.UntombstoneDDL(dialect.TableName{Name: "accounts"}))
	if rep := s.checkTomb(e, spec)[0]; rep.OK() || rep.Tombstoned || !rep.Guarded {
		t.Fatalf("report after UntombstoneDDL = %+v", rep)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 50), del, 400); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 10), ins, 400, 1); err != nil {
		t.Fatalf("insert without the tombstone guard: %v", err)
	}
}

// Composite primary keys, custom token column, and tables without a primary key.
func (s *guardSuite) testTombstonesCompositeKey(t *testing.T) {
	e := setup(t, s.b)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE pairs (a BIGINT NOT NULL, b VARCHAR(20) NOT NULL, amount BIGINT NOT NULL, tok BIGINT NOT NULL DEFAULT 0, ver BIGINT NOT NULL DEFAULT 0, PRIMARY KEY (b, a))"+s.engine()); err != nil {
		t.Fatal(err)
	}
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE nokey (id BIGINT NOT NULL, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)"+s.engine()); err != nil {
		t.Fatal(err)
	}
	spec := schema.GuardSpec{Table: "pairs", TokenColumn: "tok", VersionColumn: "ver"}
	reps := s.checkTomb(e, spec, schema.GuardSpec{Table: "nokey"}, schema.GuardSpec{Table: "nosuchtable"})
	rep, nokey, missing := reps[0], reps[1], reps[2]
	if rep.Tombstoned || !slices.Equal(rep.PrimaryKey, []string{"b", "a"}) || len(rep.Problems) != 2 {
		t.Fatalf("pairs report = %+v", rep)
	}
	if nokey.Tombstoned || len(nokey.PrimaryKey) != 0 || len(nokey.Problems) != 2 || !strings.Contains(nokey.Problems[1], "no primary key") {
		t.Fatalf("nokey report = %+v", nokey)
	}
	if want := s.g.GuardDDL(dialect.TableName{Name: "nokey"}, schema.DefaultTokenColumn, schema.DefaultVersionColumn); !slices.Equal(nokey.Fix, want) {
		t.Fatalf("nokey Fix = %q, want only the guard", nokey.Fix)
	}
	if missing.Exists || len(missing.Problems) != 1 || len(missing.Fix) != 0 {
		t.Fatalf("missing table report = %+v", missing)
	}
	s.applyFix(e, rep.Fix)
	if rep := s.checkTomb(e, spec)[0]; !rep.OK() || !rep.Tombstoned {
		t.Fatalf("report after Fix = %+v", rep)
	}
	db, err := sql.Open(s.b.DriverName, WithParam(WithParam(WithParam(e.dsn, "fenced_tables=pairs"), "fenced_token_column=tok"), "fenced_version_column=ver"))
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	ins := e.q("INSERT INTO pairs (a, b, amount) VALUES (?, ?, ?)")
	for _, k := range []struct {
		a int64
		b string
	}{{1, "x"}, {1, "y"}, {2, "x"}} {
		if _, err := db.ExecContext(tok(e.ctx, 5), ins, k.a, k.b, 1); err != nil {
			t.Fatal(err)
		}
	}
	if _, err := db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM pairs WHERE a = ? AND b = ?"), 1, "x"); err != nil {
		t.Fatal(err)
	}
	_, err = db.ExecContext(tok(e.ctx, 10), ins, 1, "x", 2)
	wantErr(t, err, fencedsql.ErrFenced)
	// Keys sharing one part are other keys.
	if _, err := db.ExecContext(tok(e.ctx, 10), ins, 3, "x", 2); err != nil {
		t.Fatalf("other key: %v", err)
	}
	if !s.b.MySQL {
		// Another key differing in case (MySQL's default collation would take it for
		// the same key as (1, x) in the table itself).
		if _, err := db.ExecContext(tok(e.ctx, 10), ins, 1, "X", 2); err != nil {
			t.Fatalf("key differing in case: %v", err)
		}
	}
	if _, err := db.ExecContext(tok(e.ctx, 20), ins, 1, "x", 3); err != nil {
		t.Fatalf("the deleter re-inserting: %v", err)
	}
}

func (s *guardSuite) checkTomb(e *env, specs ...schema.GuardSpec) []schema.TableReport {
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
