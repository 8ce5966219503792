package fencetest

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Deleted stays deleted (G9) by class: for every key type a database offers, a key
// deleted by a newer holder under one session setting cannot be re-inserted by an
// older holder under another setting that spells the same key differently; a DELETE
// that commits while the stale INSERT waits on the key is seen; a key-changing UPDATE
// is judged like a DELETE and an INSERT; and the tombstone guard cannot be shadowed by a
// temporary table or switched off by replica mode.

// keyClass is one key type and two spellings of one key value, each with the session
// settings under which it is written. The table's own primary key calls the two
// spellings equal (the test proves it: the deleter's re-insert of ins succeeds once,
// and a second insert of del is a duplicate).
type keyClass struct {
	name   string
	typ    string   // the key column's type
	setup  []string // run once on the raw pool before the table is created
	del    string   // SQL literal of the key as the deleter writes it
	delSet []string // session settings of the deleter's connection
	ins    string   // SQL literal of the same key as the stale holder writes it
	insSet []string // session settings of the stale holder's connection
}

func (s *guardSuite) keyClasses() []keyClass {
	switch {
	case s.b.Name == "postgres":
		return []keyClass{
			{name: "bigint", typ: "bigint", del: "'7'", ins: "'07'"},
			{name: "numeric", typ: "numeric(12,3)", del: "'1.0'", ins: "'1'"},
			{name: "float8", typ: "float8", del: "'0.30000000000000004'", delSet: []string{"SET extra_float_digits = 3"}, ins: "'0.30000000000000004'", insSet: []string{"SET extra_float_digits = -15"}},
			{name: "timestamptz", typ: "timestamptz", del: "'2024-01-01 00:00:00+00'", delSet: []string{"SET TIME ZONE 'UTC'"}, ins: "'2024-01-01 09:00:00'", insSet: []string{"SET TIME ZONE 'Asia/Tokyo'"}},
			{name: "timestamp", typ: "timestamp", del: "'2024-01-02 03:04:05'", delSet: []string{"SET DateStyle = 'ISO, MDY'"}, ins: "'02/01/2024 03:04:05'", insSet: []string{"SET DateStyle = 'SQL, DMY'"}},
			{name: "date", typ: "date", del: "'2024-03-04'", delSet: []string{"SET DateStyle = 'ISO, MDY'"}, ins: "'04.03.2024'", insSet: []string{"SET DateStyle = 'German, DMY'"}},
			{name: "interval", typ: "interval", del: "'1 day'", delSet: []string{"SET IntervalStyle = 'postgres'"}, ins: "'PT24H'", insSet: []string{"SET IntervalStyle = 'iso_8601'"}},
			{name: "bytea", typ: "bytea", del: `'\x0102ff'`, delSet: []string{"SET bytea_output = 'hex'"}, ins: `'\001\002\377'`, insSet: []string{"SET bytea_output = 'escape'"}},
			{name: "uuid", typ: "uuid", del: "'a0eebc99-9c0b-4ef8-bb6d-6bb9bd380a11'", ins: "'{A0EEBC99-9C0B-4EF8-BB6D-6BB9BD380A11}'"},
			{name: "text-C", typ: `text COLLATE "C"`, del: "'abc'", ins: "'ab' || 'c'"},
			{name: "text-case-insensitive", typ: "text COLLATE fencetest_ci", setup: []string{"CREATE COLLATION IF NOT EXISTS fencetest_ci (provider = icu, locale = 'und-u-ks-level2', deterministic = false)"}, del: "'abc'", ins: "'ABC'"},
			{name: "inet", typ: "inet", del: "'10.0.0.1'", ins: "'10.0.0.1/32'"},
			{name: "jsonb", typ: "jsonb", del: `'{"a": 1, "b": 2}'`, ins: `'{"b":2,"a":1}'`},
		}
	case s.b.MySQL:
		return []keyClass{
			{name: "bigint", typ: "BIGINT", del: "'7'", ins: "'07'"},
			{name: "decimal", typ: "DECIMAL(12,3)", del: "'1.0'", ins: "'1'"},
			{name: "double", typ: "DOUBLE", del: "'0.1'", ins: "'1e-1'"},
			{name: "varchar-ci", typ: "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", del: "'abc'", ins: "'ABC'"},
			{name: "varchar-accent", typ: "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_general_ci", del: "'é'", ins: "'E'"},
			{name: "varchar-pad-space", typ: "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_bin", del: "'abc'", ins: "'abc   '"},
			{name: "varchar-collation-connection", typ: "VARCHAR(20) CHARACTER SET utf8mb4 COLLATE utf8mb4_unicode_ci", del: "'abc'", delSet: []string{"SET collation_connection = utf8mb4_bin"}, ins: "'ABC'", insSet: []string{"SET collation_connection = utf8mb4_general_ci"}},
			{name: "timestamp", typ: "TIMESTAMP", del: "'2024-01-01 00:00:00'", delSet: []string{"SET time_zone = '+00:00'"}, ins: "'2024-01-01 09:00:00'", insSet: []string{"SET time_zone = '+09:00'"}},
			{name: "datetime", typ: "DATETIME(3)", del: "'2024-01-01 00:00:00'", ins: "'2024-01-01 00:00:00.000'"},
			{name: "varbinary", typ: "VARBINARY(16)", del: "X'0102'", ins: "UNHEX('0102')"},
		}
	default: // sqlite
		return []keyClass{
			{name: "integer", typ: "INTEGER", del: "7", ins: "'7'"},
			{name: "real", typ: "REAL", del: "1.0", ins: "1"},
			{name: "numeric", typ: "NUMERIC", del: "'1.0'", ins: "1"},
			{name: "text-nocase", typ: "TEXT COLLATE NOCASE", del: "'abc'", ins: "'ABC'"},
			{name: "text-rtrim", typ: "TEXT COLLATE RTRIM", del: "'abc'", ins: "'abc  '"},
			{name: "blob", typ: "BLOB", del: "x'0102'", ins: "CAST(x'0102' AS BLOB)"},
		}
	}
}

// staleForms are the statements by which a stale holder tries to put a row back: a
// plain INSERT and every upsert form of the dialect, %s being the key literal, %t the
// conflict target.
func (s *guardSuite) staleForms() []string {
	const ins = "INSERT INTO %n (k, k2, balance) VALUES (%s, 1, 2)"
	switch {
	case s.b.MySQL:
		return []string{ins, ins + " ON DUPLICATE KEY UPDATE balance = VALUES(balance)"}
	default:
		return []string{ins, ins + " ON CONFLICT (%t) DO UPDATE SET balance = excluded.balance", ins + " ON CONFLICT (%t) DO NOTHING", ins + " ON CONFLICT DO NOTHING"}
	}
}

func form(f, table, key, target string) string {
	return strings.NewReplacer("%n", table, "%s", key, "%t", target).Replace(f)
}

// testTombstoneKeyClasses: every key class, as a single-column and as a composite key,
// deleted under one session setting and re-inserted under another, through the
// wrapper (every stale form) and by a plain writer: always refused, ErrFenced through
// the wrapper.
func (s *guardSuite) testTombstoneKeyClasses(t *testing.T) {
	e := setup(t, s.b)
	// One database for every key class (two tables each): setup's 60s bounded the whole
	// loop, which took 65s on a loaded machine and failed with "context deadline
	// exceeded". The deadline only stops a hung test; 5 minutes for the loop.
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Minute)
	t.Cleanup(cancel)
	e.ctx = ctx
	for i, kc := range s.keyClasses() {
		for _, composite := range []bool{false, true} {
			name := kc.name
			if composite {
				name += "/composite"
			}
			t.Run(name, func(t *testing.T) {
				table := fmt.Sprintf("kt%d", 2*i+btoi(composite))
				s.keyClassCase(t, e, table, kc, composite)
			})
		}
	}
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func (s *guardSuite) keyClassCase(t *testing.T, e *env, table string, kc keyClass, composite bool) {
	s.exec(e, kc.setup...)
	pk, target := "k", "k"
	if composite {
		pk, target = "k2, k", "k2, k"
	}
	s.exec(e, "CREATE TABLE "+table+" (k "+kc.typ+" NOT NULL, k2 INT NOT NULL DEFAULT 1, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0, PRIMARY KEY ("+pk+"))"+s.engine())
	spec := schema.GuardSpec{Table: table}
	s.applyFix(e, s.check(e, spec)[0].Fix)
	if rep := s.check(e, spec)[0]; !rep.OK() || !rep.Tombstoned {
		t.Fatalf("%s not fit after its Fix: %+v", table, rep)
	}
	fdb := e.fencedOn(t, table)
	deleter, stale := sessionConn(t, e.ctx, fdb, kc.delSet), sessionConn(t, e.ctx, fdb, kc.insSet)
	ins := "INSERT INTO " + table + " (k, k2, balance) VALUES (%s, 1, 1)"
	if _, err := deleter.ExecContext(tok(e.ctx, 5), fmt.Sprintf(ins, kc.del)); err != nil {
		t.Fatalf("insert %s: %v", kc.del, err)
	}
	if _, err := deleter.ExecContext(tok(e.ctx, 20), "DELETE FROM "+table+" WHERE k = "+kc.del+" AND k2 = 1"); err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
	for _, f := range s.staleForms() {
		_, err := stale.ExecContext(tok(e.ctx, 10), form(f, table, kc.ins, target))
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Errorf("stale %q: err = %v, want ErrFenced", form(f, table, kc.ins, target), err)
		}
	}
	// A plain writer on a connection with the stale holder's settings.
	plain := sessionConn(t, e.ctx, e.raw, kc.insSet)
	if _, err := plain.ExecContext(e.ctx, "INSERT INTO "+table+" (k, k2, balance, fence_token) VALUES ("+kc.ins+", 1, 3, 19)"); err == nil {
		t.Errorf("a plain INSERT with token 19 re-inserted the key deleted under 20")
	}
	if n := countRows(t, e, table); n != 0 {
		t.Fatalf("%d row(s) back after the stale writes", n)
	}
	// The two spellings are one key for the table: the deleter re-inserts with the
	// stale holder's spelling, and the deleter's own spelling is then a duplicate.
	if _, err := stale.ExecContext(tok(e.ctx, 20), fmt.Sprintf(ins, kc.ins)); err != nil {
		t.Fatalf("the deleter's re-insert: %v", err)
	}
	if _, err := deleter.ExecContext(tok(e.ctx, 20), fmt.Sprintf(ins, kc.del)); !errors.Is(err, fencedsql.ErrDuplicate) {
		t.Fatalf("%s and %s are not one key for the table: second insert err = %v", kc.del, kc.ins, err)
	}
}

// sessionConn returns one connection of db with the settings applied; it is closed
// when the test ends.
func sessionConn(t *testing.T, ctx context.Context, db *sql.DB, settings []string) *sql.Conn {
	t.Helper()
	c, err := db.Conn(ctx)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { c.Close() })
	for _, s := range settings {
		if _, err := c.ExecContext(ctx, s); err != nil {
			t.Fatalf("%s: %v", s, err)
		}
	}
	return c
}

func countRows(t *testing.T, e *env, table string) int {
	t.Helper()
	var n int
	if err := e.raw.QueryRowContext(e.ctx, "SELECT COUNT(*) FROM "+table).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// testTombstoneRace: the newer holder's DELETE is open when the stale holder's INSERT
// (or upsert) of the same key arrives; the INSERT waits on the key; the DELETE commits.
// The stale write must fail and the row stay deleted, in READ COMMITTED and in
// REPEATABLE READ (where PostgreSQL's snapshot cannot see the tombstone: a
// serialization failure, whose retry is ErrFenced), through the wrapper and for a plain
// writer. Not on SQLite, which serialises writers: the INSERT cannot start while the
// DELETE is open.
func (s *guardSuite) testTombstoneRace(t *testing.T) {
	e := setup(t, s.b)
	s.fixedAccounts(e)
	forms := s.staleForms()
	id := int64(100)
	for _, iso := range []sql.IsolationLevel{sql.LevelReadCommitted, sql.LevelRepeatableRead} {
		for fi, f := range forms {
			for _, plain := range []bool{false, true} {
				id++
				name := fmt.Sprintf("%v/form%d", iso, fi)
				if plain {
					name += "/plain"
				}
				t.Run(name, func(t *testing.T) { s.raceCase(t, e, iso, f, plain, id) })
			}
		}
	}
}

func (s *guardSuite) raceCase(t *testing.T, e *env, iso sql.IsolationLevel, f string, plain bool, id int64) {
	key := fmt.Sprint(id)
	if _, err := e.db.ExecContext(tok(e.ctx, 5), e.q("INSERT INTO accounts (id, balance) VALUES (?, 1)"), id); err != nil {
		t.Fatal(err)
	}
	stmt, pool := staleWrite(e, f, key, plain)
	// The stale holder's transaction takes its snapshot before the DELETE commits.
	stale, err := pool.BeginTx(tok(e.ctx, 7), &sql.TxOptions{Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Rollback()
	var n int
	if err := stale.QueryRowContext(e.ctx, "SELECT COUNT(*) FROM accounts").Scan(&n); err != nil {
		t.Fatal(err)
	}
	deleter, err := e.db.BeginTx(tok(e.ctx, 20), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer deleter.Rollback()
	if _, err := deleter.ExecContext(e.ctx, e.q("DELETE FROM accounts WHERE id = ?"), id); err != nil {
		t.Fatalf("fenced DELETE: %v", err)
	}
	done := make(chan error, 1)
	go func() {
		_, err := stale.ExecContext(e.ctx, stmt)
		if err == nil {
			err = stale.Commit()
		}
		done <- err
	}()
	select {
	case err := <-done:
		t.Fatalf("%s did not wait for the open DELETE of its key: %v", stmt, err)
	case <-time.After(300 * time.Millisecond):
	}
	if err := deleter.Commit(); err != nil {
		t.Fatal(err)
	}
	err = <-done
	if err == nil {
		t.Fatalf("%s (%v) resurrected row %d deleted under a newer token", stmt, iso, id)
	}
	if !plain && iso == sql.LevelReadCommitted && !errors.Is(err, fencedsql.ErrFenced) {
		t.Errorf("%s: err = %v, want ErrFenced", stmt, err)
	}
	stale.Rollback()
	if r := countWhere(t, e, id); r != 0 {
		t.Fatalf("row %d is back", id)
	}
	// Retried, the stale write sees the tombstone.
	if !plain {
		_, err := e.db.ExecContext(tok(e.ctx, 7), stmt)
		wantErr(t, err, fencedsql.ErrFenced)
	}
}

// staleWrite is the stale holder's write of form f for key on accounts, and the pool
// it goes through: the fenced one, or for a plain writer the raw one, with token 7 in
// the row.
func staleWrite(e *env, f, key string, plain bool) (string, *sql.DB) {
	stmt := strings.Replace(form(f, "accounts", key, "id"), "(k, k2, balance) VALUES ("+key+", 1, 2)", "(id, balance) VALUES ("+key+", 2)", 1)
	if !plain {
		return stmt, e.db
	}
	return strings.Replace(stmt, "(id, balance) VALUES ("+key+", 2)", "(id, balance, fence_token) VALUES ("+key+", 2, 7)", 1), e.raw
}

func countWhere(t *testing.T, e *env, id int64) int {
	t.Helper()
	var n int
	if err := e.raw.QueryRowContext(e.ctx, e.q("SELECT COUNT(*) FROM accounts WHERE id = ?"), id).Scan(&n); err != nil {
		t.Fatal(err)
	}
	return n
}

// testTombstoneRekey: an UPDATE that moves a row onto a key a newer holder deleted is
// refused; the key a row leaves gets a tombstone, so a stale holder cannot re-insert
// it; the holder that moved the row, or a newer one, can.
func (s *guardSuite) testTombstoneRekey(t *testing.T) {
	e := setup(t, s.b)
	s.fixedAccounts(e, 1, 2, 3)
	move := e.q("UPDATE accounts SET id = ? WHERE id = ?")
	if _, err := e.db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM accounts WHERE id = ?"), 2); err != nil {
		t.Fatal(err)
	}
	_, err := e.db.ExecContext(tok(e.ctx, 10), move, 2, 1)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.raw.ExecContext(e.ctx, e.q("UPDATE accounts SET id = ?, version = version + 1, fence_token = ? WHERE id = ?"), 2, 10, 1); err == nil {
		t.Fatal("a plain UPDATE moved row 1 onto key 2, deleted under a newer token")
	}
	if countWhere(t, e, 2) != 0 || countWhere(t, e, 1) != 1 {
		t.Fatal("a refused move changed the rows")
	}
	// Holder 30 moves row 1 away to 4: key 1 is now deleted under 30.
	if _, err := e.db.ExecContext(tok(e.ctx, 30), move, 4, 1); err != nil {
		t.Fatalf("holder 30 moving row 1 to 4: %v", err)
	}
	_, err = e.db.ExecContext(tok(e.ctx, 25), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 1, 9)
	wantErr(t, err, fencedsql.ErrFenced)
	if _, err := e.db.ExecContext(tok(e.ctx, 30), move, 2, 4); err != nil {
		t.Fatalf("holder 30 moving row 4 onto key 2 (deleted under 20): %v", err)
	}
	if countWhere(t, e, 2) != 1 {
		t.Fatal("row not moved to 2")
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 30), e.q("INSERT INTO accounts (id, balance) VALUES (?, ?)"), 1, 9); err != nil {
		t.Fatalf("the mover re-inserting key 1: %v", err)
	}
}

// testTombstoneShadow: a temporary table named like the tombstone table (created on a
// plain connection, outside the wrapper, which refuses it) does not shadow the
// tombstone table inside the trigger. MySQL resolves even qualified names to a
// session's TEMPORARY table: there only the wrapper's refusal and the privilege set-up
// (no CREATE TEMPORARY TABLES for the application) defend it, see the threat model.
func (s *guardSuite) testTombstoneShadow(t *testing.T) {
	e := setup(t, s.b)
	s.fixedAccounts(e, 1)
	if _, err := e.db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM accounts WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	c := sessionConn(t, e.ctx, e.raw, []string{"CREATE TEMP TABLE fencedsql_tomb_accounts (id BIGINT PRIMARY KEY, fence_token BIGINT NOT NULL, deleted_at TIMESTAMP)"})
	if _, err := c.ExecContext(e.ctx, e.q("INSERT INTO accounts (id, balance, fence_token) VALUES (?, ?, ?)"), 1, 1, 7); err == nil {
		t.Fatal("a temporary table shadowed the tombstone table: stale INSERT passed")
	}
	// Through the wrapper, creating it is refused.
	_, err := e.db.ExecContext(e.ctx, "CREATE TEMP TABLE fencedsql_tomb_accounts (id BIGINT)")
	wantErr(t, err, fencedsql.ErrUnsupported)
}

// testReplicaMode (PostgreSQL): in every spelling of session_replication_role =
// replica (superuser), the guard and tombstone triggers still fire (ENABLE ALWAYS).
func (s *guardSuite) testReplicaMode(t *testing.T) {
	e := setup(t, s.b)
	s.fixedAccounts(e, 1, 2)
	if _, err := e.db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM accounts WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	for _, spelling := range []string{
		"SET session_replication_role = replica",
		`SET "session_replication_role" TO 'replica'`,
		"SET SESSION session_replication_role = 'replica'",
		"SELECT set_config('session_replication_role', 'replica', false)",
	} {
		c := sessionConn(t, e.ctx, e.raw, []string{spelling})
		var role string
		if err := c.QueryRowContext(e.ctx, "SHOW session_replication_role").Scan(&role); err != nil || role != "replica" {
			t.Fatalf("%s: role %q, %v", spelling, role, err)
		}
		if _, err := c.ExecContext(e.ctx, "INSERT INTO accounts (id, balance, fence_token) VALUES (1, 1, 7)"); err == nil {
			t.Errorf("%s: stale INSERT of a deleted key passed", spelling)
		}
		if _, err := c.ExecContext(e.ctx, "UPDATE accounts SET balance = 666 WHERE id = 2"); err == nil {
			t.Errorf("%s: an UPDATE that does not advance the version passed", spelling)
		}
		c.Close()
	}
	if countWhere(t, e, 1) != 0 || e.row(2).balance == 666 {
		t.Fatal("replica mode wrote past the guards")
	}
}

// testSearchPathHijack (PostgreSQL): a session that puts its own schema before
// pg_catalog, holding an always-true bigint >= operator, cannot make the guard or the
// tombstone guard compute something else: the guard's functions name every operator
// with its schema, the tombstone function runs with a pinned search_path.
func (s *guardSuite) testSearchPathHijack(t *testing.T) {
	e := setup(t, s.b)
	s.fixedAccounts(e, 1, 2)
	if _, err := e.db.ExecContext(tok(e.ctx, 20), e.q("UPDATE accounts SET balance = 5 WHERE id = ?"), 1); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 20), e.q("DELETE FROM accounts WHERE id = ?"), 2); err != nil {
		t.Fatal(err)
	}
	s.exec(e, "CREATE SCHEMA hijack",
		"CREATE FUNCTION hijack.always(bigint, bigint) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'",
		"CREATE OPERATOR hijack.>= (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hijack.always)",
		"CREATE OPERATOR hijack.> (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hijack.always)",
		"CREATE OPERATOR hijack.< (LEFTARG = bigint, RIGHTARG = bigint, FUNCTION = hijack.always)",
		"CREATE FUNCTION hijack.always(text, text) RETURNS boolean LANGUAGE sql IMMUTABLE AS 'SELECT true'",
		"CREATE OPERATOR hijack.= (LEFTARG = text, RIGHTARG = text, FUNCTION = hijack.always)")
	c := sessionConn(t, e.ctx, e.raw, []string{"SET search_path = hijack, pg_catalog, public"})
	var hijacked bool
	if err := c.QueryRowContext(e.ctx, "SELECT 1::bigint >= 2::bigint").Scan(&hijacked); err != nil || !hijacked {
		t.Fatalf("the operator is not hijacked in this session (%v, %v): the test proves nothing", hijacked, err)
	}
	if _, err := c.ExecContext(e.ctx, "UPDATE public.accounts SET balance = 666, fence_token = 3, version = version + 1 WHERE id = 1"); err == nil {
		t.Error("a hijacked >= let an UPDATE lower the fence token past the guard")
	}
	if _, err := c.ExecContext(e.ctx, "INSERT INTO public.accounts (id, balance, fence_token) VALUES (2, 1, 3)"); err == nil {
		t.Error("a hijacked > let a stale INSERT past the tombstone guard")
	}
	// The guard's DELETE test compares text (TG_OP, the one-statement DELETE's mark).
	if _, err := c.ExecContext(e.ctx, "DELETE FROM public.accounts WHERE id = 1"); err == nil {
		t.Error("a hijacked text = let a plain DELETE past the guard")
	}
	if r := e.row(1); r.balance != 5 || r.token != 20 || countWhere(t, e, 2) != 0 {
		t.Fatalf("rows changed: %+v", r)
	}
}

// testTombstoneAfterSnapshot: a key inserted and deleted under a newer token after the
// stale holder's REPEATABLE READ or SERIALIZABLE snapshot was taken (so its snapshot
// sees neither the row nor the tombstone), and the same for a key whose older tombstone
// the snapshot does see. A red-team pass re-inserted the key under the older token on
// PostgreSQL (the tombstone check read the snapshot). The stale write must fail, at
// the statement or at commit, and the key stay deleted. Not on SQLite (one writer).
func (s *guardSuite) testTombstoneAfterSnapshot(t *testing.T) {
	e := setup(t, s.b)
	s.fixedAccounts(e)
	id := int64(300)
	levels := []sql.IsolationLevel{sql.LevelRepeatableRead, sql.LevelSerializable}
	if s.b.MySQL { // SERIALIZABLE reads lock: the newer holder's INSERT waits for the stale transaction
		levels = levels[:1]
	}
	for _, iso := range levels {
		for fi, f := range s.staleForms() {
			for _, plain := range []bool{false, true} {
				for _, older := range []bool{false, true} {
					id++
					name := fmt.Sprintf("%v/form%d/plain=%v/olderTombstone=%v", iso, fi, plain, older)
					t.Run(name, func(t *testing.T) { s.afterSnapshotCase(t, e, iso, f, plain, older, id) })
				}
			}
		}
	}
}

func (s *guardSuite) afterSnapshotCase(t *testing.T, e *env, iso sql.IsolationLevel, f string, plain, older bool, id int64) {
	key := fmt.Sprint(id)
	ins, del := e.q("INSERT INTO accounts (id, balance) VALUES (?, 1)"), e.q("DELETE FROM accounts WHERE id = ?")
	if older { // a tombstone under token 3 that the snapshot will see
		if _, err := e.db.ExecContext(tok(e.ctx, 3), ins, id); err != nil {
			t.Fatal(err)
		}
		if _, err := e.db.ExecContext(tok(e.ctx, 3), del, id); err != nil {
			t.Fatal(err)
		}
	}
	stmt, pool := staleWrite(e, f, key, plain)
	stale, err := pool.BeginTx(tok(e.ctx, 7), &sql.TxOptions{Isolation: iso})
	if err != nil {
		t.Fatal(err)
	}
	defer stale.Rollback()
	var n int
	if err := stale.QueryRowContext(e.ctx, "SELECT COUNT(*) FROM accounts").Scan(&n); err != nil {
		t.Fatal(err)
	}
	// The key's whole life under token 20, after the snapshot.
	if _, err := e.db.ExecContext(tok(e.ctx, 20), ins, id); err != nil {
		t.Fatal(err)
	}
	if _, err := e.db.ExecContext(tok(e.ctx, 20), del, id); err != nil {
		t.Fatal(err)
	}
	_, err = stale.ExecContext(e.ctx, stmt)
	if err == nil {
		err = stale.Commit()
	}
	if err == nil {
		t.Fatalf("%s (%v) re-inserted key %d, deleted under token 20 after its snapshot, under token 7", stmt, iso, id)
	}
	stale.Rollback()
	if r := countWhere(t, e, id); r != 0 {
		t.Fatalf("row %d is back", id)
	}
	if !plain { // retried, the stale write sees the tombstone
		_, err := e.db.ExecContext(tok(e.ctx, 7), stmt)
		wantErr(t, err, fencedsql.ErrFenced)
	}
}
