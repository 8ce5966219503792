package postgres_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// The transaction's recorded token (fencedsql_guard.tx_token; red-team rt60a F1–F3, F5) reverted or
// lowered on the server while the wrapper believes it is still recorded.
//
// Schedule (each case): par/kid with ON DELETE CASCADE, guarded with tombstones.
//   tx begun under l1; UPDATE kid (fenced under l1: the row's stamp is l1);
//   [pre...]; a statement under l3 (the wrapper records tx_token = l3);
//   the attack statement(s) under l3; DELETE FROM par under l3 (cascade deletes kid);
//   COMMIT.
// Oracle: if everything ran, kid's tombstone must be >= l3 and an INSERT of kid under
// l2 (l1 < l2 < l3) must be ErrFenced. An attack statement refused with a typed error
// (ErrUnsupported …) is a "held".

type txTokCase struct {
	name   string
	pre    []string // under l1, before the raising statement
	attack []string // under l3, after the raising statement
	// prepared: the attack statements are run through tx.Prepare + Exec
	prepared bool
}

func txTokRun(t *testing.T, raw, db *sql.DB, svc *memlock.Service, key int, c txTokCase) (held bool) {
	t.Helper()
	ctx := context.Background()
	testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
	l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rt60a%d", key))
	tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	type step struct {
		l   *lockclient.Lease
		q   string
		atk bool
	}
	steps := []step{{l1, fmt.Sprintf("UPDATE kid SET balance = balance WHERE id = %d", key), false}}
	for _, q := range c.pre {
		steps = append(steps, step{l1, q, false})
	}
	steps = append(steps, step{l3, "SELECT 1", false})
	for _, q := range c.attack {
		steps = append(steps, step{l3, q, true})
	}
	steps = append(steps, step{l3, fmt.Sprintf("DELETE FROM par WHERE id = %d", key), false})
	for _, s := range steps {
		sctx := fencedsql.WithLease(ctx, s.l)
		if s.atk && c.prepared {
			st, perr := tx.PrepareContext(sctx, s.q)
			if perr == nil {
				_, err = st.ExecContext(sctx)
				st.Close()
			} else {
				err = perr
			}
		} else {
			_, err = tx.ExecContext(sctx, s.q)
		}
		if err != nil {
			if s.atk && (errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrSchema)) {
				t.Logf("%s: held: %q refused: %v", c.name, s.q, err)
				return true
			}
			if s.atk {
				t.Errorf("%s: %q under %d: untyped error %v", c.name, s.q, s.l.Token(), err)
				return false
			}
			t.Errorf("%s: %q under %d: %v", c.name, s.q, s.l.Token(), err)
			return false
		}
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("%s: commit: %v", c.name, err)
		return false
	}
	if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", fencetest.ExecOf(db), key, l2, l3); err != nil {
		t.Errorf("%s: %v", c.name, err)
	}
	return false
}

func txTokSetup(t *testing.T) (raw, db *sql.DB) {
	t.Helper()
	dsn, raw := txTokSchema(t)
	return raw, testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=par,kid")
}

// txTokSchema makes par and kid (ON DELETE CASCADE), both guarded with tombstones, in
// a database of its own, and returns its DSN and a raw pool on it.
func txTokSchema(t *testing.T) (dsn string, raw *sql.DB) {
	t.Helper()
	return txTokTables(t, []string{"par", "kid"})
}

// txTokTables makes par and kid (ON DELETE CASCADE) and the objects extra in a database
// of its own, guards the tables of guarded with tombstones, and returns its DSN and a
// raw pool on it.
func txTokTables(t *testing.T, guarded []string, extra ...string) (dsn string, raw *sql.DB) {
	t.Helper()
	dsn = testdb.Postgres(t)
	raw = rawWith(t, dsn, append(fencetest.ParKidTables(), extra...)...)
	for _, tb := range guarded {
		checkTable(t, raw, dsn, tb)
	}
	return dsn, raw
}

// runTxTokCases runs each case of cases (txTokRun) in a subtest of its own, on the keys
// base, base+1, ….
func runTxTokCases(t *testing.T, raw, db *sql.DB, svc *memlock.Service, base int, cases []txTokCase) {
	t.Helper()
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if txTokRun(t, raw, db, svc, base+i, c) {
				t.Logf("%s: held (refused)", c.name)
			}
		})
	}
}

// TestTxTokenRecordedAgainAfterResetAll: RESET ALL inside the transaction (allowed by the
// wrapper: it only re-arms the session check) resets the custom placeholder
// fencedsql_guard.tx_token to empty; the wrapper still believes the raised token is
// recorded and does not send it again; the cascade then tombstones kid at its stamp l1.
func TestTxTokenRecordedAgainAfterResetAll(t *testing.T) {
	raw, db := txTokSetup(t)
	txTokRun(t, raw, db, memlock.New(), 1, txTokCase{name: "RESET ALL", attack: []string{"RESET ALL"}})
}

// TestTxTokenRecordedAgainAfterSavepointForms: a ROLLBACK TO SAVEPOINT the wrapper may not see as a
// savepoint statement (multi-statement text, prepared, odd spellings).
func TestTxTokenRecordedAgainAfterSavepointForms(t *testing.T) {
	raw, db := txTokSetup(t)
	svc := memlock.New()
	cases := []txTokCase{
		{name: "plain", pre: []string{"SAVEPOINT s"}, attack: []string{"ROLLBACK TO SAVEPOINT s"}},
		{name: "multi", pre: []string{"SAVEPOINT s"}, attack: []string{"SELECT 1; ROLLBACK TO SAVEPOINT s"}},
		{name: "multi2", pre: []string{"SAVEPOINT s"}, attack: []string{"ROLLBACK TO SAVEPOINT s; SELECT 1"}},
		{name: "prepared", pre: []string{"SAVEPOINT s"}, attack: []string{"ROLLBACK TO SAVEPOINT s"}, prepared: true},
		{name: "no-savepoint-word", pre: []string{"SAVEPOINT s"}, attack: []string{"ROLLBACK TO s"}},
		{name: "comment", pre: []string{"SAVEPOINT s"}, attack: []string{"/* x */ ROLLBACK /* y */ TO s"}},
		{name: "abort-work", pre: []string{"SAVEPOINT s"}, attack: []string{"ROLLBACK WORK TO SAVEPOINT s"}},
		{name: "abort-tx", pre: []string{"SAVEPOINT s"}, attack: []string{"ROLLBACK TRANSACTION TO SAVEPOINT s"}},
		{name: "nested-outer", pre: []string{"SAVEPOINT a", "SAVEPOINT b"}, attack: []string{"RELEASE SAVEPOINT b", "ROLLBACK TO SAVEPOINT a"}},
		{name: "multi-sp-raise", pre: []string{}, attack: []string{"SAVEPOINT z; SELECT 1", "ROLLBACK TO z"}},
		{name: "quoted", pre: []string{`SAVEPOINT "S"`}, attack: []string{`ROLLBACK TO "S"`}},
		{name: "set-local-quoted", attack: []string{`SET LOCAL "fencedsql_guard".tx_token = '0'`}},
		{name: "set-local-quoted2", attack: []string{`SET LOCAL fencedsql_guard."tx_token" TO 0`}},
		{name: "set-local-upper", attack: []string{`SET LOCAL FENCEDSQL_GUARD.TX_TOKEN = 0`}},
		{name: "reset-one", attack: []string{`RESET fencedsql_guard.tx_token`}},
		{name: "reset-quoted", attack: []string{`RESET "fencedsql_guard"."tx_token"`}},
		{name: "set-default", attack: []string{`SET LOCAL fencedsql_guard.tx_token TO DEFAULT`}},
		{name: "set-config", attack: []string{`SELECT set_config('fencedsql_guard.tx_token', '0', true)`}},
		{name: "set-config-upper", attack: []string{`SELECT pg_catalog.set_config('FENCEDSQL_GUARD.TX_TOKEN', '0', true)`}},
		{name: "set-config-quoted-fn", attack: []string{`SELECT "set_config"('fencedsql_guard.tx_token', '0', true)`}},
		{name: "set-config-U&", attack: []string{`SELECT set_config(U&'fencedsql\005fguard.tx_token', '0', true)`}},
		{name: "set-config-E", attack: []string{`SELECT set_config(E'fencedsql\x5fguard.tx_token', '0', true)`}},
		{name: "set-config-dollar", attack: []string{`SELECT set_config($$fencedsql_guard.tx_token$$, '0', true)`}},
		{name: "set-config-concat", attack: []string{`SELECT set_config('fencedsql_' || 'guard.tx_token', '0', true)`}},
		{name: "do", attack: []string{`DO $x$ BEGIN PERFORM set_config('fencedsql_guard.tx_token', '0', true); END $x$`}},
		{name: "reset-all-lower", attack: []string{"reset all"}},
		{name: "reset-all-comment", attack: []string{"RESET/**/ALL"}},
		{name: "set-local-one-quoted-ident", attack: []string{`SET LOCAL "fencedsql_guard.tx_token" = 0`}},
		{name: "set-local-U&", attack: []string{`SET LOCAL U&"fencedsql\005fguard".tx_token = 0`}},
		{name: "set-local-from-current", attack: []string{`SET LOCAL fencedsql_guard.tx_token FROM CURRENT`}},
		{name: "query_to_xml-E", attack: []string{`SELECT query_to_xml(E'SELECT set\x5fconfig(''fencedsql\x5fguard.tx_token'', ''0'', true)', true, false, '')`}},
		{name: "query_to_xml-concat", attack: []string{`SELECT query_to_xml('SELECT set_' || 'config(''fencedsql_' || 'guard.tx_token'', ''0'', true)', true, false, '')`}},
		{name: "query_to_xml-format", attack: []string{`SELECT query_to_xml(format('SELECT %s(%L, %L, true)', 'set_config', 'fencedsql_guard' || '.tx_token', '0'), true, false, '')`}},
		{name: "xml-chr", attack: []string{`SELECT query_to_xml('SELECT set' || chr(95) || 'config(' || quote_literal('fencedsql' || chr(95) || 'guard.tx_token') || ', ''0'', true)', true, false, '')`}},
		{name: "set-config-subselect-name", attack: []string{`SELECT set_config(n, '0', true) FROM (SELECT 'fencedsql_guard.tx_token' AS n) x`}},
		{name: "set-config-lateral", attack: []string{`SELECT s FROM (VALUES ('fencedsql'||'_guard.tx_token')) v(n), LATERAL set_config(n, '0', true) s`}},
		{name: "multi-nospace", pre: []string{"SAVEPOINT s"}, attack: []string{"SELECT 1;ROLLBACK TO s"}},
		{name: "multi-dollar", pre: []string{"SAVEPOINT s"}, attack: []string{"SELECT $$;$$; ROLLBACK TO s"}},
		{name: "multi-linecomment", pre: []string{"SAVEPOINT s"}, attack: []string{"SELECT 1 -- c\n; ROLLBACK TO s"}},
		{name: "multi-estring", pre: []string{"SAVEPOINT s"}, attack: []string{"SELECT E'\\';'; ROLLBACK TO s"}},
		{name: "multi-lower-release", pre: []string{"SAVEPOINT s", "SAVEPOINT t"}, attack: []string{"select 1; release t; rollback to s"}},
		{name: "set-session-auth-default", attack: []string{"SET SESSION AUTHORIZATION DEFAULT"}},
		{name: "set-local-role-none", attack: []string{"SET LOCAL ROLE NONE"}},
	}
	held := []string{}
	for i, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if txTokRun(t, raw, db, svc, 100+i, c) {
				held = append(held, c.name)
			}
		})
	}
	t.Logf("held (refused): %v", held)
}

// txTokSetupPlainParent: kid guarded (tombstones), its parent par a plain table (not
// guarded): a DELETE of par is not a guarded write and may share a text with others.
func txTokSetupPlainParent(t *testing.T) (raw, db *sql.DB) {
	t.Helper()
	dsn, raw := txTokTables(t, []string{"kid"})
	return raw, testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=kid")
}

// TestTxTokenRevertThenDeleteInOneTextRefused: the savepoint rollback (or RESET ALL)
// and the deletion in one text: the wrapper re-arms the recording only for the NEXT
// statement, but the deletion runs inside this one, after the server reverted the
// recorded token. The cascade's DELETE is the caller's own last statement (attack).
func TestTxTokenRevertThenDeleteInOneTextRefused(t *testing.T) {
	for _, guardedParent := range []bool{true, false} {
		t.Run(fmt.Sprintf("guardedParent=%v", guardedParent), func(t *testing.T) {
			var raw, db *sql.DB
			if guardedParent {
				raw, db = txTokSetup(t)
			} else {
				raw, db = txTokSetupPlainParent(t)
			}
			svc := memlock.New()
			key := 500
			for _, form := range []struct {
				name, pre, text string
			}{
				{"rollback-to", "SAVEPOINT s", "ROLLBACK TO SAVEPOINT s; DELETE FROM par WHERE id = %d"},
				{"reset-all", "", "RESET ALL; DELETE FROM par WHERE id = %d"},
				{"rollback-to-select", "SAVEPOINT s", "ROLLBACK TO SAVEPOINT s; WITH d AS (DELETE FROM par WHERE id = %d RETURNING 1) SELECT count(*) FROM d"},
			} {
				key++
				t.Run(form.name, func(t *testing.T) {
					c := txTokCase{name: form.name, attack: []string{fmt.Sprintf(form.text, key)}}
					if form.pre != "" {
						c.pre = []string{form.pre}
					}
					txTokRunNoDelete(t, raw, db, svc, key, c)
				})
			}
		})
	}
}

// txTokRunNoDelete is txTokRun whose attack statements do the deletion themselves.
func txTokRunNoDelete(t *testing.T, raw, db *sql.DB, svc *memlock.Service, key int, c txTokCase) {
	t.Helper()
	ctx := context.Background()
	testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
	l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rt60an%d", key))
	tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	run := func(l *lockclient.Lease, q string, atk bool) bool {
		if _, err := tx.ExecContext(fencedsql.WithLease(ctx, l), q); err != nil {
			if atk && (errors.Is(err, fencedsql.ErrUnsupported) || errors.Is(err, fencedsql.ErrSchema)) {
				t.Logf("%s: held: %q refused: %v", c.name, q, err)
			} else {
				t.Errorf("%s: %q under %d: %v", c.name, q, l.Token(), err)
			}
			return false
		}
		return true
	}
	if !run(l1, fmt.Sprintf("UPDATE kid SET balance = balance WHERE id = %d", key), false) {
		return
	}
	for _, q := range c.pre {
		if !run(l1, q, false) {
			return
		}
	}
	if !run(l3, "SELECT 1", false) {
		return
	}
	for _, q := range c.attack {
		if !run(l3, q, true) {
			return
		}
	}
	if err := tx.Commit(); err != nil {
		t.Errorf("%s: commit: %v", c.name, err)
		return
	}
	if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", fencetest.ExecOf(db), key, l2, l3); err != nil {
		t.Errorf("%s: %v", c.name, err)
	}
}

// TestReservedSettingDSNSpellingsRefused: a session arriving with a reserved
// fencedsql_guard.* setting must be refused (*SessionError) before a guarded write. The
// spellings PostgreSQL accepts in the startup options: backslash escapes in -c names
// (pg_split_opts unescapes them), the --name=value form, a quoted-ish case.
// A session that slips through with tx_token = 'abc' makes every deletion's tombstone
// fail with a raw 22P02; with a number it raises the tombstones (over-refusal).
func TestReservedSettingDSNSpellingsRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	cols := "balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0"
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, "+cols+")")
	checkTable(t, raw, dsn, "acc")
	enc := strings.NewReplacer(" ", "%20", "=", "%3D", `\`, "%5C", "-", "-")
	ctx := context.Background()
	for i, opt := range []string{
		`-c fencedsql\_guard.tx_token=abc`,
		`-c fencedsql_guard\.tx_token=abc`,
		`-c f\encedsql_guard.tx_token=abc`,
		`--fencedsql_guard.tx_token=abc`,
		`-cfencedsql_guard.tx_token=abc`,
	} {
		t.Run(opt, func(t *testing.T) {
			key := 1000 + i
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO acc (id) VALUES (%d)", key))
			full := dsn + "&fenced_tables=acc&options=" + enc.Replace(opt)
			// does the server take it?
			probe, err := sql.Open("pgx", full[:strings.Index(full, "&fenced_tables")]+"&options="+enc.Replace(opt))
			if err != nil {
				t.Fatal(err)
			}
			defer probe.Close()
			var v string
			if err := probe.QueryRowContext(ctx, "SELECT coalesce(current_setting('fencedsql_guard.tx_token', true), '<unset>')").Scan(&v); err != nil {
				t.Logf("server refused the option: %v (held)", err)
				return
			}
			t.Logf("server sees fencedsql_guard.tx_token = %q", v)
			db := testdb.Open(t, "fenced-pgx", full)
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), fmt.Sprintf("DELETE FROM acc WHERE id = %d", key))
			var se *fencedsql.SessionError
			if !errors.As(err, &se) {
				t.Errorf("options %q (server sees tx_token=%q): guarded DELETE: %v — want a *SessionError refusing the reserved fencedsql_guard.* setting", opt, v, err)
			}
		})
	}
}

// TestSavepointRecoveryUnderJoiningLease: the usual recovery from a failed
// statement — ROLLBACK TO SAVEPOINT — sent with a context carrying a lease taken
// meanwhile (the first statement under it). The wrapper sends its set_config of the
// raised token before the ROLLBACK TO, in a transaction the server has aborted (25P02),
// and breaks the transaction: a correct recovery is refused.
func TestSavepointRecoveryUnderJoiningLease(t *testing.T) {
	raw, db := txTokSetup(t)
	l1, _, l3 := fencetest.ThreeLeases(t, memlock.New(), "recover")
	testdb.Exec(t, raw, "INSERT INTO par (id) VALUES (1)")
	ctx := context.Background()
	ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
	tx, err := db.BeginTx(ctx1, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	for _, q := range []string{"UPDATE par SET balance = 1 WHERE id = 1", "SAVEPOINT s"} {
		if _, err := tx.ExecContext(ctx1, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	if _, err := tx.ExecContext(ctx1, "INSERT INTO par (id) VALUES (1)"); !errors.Is(err, fencedsql.ErrDuplicate) {
		t.Fatalf("duplicate insert: %v, want ErrDuplicate", err)
	}
	if _, err := tx.ExecContext(ctx3, "ROLLBACK TO SAVEPOINT s"); err != nil {
		t.Fatalf("ROLLBACK TO SAVEPOINT s (first statement under the joining lease %d) after a failed statement: %v — want the savepoint recovery to work (the wrapper's tx-token set_config was sent into the aborted transaction)", l3.Token(), err)
	}
	if _, err := tx.ExecContext(ctx3, "UPDATE par SET balance = 2 WHERE id = 1"); err != nil {
		t.Fatalf("UPDATE after the recovery: %v", err)
	}
	if err := tx.Commit(); err != nil {
		t.Fatalf("commit: %v", err)
	}
}

// TestTxTokenTextBeginOnConn: a transaction opened as text on a *sql.Conn (BEGIN,
// START TRANSACTION): the wrapper has no transaction state, so it never records a
// raised token; a cascade then tombstones at the row's stamp.
func TestTxTokenTextBeginOnConn(t *testing.T) {
	raw, db := txTokSetup(t)
	svc := memlock.New()
	ctx := context.Background()
	for i, begin := range []string{"BEGIN", "START TRANSACTION", "BEGIN ISOLATION LEVEL READ COMMITTED"} {
		t.Run(begin, func(t *testing.T) {
			key := 700 + i
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
			l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("tb%d", key))
			conn, err := db.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			steps := []struct {
				l *lockclient.Lease
				q string
			}{{l1, begin}, {l1, fmt.Sprintf("UPDATE kid SET balance = balance WHERE id = %d", key)}, {l3, fmt.Sprintf("DELETE FROM par WHERE id = %d", key)}, {l3, "COMMIT"}}
			for _, s := range steps {
				if _, err := conn.ExecContext(fencedsql.WithLease(ctx, s.l), s.q); err != nil {
					if errors.Is(err, fencedsql.ErrUnsupported) {
						t.Logf("held: %q refused: %v", s.q, err)
					} else {
						t.Errorf("%q: %v", s.q, err)
					}
					_, _ = conn.ExecContext(ctx, "ROLLBACK")
					return
				}
			}
			if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", fencetest.ExecOf(db), key, l2, l3); err != nil {
				t.Errorf("a text %s transaction: %v", begin, err)
			}
		})
	}
}

// TestReservedSettingRuntimeParamsAndEnvRefused: the other ways a session arrives
// with a reserved setting under pgx: a runtime parameter in the URL (any case,
// percent-encoded), PGOPTIONS in the environment (with a backslash in the name).
func TestReservedSettingRuntimeParamsAndEnvRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	cols := "balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0"
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, "+cols+")")
	checkTable(t, raw, dsn, "acc")
	ctx := context.Background()
	type form struct{ name, extra, env string }
	for i, f := range []form{
		{"param", "&fencedsql_guard.tx_token=abc", ""},
		{"param-upper", "&FENCEDSQL_GUARD.TX_TOKEN=abc", ""},
		{"param-pct", "&fencedsql%5Fguard.tx_token=abc", ""},
		{"param-pct2", "&%66encedsql_guard.tx_token=abc", ""},
		{"pgoptions", "", `-c fencedsql_guard.tx_token=abc`},
		{"pgoptions-bs", "", `-c fencedsql\_guard.tx_token=abc`},
	} {
		t.Run(f.name, func(t *testing.T) {
			if f.env != "" {
				t.Setenv("PGOPTIONS", f.env)
			}
			key := 2000 + i
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO acc (id) VALUES (%d)", key))
			db, err := sql.Open("fenced-pgx", dsn+"&fenced_tables=acc"+f.extra)
			if err != nil {
				t.Logf("held: open refused: %v", err)
				return
			}
			defer db.Close()
			_, err = db.ExecContext(fencedsql.WithToken(ctx, 5), fmt.Sprintf("DELETE FROM acc WHERE id = %d", key))
			var se *fencedsql.SessionError
			if err == nil || errors.As(err, &se) || errors.Is(err, fencedsql.ErrSchema) || errors.Is(err, fencedsql.ErrUnsupported) {
				if err == nil {
					// did the session actually carry it?
					var v sql.NullString
					_ = db.QueryRowContext(ctx, "SELECT current_setting('fencedsql_guard.tx_token', true)").Scan(&v)
					if v.Valid && v.String != "" {
						t.Errorf("%s: the session carries fencedsql_guard.tx_token=%q and the guarded DELETE went through unrefused", f.name, v.String)
					} else {
						t.Logf("held: the setting did not reach the session (%v)", v)
					}
				} else {
					t.Logf("held: %v", err)
				}
				return
			}
			t.Errorf("%s: guarded DELETE on a session arriving with fencedsql_guard.tx_token=abc: %v — want a *SessionError (refused before the write), not a raw error", f.name, err)
		})
	}
}

// TestTxTokenRaiseByStatementForms: the statement that first carries the joining
// lease l3 is also the cascading DELETE of the parent, sent in each way database/sql
// offers (Exec, Query, a statement prepared in the transaction, a pool statement
// bound to the transaction with tx.Stmt, a DELETE … RETURNING read with QueryRow).
// Oracle as txTokRun.
func TestTxTokenRaiseByStatementForms(t *testing.T) {
	raw, db := txTokSetup(t)
	svc := memlock.New()
	ctx := context.Background()
	type form struct {
		name string
		run  func(tx *sql.Tx, ctx3 context.Context, k int) error
	}
	del := func(k int) string { return fmt.Sprintf("DELETE FROM par WHERE id = %d", k) }
	forms := []form{
		{"exec", func(tx *sql.Tx, ctx3 context.Context, k int) error {
			_, err := tx.ExecContext(ctx3, del(k))
			return err
		}},
		{"exec-args", func(tx *sql.Tx, ctx3 context.Context, k int) error {
			_, err := tx.ExecContext(ctx3, "DELETE FROM par WHERE id = $1", k)
			return err
		}},
		{"query", func(tx *sql.Tx, ctx3 context.Context, k int) error {
			rows, err := tx.QueryContext(ctx3, del(k)+" RETURNING id")
			if err != nil {
				return err
			}
			for rows.Next() {
			}
			rows.Close()
			return rows.Err()
		}},
		{"queryrow", func(tx *sql.Tx, ctx3 context.Context, k int) error {
			var id int
			return tx.QueryRowContext(ctx3, "DELETE FROM par WHERE id = $1 RETURNING id", k).Scan(&id)
		}},
		{"tx-prepare", func(tx *sql.Tx, ctx3 context.Context, k int) error {
			st, err := tx.PrepareContext(ctx3, "DELETE FROM par WHERE id = $1")
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = st.ExecContext(ctx3, k)
			return err
		}},
		{"db-prepare-tx-stmt", func(tx *sql.Tx, ctx3 context.Context, k int) error {
			st, err := db.PrepareContext(ctx, "DELETE FROM par WHERE id = $1")
			if err != nil {
				return err
			}
			defer st.Close()
			_, err = tx.StmtContext(ctx3, st).ExecContext(ctx3, k)
			return err
		}},
		{"delete-in-clause", func(tx *sql.Tx, ctx3 context.Context, k int) error {
			_, err := tx.ExecContext(ctx3, fmt.Sprintf("DELETE FROM par WHERE id IN (SELECT %d)", k))
			return err
		}},
		{"writable-cte", func(tx *sql.Tx, ctx3 context.Context, k int) error {
			_, err := tx.ExecContext(ctx3, fmt.Sprintf("WITH d AS (DELETE FROM par WHERE id = %d RETURNING id) SELECT count(*) FROM d", k))
			return err
		}},
	}
	for i, f := range forms {
		k := 3000 + i
		t.Run(f.name, func(t *testing.T) {
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", k), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", k, k))
			l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("form%d", k))
			tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			if _, err := tx.ExecContext(fencedsql.WithLease(ctx, l1), fmt.Sprintf("UPDATE kid SET balance = balance WHERE id = %d", k)); err != nil {
				t.Fatal(err)
			}
			if err := f.run(tx, fencedsql.WithLease(ctx, l3), k); err != nil {
				if errors.Is(err, fencedsql.ErrUnsupported) {
					t.Logf("held: refused: %v", err)
					return
				}
				t.Fatalf("%s: %v", f.name, err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatal(err)
			}
			if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", fencetest.ExecOf(db), k, l2, l3); err != nil {
				t.Errorf("%s: %v", f.name, err)
			}
		})
	}
}

// TestReservedSettingPersistThroughWrapperRefused: statements through the wrapper that
// would give later sessions a reserved setting (ALTER DATABASE/ROLE … SET) or reset
// it mid-transaction must be refused.
func TestReservedSettingPersistThroughWrapperRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	cols := "balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0"
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, "+cols+")")
	checkTable(t, raw, dsn, "acc")
	var dbname string
	if err := raw.QueryRow("SELECT current_database()").Scan(&dbname); err != nil {
		t.Fatal(err)
	}
	db := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	ctx := context.Background()
	for _, q := range []string{
		`ALTER DATABASE "` + dbname + `" SET fencedsql_guard.tx_token = 'abc'`,
		`ALTER DATABASE "` + dbname + `" SET "fencedsql_guard".tx_token = 'abc'`,
		`ALTER ROLE CURRENT_USER IN DATABASE "` + dbname + `" SET fencedsql_guard.tx_token = 'abc'`,
		`ALTER ROLE CURRENT_USER IN DATABASE "` + dbname + `" SET "FENCEDSQL_GUARD"."TX_TOKEN" = 'abc'`,
	} {
		_, err := db.ExecContext(ctx, q)
		if err == nil {
			t.Errorf("%q through the wrapper: accepted — want it refused (every later session of the database carries the reserved setting)", q)
		} else {
			t.Logf("held: %q: %v", q, err)
		}
	}
	rawWith(t, dsn, `ALTER DATABASE "`+dbname+`" RESET ALL`, `ALTER ROLE CURRENT_USER IN DATABASE "`+dbname+`" RESET ALL`)
}

// TestTxTokenRandomSavepointSchedules: random schedules of savepoint statements
// (SAVEPOINT, RELEASE, ROLLBACK TO — as text, through tx.Query, or prepared), reads
// under l1 or l3, fenced UPDATEs of the parent under l1 or l3 and, optionally, RESET
// ALL, between the fence of kid under l1 and the cascading DELETE of the parent under
// l3. Oracle: the deletion was made by a statement carrying l3, so kid's tombstone must
// be >= l3 and an INSERT of kid under l2 is ErrFenced; a refusal must be typed.
// The subtest "safe-ops" uses only the text forms (expected to hold); "all-ops"
// includes the prepared ROLLBACK TO and RESET ALL (F1, F2).
func TestTxTokenRandomSavepointSchedules(t *testing.T) {
	for _, all := range []bool{false, true} {
		name := "safe-ops"
		if all {
			name = "all-ops"
		}
		t.Run(name, func(t *testing.T) {
			raw, db := txTokSetup(t)
			svc := memlock.New()
			ctx := context.Background()
			seed := int64(60)
			if all {
				seed = 61
			}
			rng := newTxTokRng(seed)
			fails := 0
			for n := 0; n < 40 && fails < 3; n++ {
				key := 4000 + n
				testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d)", key, key))
				l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rnd%d", key))
				tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
				if err != nil {
					t.Fatal(err)
				}
				log := []string{}
				exec := func(l *lockclient.Lease, q string, how int) error {
					lctx := fencedsql.WithLease(ctx, l)
					log = append(log, fmt.Sprintf("[%d/%d] %s", l.Token(), how, q))
					switch how {
					case 1:
						rows, err := tx.QueryContext(lctx, q)
						if err != nil {
							return err
						}
						rows.Close()
						return rows.Err()
					case 2:
						st, err := tx.PrepareContext(lctx, q)
						if err != nil {
							return err
						}
						defer st.Close()
						_, err = st.ExecContext(lctx)
						return err
					default:
						_, err := tx.ExecContext(lctx, q)
						return err
					}
				}
				failed := false
				must := func(err error) bool {
					if err == nil {
						return true
					}
					if !errors.Is(err, fencedsql.ErrUnsupported) {
						t.Errorf("schedule %d: %v: untyped/unexpected error %v", n, log, err)
						fails++
					}
					failed = true
					return false
				}
				if !must(exec(l1, fmt.Sprintf("UPDATE kid SET balance = balance WHERE id = %d", key), 0)) {
					tx.Rollback()
					continue
				}
				var stack []string
				sp := 0
				for i := 0; i < 3+rng.intn(8) && !failed; i++ {
					l := l1
					if rng.intn(2) == 0 {
						l = l3
					}
					how := 0
					if rng.intn(3) == 0 {
						how = 1
					}
					switch op := rng.intn(7); {
					case op == 0:
						sp++
						s := fmt.Sprintf("s%d", sp)
						if must(exec(l, "SAVEPOINT "+s, 0)) {
							stack = append(stack, s)
						}
					case op == 1 && len(stack) > 0:
						j := rng.intn(len(stack))
						if must(exec(l, "RELEASE SAVEPOINT "+stack[j], 0)) {
							stack = stack[:j]
						}
					case op == 2 && len(stack) > 0:
						j := rng.intn(len(stack))
						if all && rng.intn(2) == 0 {
							how = 2
						}
						if must(exec(l, "ROLLBACK TO SAVEPOINT "+stack[j], how)) {
							stack = stack[:j+1]
						}
					case op == 3:
						must(exec(l, "SELECT 1", how))
					case op == 4:
						must(exec(l, fmt.Sprintf("UPDATE par SET balance = balance + 1 WHERE id = %d", key), 0))
					case op == 5 && all:
						must(exec(l, "RESET ALL", 0))
					default:
						must(exec(l, "SELECT 2", how))
					}
				}
				if failed || !must(exec(l3, fmt.Sprintf("DELETE FROM par WHERE id = %d", key), 0)) {
					tx.Rollback()
					continue
				}
				if err := tx.Commit(); err != nil {
					t.Errorf("schedule %d: commit: %v", n, err)
					fails++
					continue
				}
				if err := fencetest.RaisedTombstone(raw, "fencedsql_tomb_kid", fencetest.ExecOf(db), key, l2, l3); err != nil {
					t.Errorf("schedule %d (l1=%d): %s; then DELETE par under %d: %v", n, l1.Token(), strings.Join(log, "; "), l3.Token(), err)
					fails++
				}
			}
		})
	}
}

type txTokRng struct{ s uint64 }

func newTxTokRng(seed int64) *txTokRng { return &txTokRng{uint64(seed)*2654435761 + 1} }
func (r *txTokRng) intn(n int) int {
	r.s ^= r.s << 13
	r.s ^= r.s >> 7
	r.s ^= r.s << 17
	return int(r.s % uint64(n))
}

// TestTxControlTextInTxRefused: transaction control as text inside a wrapper
// transaction (PREPARE TRANSACTION, COMMIT AND CHAIN, ROLLBACK AND CHAIN, END, ABORT)
// would end the server transaction behind the wrapper (its recorded token with it):
// expected refused (ErrUnsupported).
func TestTxControlTextInTxRefused(t *testing.T) {
	raw, db := txTokSetup(t)
	_ = raw
	ctx := context.Background()
	l1, _, _ := fencetest.ThreeLeases(t, memlock.New(), "txc")
	for _, q := range []string{"PREPARE TRANSACTION 'rt60a_x'", "COMMIT AND CHAIN", "ROLLBACK AND CHAIN", "END", "ABORT", "COMMIT PREPARED 'rt60a_x'", "END TRANSACTION AND CHAIN"} {
		tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
		if err != nil {
			t.Fatal(err)
		}
		_, err = tx.ExecContext(fencedsql.WithLease(ctx, l1), q)
		if err == nil {
			t.Errorf("%q inside a wrapper transaction: accepted — the server transaction ended behind the wrapper", q)
			_, _ = raw.Exec("ROLLBACK PREPARED 'rt60a_x'")
		} else if !errors.Is(err, fencedsql.ErrUnsupported) {
			t.Errorf("%q: untyped error %v", q, err)
		} else {
			t.Logf("held: %q: %v", q, err)
		}
		_ = tx.Rollback()
	}
}

// TestSavepointRecoveryAfterFailedSavepointStatement: in a transaction whose
// token a lease raised (recorded), a savepoint statement that fails (ROLLBACK TO or
// RELEASE of a name that does not exist: 3B001, the transaction aborted) re-arms the
// recording; the recovery ROLLBACK TO SAVEPOINT s that follows — no new lease — then
// has the wrapper's set_config sent first, into the aborted transaction (25P02), and
// the transaction is broken. A correct recovery is refused.
func TestSavepointRecoveryAfterFailedSavepointStatement(t *testing.T) {
	raw, db := txTokSetup(t)
	svc := memlock.New()
	ctx := context.Background()
	for i, bad := range []string{"ROLLBACK TO SAVEPOINT nosuch", "RELEASE SAVEPOINT nosuch"} {
		t.Run(bad, func(t *testing.T) {
			key := 5000 + i
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d)", key))
			l1, _, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rec%d", key))
			ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
			tx, err := db.BeginTx(ctx1, nil)
			if err != nil {
				t.Fatal(err)
			}
			defer tx.Rollback() //nolint:errcheck
			for _, s := range []struct {
				c context.Context
				q string
			}{{ctx1, fmt.Sprintf("UPDATE par SET balance = 1 WHERE id = %d", key)}, {ctx3, "SELECT 1"}, {ctx3, "SAVEPOINT s"}} {
				if _, err := tx.ExecContext(s.c, s.q); err != nil {
					t.Fatalf("%s: %v", s.q, err)
				}
			}
			if _, err := tx.ExecContext(ctx3, bad); err == nil {
				t.Fatalf("%s succeeded", bad)
			}
			if _, err := tx.ExecContext(ctx3, "ROLLBACK TO SAVEPOINT s"); err != nil {
				t.Fatalf("ROLLBACK TO SAVEPOINT s after the failed %q (same leases, nothing new): %v — want the recovery to work", bad, err)
			}
			if _, err := tx.ExecContext(ctx3, fmt.Sprintf("UPDATE par SET balance = 2 WHERE id = %d", key)); err != nil {
				t.Fatalf("UPDATE after the recovery: %v", err)
			}
			if err := tx.Commit(); err != nil {
				t.Fatalf("commit: %v", err)
			}
		})
	}
}

// TestTxTokenDoesNotLeak: after a raised transaction (committed, rolled back,
// or rolled back after an error), the next transaction and the next autocommit
// deletion on the same pooled connection record deletions at their own token, not at
// the earlier transaction's raised token (over-refusal if it leaked).
func TestTxTokenDoesNotLeak(t *testing.T) {
	raw, db := txTokSetup(t)
	db.SetMaxOpenConns(1)
	svc := memlock.New()
	ctx := context.Background()
	for i, end := range []string{"commit", "rollback", "error-rollback"} {
		t.Run(end, func(t *testing.T) {
			k := 6000 + 10*i
			testdb.Exec(t, raw, fmt.Sprintf("INSERT INTO par (id) VALUES (%d), (%d), (%d)", k, k+1, k+2),
				fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, %d), (%d, %d)", k+1, k+1, k+2, k+2))
			l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("leak%d", k))
			tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(fencedsql.WithLease(ctx, l1), fmt.Sprintf("UPDATE par SET balance = 1 WHERE id = %d", k)); err != nil {
				t.Fatal(err)
			}
			if _, err := tx.ExecContext(fencedsql.WithLease(ctx, l3), "SELECT 1"); err != nil {
				t.Fatal(err)
			}
			switch end {
			case "commit":
				err = tx.Commit()
			case "rollback":
				err = tx.Rollback()
			default:
				_, _ = tx.ExecContext(fencedsql.WithLease(ctx, l3), "SELECT 1/0")
				err = tx.Rollback()
			}
			if err != nil {
				t.Fatal(err)
			}
			// autocommit: l1's holder (still live) fences and deletes kid k+1 in its own tx
			tx2, err := db.BeginTx(fencedsql.WithLease(ctx, l1), nil)
			if err != nil {
				t.Fatal(err)
			}
			if _, err := tx2.ExecContext(fencedsql.WithLease(ctx, l1), fmt.Sprintf("UPDATE kid SET balance = 1 WHERE id = %d", k+1)); err != nil {
				t.Fatal(err)
			}
			if _, err := tx2.ExecContext(fencedsql.WithLease(ctx, l1), fmt.Sprintf("DELETE FROM par WHERE id = %d", k+1)); err != nil {
				t.Fatal(err)
			}
			if err := tx2.Commit(); err != nil {
				t.Fatal(err)
			}
			if _, err := db.ExecContext(fencedsql.WithLease(ctx, l1), fmt.Sprintf("DELETE FROM kid WHERE id = %d", k+2)); err != nil {
				t.Fatal(err)
			}
			for _, id := range []int{k + 1, k + 2} {
				var tomb uint64
				if err := raw.QueryRow(fmt.Sprintf("SELECT fence_token FROM fencedsql_tomb_kid WHERE id = %d", id)).Scan(&tomb); err != nil {
					t.Fatalf("tombstone: %v", err)
				}
				if tomb != l1.Token() {
					t.Errorf("%s: kid %d deleted under %d after a transaction raised to %d ended on the same connection: tombstone %d, want %d (the raised token leaked)", end, id, l1.Token(), l3.Token(), tomb, l1.Token())
				}
				if _, err := db.ExecContext(fencedsql.WithLease(ctx, l2), fmt.Sprintf("INSERT INTO kid (id, pid) VALUES (%d, NULL)", id)); err != nil {
					t.Errorf("%s: INSERT of kid %d under %d (newer than the deleting %d): %v — a correct write refused", end, id, l2.Token(), l1.Token(), err)
				}
			}
		})
	}
}

// TestReservedNumericFromOptionsRefused: the F4 bypass with a number:
// options -c fencedsql\_guard.tx_token=<huge> is not refused; a DELETE under token 5 is
// tombstoned at the huge token, and a later INSERT of the key under token 6 (newer than
// the deletion) is refused — a correct write refused, for as long as the tombstone lives.
func TestReservedNumericFromOptionsRefused(t *testing.T) {
	dsn := testdb.Postgres(t)
	cols := "balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0"
	raw := rawWith(t, dsn, "CREATE TABLE acc (id bigint PRIMARY KEY, "+cols+")", "INSERT INTO acc (id) VALUES (1)")
	checkTable(t, raw, dsn, "acc")
	ctx := context.Background()
	bad := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc&options=-c%20fencedsql%5C_guard.tx_token%3D9000000000000000000")
	_, err := bad.ExecContext(fencedsql.WithToken(ctx, 5), "DELETE FROM acc WHERE id = 1")
	var se *fencedsql.SessionError
	if errors.As(err, &se) && errors.Is(err, fencedsql.ErrSchema) {
		return // held: the session is refused before anything is written
	}
	if err != nil {
		t.Fatalf("DELETE under 5: %v, want a *SessionError (the session arrived with a reserved setting)", err)
	}
	var tomb int64
	_ = raw.QueryRow("SELECT fence_token FROM fencedsql_tomb_acc WHERE id = 1").Scan(&tomb)
	good := testdb.Open(t, "fenced-pgx", dsn+"&fenced_tables=acc")
	_, err = good.ExecContext(fencedsql.WithToken(ctx, 6), "INSERT INTO acc (id) VALUES (1)")
	if err != nil {
		t.Errorf("session arriving with options -c fencedsql\\_guard.tx_token=9e18 was not refused; its DELETE under 5 was tombstoned at %d; INSERT of the key under 6 on a clean pool: %v — a correct write refused", tomb, err)
	}
}

// TestTxTokenSecondLeaseInReadOnlyTx: a read-only transaction whose reads carry a
// second, higher lease: the wrapper's set_config must not fail it (over-refusal).
func TestTxTokenSecondLeaseInReadOnlyTx(t *testing.T) {
	raw, db := txTokSetup(t)
	testdb.Exec(t, raw, "INSERT INTO par (id) VALUES (1)")
	l1, _, l3 := fencetest.ThreeLeases(t, memlock.New(), "ro")
	ctx := context.Background()
	for _, iso := range []sql.IsolationLevel{sql.LevelDefault, sql.LevelSerializable, sql.LevelRepeatableRead} {
		tx, err := db.BeginTx(fencedsql.WithLease(ctx, l1), &sql.TxOptions{ReadOnly: true, Isolation: iso})
		if err != nil {
			t.Fatal(err)
		}
		var n int
		if err := tx.QueryRowContext(fencedsql.WithLease(ctx, l1), "SELECT count(*) FROM par").Scan(&n); err != nil {
			t.Fatal(err)
		}
		if err := tx.QueryRowContext(fencedsql.WithLease(ctx, l3), "SELECT count(*) FROM par WHERE id = 1").Scan(&n); err != nil {
			t.Errorf("%v read-only: a read under a second lease: %v — want it to work", iso, err)
		}
		if err := tx.Commit(); err != nil {
			t.Errorf("%v read-only: commit: %v", iso, err)
		}
	}
}

// TestTxTokenRevertGenerated: deletion kinds admitted as "written by this transaction
// first" (cascade from a parent, cross-partition move) × the reverting forms of F1/F2
// (RESET ALL; a prepared ROLLBACK TO SAVEPOINT) between the raise and the deletion.
// Oracle: the deletion is made under l3, so the key's tombstone >= l3 and an INSERT of
// the key under l2 is ErrFenced.
func TestTxTokenRevertGenerated(t *testing.T) {
	raw, db := raisedSetup(t)
	svc := memlock.New()
	ctx := context.Background()
	kinds := []struct {
		name, table, fence, del string
		setup                   []string
	}{
		{"cascade", "kid", "UPDATE kid SET balance = balance WHERE id = %[1]d", "DELETE FROM par WHERE id = %[1]d",
			[]string{"INSERT INTO par (id) VALUES (%[1]d)", "INSERT INTO kid (id, pid) VALUES (%[1]d, %[1]d)"}},
		{"move", "accp", "UPDATE accp SET balance = balance WHERE id = %[1]d", "UPDATE accp SET id = %[1]d + 10000 WHERE id = %[1]d",
			[]string{"INSERT INTO accp (id) VALUES (%[1]d)"}},
	}
	forms := []string{"reset-all", "prepared-rollback-to"}
	key := 800
	for _, k := range kinds {
		for _, f := range forms {
			key++
			t.Run(k.name+"/"+f, func(t *testing.T) {
				for _, q := range k.setup {
					testdb.Exec(t, raw, fmt.Sprintf(q, key))
				}
				l1, l2, l3 := fencetest.ThreeLeases(t, svc, fmt.Sprintf("rg%d", key))
				ctx1, ctx3 := fencedsql.WithLease(ctx, l1), fencedsql.WithLease(ctx, l3)
				tx, err := db.BeginTx(ctx1, nil)
				if err != nil {
					t.Fatal(err)
				}
				defer tx.Rollback() //nolint:errcheck
				for _, q := range []string{fmt.Sprintf(k.fence, key), "SAVEPOINT s"} {
					if _, err := tx.ExecContext(ctx1, q); err != nil {
						t.Fatal(err)
					}
				}
				if _, err := tx.ExecContext(ctx3, "SELECT 1"); err != nil {
					t.Fatal(err)
				}
				switch f {
				case "reset-all":
					_, err = tx.ExecContext(ctx3, "RESET ALL")
				default:
					var st *sql.Stmt
					if st, err = tx.PrepareContext(ctx3, "ROLLBACK TO SAVEPOINT s"); err == nil {
						_, err = st.ExecContext(ctx3)
						st.Close()
					}
				}
				if err != nil {
					t.Fatalf("%s: %v", f, err)
				}
				if _, err := tx.ExecContext(ctx3, fmt.Sprintf(k.del, key)); err != nil {
					t.Fatalf("deletion: %v", err)
				}
				if err := tx.Commit(); err != nil {
					t.Fatal(err)
				}
				var tomb uint64
				if err := raw.QueryRow(fmt.Sprintf("SELECT fence_token FROM fencedsql_tomb_%s WHERE id = %d", k.table, key)).Scan(&tomb); err != nil {
					t.Fatalf("tombstone: %v", err)
				}
				ins := fmt.Sprintf("INSERT INTO %s (id) VALUES (%d)", k.table, key)
				_, err = db.ExecContext(fencedsql.WithLease(ctx, l2), ins)
				if tomb < l3.Token() || !errors.Is(err, fencedsql.ErrFenced) {
					t.Errorf("%s/%s: key %d fenced under %d, removed under %d after %s: tombstone %d; %s under stale %d: %v — want >= %d and ErrFenced (a deleted row came back under an older token)",
						k.name, f, key, l1.Token(), l3.Token(), f, tomb, ins, l2.Token(), err, l3.Token())
				}
			})
		}
	}
}
