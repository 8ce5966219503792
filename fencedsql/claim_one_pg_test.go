package fencedsql_test

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"testing"

	"github.com/jackc/pgx/v5/stdlib"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// The one-statement claim on a real PostgreSQL: for a catalogue of locking reads it
// returns the rows the raw driver's read returns and the two-statement claim returns,
// stamps exactly those rows, fails with ErrFenced before any row when a newer token
// owns one of them (changing nothing), and under a concurrent transaction that
// changes a selected row meanwhile still returns exactly the rows it claimed.

const claimOneDDL = `CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, balance BIGINT NOT NULL,
	fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0);
CREATE TABLE ledger (account_id BIGINT NOT NULL, amount BIGINT NOT NULL);
INSERT INTO accounts (id, owner, balance) VALUES (1, 'ann', 100), (2, 'bob', 200), (3, 'ann', 300), (4, 'cid', 50), (5, 'ann', 0), (6, 'bob', 600);
INSERT INTO ledger VALUES (1, 10), (1, 20), (3, 5)`

type claimOneEnv struct {
	ctx context.Context
	raw *sql.DB
	db  *sql.DB
	rec *recDriver
	dsn string
}

func newClaimOneEnv(t *testing.T) *claimOneEnv {
	t.Helper()
	dsn := testdb.Postgres(t)
	raw, err := sql.Open("pgx", dsn)
	if err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { raw.Close() })
	ctx := context.Background()
	for _, q := range strings.Split(claimOneDDL, ";\n") {
		if _, err := raw.ExecContext(ctx, q); err != nil {
			t.Fatalf("%s: %v", q, err)
		}
	}
	rec := &recDriver{Driver: stdlib.GetDefaultDriver()}
	db := fencedsql.OpenDB(fencedsql.DSNConnector(rec, dsn), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
	t.Cleanup(func() { db.Close() })
	return &claimOneEnv{ctx: ctx, raw: raw, db: db, rec: rec, dsn: dsn}
}

// claimOneShape is a locking read, its arguments, and whether the one-statement form
// serves it.
type claimOneShape struct {
	name    string
	q       string
	args    []any
	one     bool
	ordered bool // the result's order is the statement's
}

var claimOneShapes = []claimOneShape{
	{"plain", "SELECT id, owner, balance FROM accounts WHERE id IN ($1, $2) FOR UPDATE", []any{1, 2}, true, false},
	{"several rows", "SELECT id, balance FROM accounts WHERE owner = $1 FOR NO KEY UPDATE", []any{"ann"}, true, false},
	{"zero rows", "SELECT id, balance FROM accounts WHERE id = $1 FOR UPDATE", []any{999}, true, false},
	{"alias and expressions", "SELECT a.id, a.balance * 2 AS dbl, lower(a.owner) AS o, $3::text AS tag, coalesce(a.balance, 0) + $1 FROM accounts AS a WHERE a.id BETWEEN $1 AND $2 FOR NO KEY UPDATE", []any{2, 4, "t"}, true, false},
	{"star", "SELECT * FROM accounts a WHERE a.id >= $1 FOR KEY SHARE", []any{5}, true, false},
	{"order by", "SELECT id, balance FROM accounts WHERE balance >= $1 ORDER BY owner DESC, balance FOR UPDATE", []any{100}, true, true},
	{"order by limit", "SELECT id, balance FROM accounts WHERE balance > 0 ORDER BY balance DESC LIMIT $1 FOR UPDATE", []any{2}, true, true},
	{"order by limit offset", "SELECT accounts.id, owner FROM accounts ORDER BY accounts.id DESC LIMIT 2 OFFSET $1 FOR SHARE", []any{1}, true, true},
	{"limit without order", "SELECT id FROM accounts WHERE owner = 'ann' LIMIT 5 FOR UPDATE", nil, true, false},
	{"with list", "WITH w AS (SELECT $1::bigint AS lo), v AS (SELECT 4 AS hi) SELECT id, balance FROM accounts WHERE id > (SELECT lo FROM w) AND id <= (SELECT hi FROM v) ORDER BY id FOR UPDATE", []any{1}, true, true},
	{"with recursive", "WITH RECURSIVE r(n) AS (SELECT 1 UNION ALL SELECT n + 2 FROM r WHERE n < $1) SELECT id, owner FROM accounts WHERE id IN (SELECT n FROM r) ORDER BY id FOR NO KEY UPDATE", []any{5}, true, true},
	{"nowait", "SELECT id, balance FROM accounts WHERE id = $1 FOR UPDATE NOWAIT", []any{3}, true, false},
	{"parenthesised", "(SELECT id, balance FROM ONLY accounts WHERE id < $1 ORDER BY id FOR UPDATE OF accounts)", []any{3}, true, true},
	// Two statements: a subquery in the select list reads the table after the claim.
	{"subquery in select list", "SELECT id, (SELECT sum(amount) FROM ledger l WHERE l.account_id = accounts.id) FROM accounts WHERE id <= $1 FOR UPDATE", []any{3}, false, false},
	{"version read back", "SELECT id, version, fence_token FROM accounts WHERE id = $1 FOR UPDATE", []any{2}, true, false},
}

func TestClaimOnePostgresShapes(t *testing.T) {
	e := newClaimOneEnv(t)
	const tok = 50
	for _, sh := range claimOneShapes {
		t.Run(sh.name, func(t *testing.T) {
			want := e.rawRead(t, sh)
			one, stampedOne, sent := e.claimRead(t, sh, tok, false)
			// The two statements' claim records its ctids in a WITH query too: one
			// statement is the claim sent alone.
			oneStatement := len(sent) == 1 && strings.HasPrefix(sent[0], "WITH ") && strings.Contains(sent[0], "fencedsql_claimed AS (UPDATE")
			if oneStatement != sh.one {
				t.Fatalf("one statement = %v, want %v; sent:\n  %s", oneStatement, sh.one, strings.Join(sent, "\n  "))
			}
			if sh.one && len(sent) != 1 {
				t.Fatalf("one-statement claim sent %d statements:\n  %s", len(sent), strings.Join(sent, "\n  "))
			}
			two, stampedTwo, _ := e.claimRead(t, sh, tok, true)
			if !slices.Equal(one, two) {
				t.Fatalf("one statement returned\n  %v\nthe two-statement claim\n  %v", one, two)
			}
			if !strings.Contains(sh.q, "fence_token") && !strings.Contains(sh.q, "*") && !slices.Equal(one, want) {
				t.Fatalf("claim returned\n  %v\nthe raw driver's read\n  %v", one, want)
			}
			if len(one) != len(want) {
				t.Fatalf("claim returned %d rows, the raw read %d", len(one), len(want))
			}
			if ids := firstColumn(one); !slices.Equal(stampedOne, ids) || !slices.Equal(stampedTwo, ids) {
				t.Fatalf("rows returned %v; stamped: one statement %v, two statements %v", ids, stampedOne, stampedTwo)
			}
		})
	}
}

// rawRead runs sh's read on the raw driver in a transaction it rolls back.
func (e *claimOneEnv) rawRead(t *testing.T, sh claimOneShape) []string {
	t.Helper()
	tx, err := e.raw.BeginTx(e.ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	rows, err := tx.QueryContext(e.ctx, sh.q, sh.args...)
	if err != nil {
		t.Fatal(err)
	}
	out, err := readAll(rows)
	if err != nil {
		t.Fatal(err)
	}
	return normalise(out, sh.ordered)
}

// claimRead runs sh's read through the fenced driver in a transaction bound to tok (a
// prepared statement when prepared: the wrapper's prepared claim is the two-statement
// form unless it prepared the one-statement one), returns its rows, the ids the
// transaction sees stamped with tok and the statements sent, and rolls back.
func (e *claimOneEnv) claimRead(t *testing.T, sh claimOneShape, tok uint64, prepared bool) (rows []string, stamped []string, sent []string) {
	t.Helper()
	ctx := fencedsql.WithToken(e.ctx, tok)
	tx, err := e.db.BeginTx(ctx, nil)
	if err != nil {
		t.Fatal(err)
	}
	defer tx.Rollback() //nolint:errcheck
	var rs *sql.Rows
	e.rec.start()
	if prepared {
		st, err := tx.PrepareContext(ctx, sh.q)
		if err != nil {
			t.Fatal(err)
		}
		defer st.Close()
		rs, err = st.QueryContext(ctx, sh.args...)
		if err != nil {
			t.Fatalf("prepared claim: %v", err)
		}
	} else if rs, err = tx.QueryContext(ctx, sh.q, sh.args...); err != nil {
		t.Fatalf("claim: %v", err)
	}
	out, err := readAll(rs)
	sent = e.rec.stop()
	if err != nil {
		t.Fatalf("claim rows: %v", err)
	}
	ids, err := tx.QueryContext(e.ctx, "SELECT id FROM accounts WHERE fence_token = $1 ORDER BY id", tok)
	if err != nil {
		t.Fatal(err)
	}
	st, err := readAll(ids)
	if err != nil {
		t.Fatal(err)
	}
	return normalise(out, sh.ordered), normalise(st, false), sent
}

func readAll(rows *sql.Rows) ([]string, error) {
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var out []string
	for rows.Next() {
		vals := make([]any, len(cols))
		ptrs := make([]any, len(cols))
		for i := range vals {
			ptrs[i] = &vals[i]
		}
		if err := rows.Scan(ptrs...); err != nil {
			return out, err
		}
		var b strings.Builder
		for i, v := range vals {
			if i > 0 {
				b.WriteByte('|')
			}
			if s, ok := v.([]byte); ok {
				v = string(s)
			}
			fmt.Fprint(&b, v)
		}
		out = append(out, b.String())
	}
	return out, rows.Err()
}

// normalise sorts rows whose order the statement leaves open (numerically by the
// first column, then as text).
func normalise(rows []string, ordered bool) []string {
	if !ordered {
		slices.SortFunc(rows, func(a, b string) int {
			if c := len(strings.SplitN(a, "|", 2)[0]) - len(strings.SplitN(b, "|", 2)[0]); c != 0 {
				return c
			}
			return strings.Compare(a, b)
		})
	}
	return rows
}

func firstColumn(rows []string) []string {
	ids := make([]string, len(rows))
	for i, r := range rows {
		ids[i] = strings.SplitN(r, "|", 2)[0]
	}
	return normalise(ids, false)
}

// A newer token on one of the rows: the one-statement claim fails with ErrFenced
// before any row reaches the caller (the other rows are free), and nothing changes.
func TestClaimOnePostgresFenced(t *testing.T) {
	e := newClaimOneEnv(t)
	// Enough rows that the server sends the first ones before it reaches the last
	// (its output buffer fills), and the row a newer token owns is the last one
	// scanned (its update moves it to the end of the heap).
	for _, q := range []string{
		"INSERT INTO accounts (id, owner, balance) SELECT i, 'bulk-' || repeat('x', 60), i FROM generate_series(100, 2099) AS i",
		"UPDATE accounts SET fence_token = 100 WHERE id IN (4, 2099)",
	} {
		if _, err := e.raw.ExecContext(e.ctx, q); err != nil {
			t.Fatal(err)
		}
	}
	before := e.snapshot(t)
	for _, q := range []string{
		"SELECT id, owner FROM accounts WHERE id >= $1 FOR NO KEY UPDATE",                  // simple selection, no order
		"SELECT id, owner FROM accounts WHERE id >= $1 FOR UPDATE",                         // row locator
		"SELECT id, owner FROM accounts WHERE id >= $1 ORDER BY id LIMIT 5000 FOR SHARE",   // ordered
		"SELECT id, owner FROM accounts WHERE id >= $1 AND id <> 4 FOR NO KEY UPDATE",      // bulk, then 2099
		"SELECT id, owner FROM accounts WHERE id >= $1 AND id <> 4 ORDER BY id FOR UPDATE", // sorted
	} {
		ctx := fencedsql.WithToken(e.ctx, 50)
		tx, err := e.db.BeginTx(ctx, nil)
		if err != nil {
			t.Fatal(err)
		}
		e.rec.start()
		var got []string
		rows, err := tx.QueryContext(ctx, q, 1)
		if err == nil {
			got, err = readAll(rows)
		}
		sent := e.rec.stop()
		if !errors.Is(err, fencedsql.ErrFenced) {
			t.Fatalf("%s: err = %v, want ErrFenced", q, err)
		}
		if len(got) != 0 {
			t.Fatalf("%s: %d rows reached the caller before ErrFenced: %v", q, len(got), got)
		}
		if len(sent) != 1 || !strings.Contains(sent[0], "fencedsql_claimed") {
			t.Fatalf("%s: sent %q, want the one-statement claim", q, sent)
		}
		if err := tx.Commit(); err == nil {
			t.Fatalf("%s: the failed claim's transaction committed", q)
		}
		if after := e.snapshot(t); !slices.Equal(before, after) {
			t.Fatalf("%s: fenced, yet the table changed:\n  %v\n  %v", q, before, after)
		}
	}
}

func (e *claimOneEnv) snapshot(t *testing.T) []string {
	t.Helper()
	rows, err := e.raw.QueryContext(e.ctx, "SELECT * FROM accounts ORDER BY id")
	if err != nil {
		t.Fatal(err)
	}
	out, err := readAll(rows)
	if err != nil {
		t.Fatal(err)
	}
	return out
}

// A concurrent transaction updates selected rows while the claim waits for them: the
// claim returns exactly the rows it stamped, with the committed values, and drops a row
// that no longer matches, as the raw locking read does.
func TestClaimOnePostgresConcurrentUpdate(t *testing.T) {
	for _, c := range []struct {
		name, q  string
		want     []string // ids|balance after the concurrent commit
		conflict bool     // the claim fails with ErrClaimConflict (see below)
	}{
		{"simple", "SELECT id, balance FROM accounts WHERE owner = 'ann' AND balance > 0 FOR NO KEY UPDATE", []string{"1|777", "3|300"}, false},
		{"locator", "SELECT id, balance FROM accounts WHERE owner = 'ann' AND balance > 0 FOR UPDATE", []string{"1|777", "3|300"}, false},
		{"ordered", "SELECT id, balance FROM accounts WHERE owner = 'ann' AND balance > 0 ORDER BY id FOR UPDATE", []string{"1|777", "3|300"}, false},
		// Row 5 leaves the selection and the raw read's LIMIT takes row 1 instead, which
		// the other transaction also changed: the claim's row locator reaches only the
		// rows its snapshot's LIMIT saw (5 and 3), not row 1, which its locking read
		// holds. Rather than return row 3 alone and hold row 1 unclaimed, the claim
		// fails whole with ErrClaimConflict (the retry reads 3 and 1).
		{"limit", "SELECT id, balance FROM accounts WHERE owner = 'ann' AND balance > 0 ORDER BY id DESC LIMIT 2 FOR UPDATE", []string{"3|300", "1|777"}, true},
	} {
		t.Run(c.name, func(t *testing.T) {
			e := newClaimOneEnv(t)
			for _, raw := range []bool{true, false} {
				// Fresh values each round: balance 1 → 100, 3 → 300; the other
				// transaction moves 1 to 777 and 3 out of the selection… then back.
				if _, err := e.raw.ExecContext(e.ctx, "UPDATE accounts SET balance = id * 100, owner = CASE WHEN id IN (1, 3, 5) THEN 'ann' ELSE owner END"); err != nil {
					t.Fatal(err)
				}
				other, err := e.raw.BeginTx(e.ctx, nil)
				if err != nil {
					t.Fatal(err)
				}
				if _, err := other.ExecContext(e.ctx, "UPDATE accounts SET balance = 777 WHERE id = 1"); err != nil {
					t.Fatal(err)
				}
				if _, err := other.ExecContext(e.ctx, "UPDATE accounts SET owner = 'zed' WHERE id = 5"); err != nil {
					t.Fatal(err)
				}
				blocker := testdb.PostgresBackendPID(t, e.ctx, other)
				type result struct {
					rows, stamped []string
					err           error
				}
				done, finished := make(chan result, 1), make(chan struct{})
				go func() {
					var r result
					defer func() { done <- r; close(finished) }()
					pool, ctx := e.db, fencedsql.WithToken(e.ctx, 60)
					if raw {
						pool, ctx = e.raw, e.ctx
					}
					tx, err := pool.BeginTx(ctx, nil)
					if err != nil {
						r.err = err
						return
					}
					defer tx.Rollback() //nolint:errcheck
					rows, err := tx.QueryContext(ctx, c.q)
					if err != nil {
						r.err = err
						return
					}
					if r.rows, r.err = readAll(rows); r.err != nil {
						return
					}
					ids, err := tx.QueryContext(e.ctx, "SELECT id FROM accounts WHERE fence_token = 60 ORDER BY id")
					if err != nil {
						r.err = err
						return
					}
					r.stamped, r.err = readAll(ids)
					if r.err == nil {
						r.err = tx.Commit()
					}
				}()
				// The read must wait for the other transaction's row locks before that
				// one commits, or the test would check a read that saw no concurrent
				// update.
				if !testdb.WaitPostgresBlockedBy(t, e.ctx, e.raw, blocker, finished) {
					r := <-done
					t.Fatalf("raw=%v: the locking read returned while another transaction held its rows: %v %v", raw, r.rows, r.err)
				}
				if err := other.Commit(); err != nil {
					t.Fatal(err)
				}
				r := <-done
				if !raw && c.conflict {
					if !errors.Is(r.err, fencedsql.ErrClaimConflict) || len(r.rows) != 0 {
						t.Fatalf("claim read %v, %v; want ErrClaimConflict and no rows", r.rows, r.err)
					}
					continue
				}
				if r.err != nil {
					t.Fatalf("raw=%v: %v", raw, r.err)
				}
				got := normalise(r.rows, strings.Contains(c.q, "ORDER BY"))
				if !slices.Equal(got, c.want) {
					t.Fatalf("raw=%v: read %v, want %v", raw, got, c.want)
				}
				if raw {
					continue
				}
				if ids := firstColumn(got); !slices.Equal(normalise(r.stamped, false), ids) {
					t.Fatalf("rows returned %v, rows stamped %v", ids, r.stamped)
				}
				if _, err := e.raw.ExecContext(e.ctx, "UPDATE accounts SET fence_token = 0"); err != nil {
					t.Fatal(err)
				}
			}
		})
	}
}

// recDriver wraps a driver and records the statements its connections are sent
// while recording.
type recDriver struct {
	driver.Driver
	mu   sync.Mutex
	on   bool
	sent []string
}

func (d *recDriver) start() {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.on, d.sent = true, nil
}

func (d *recDriver) stop() []string {
	d.mu.Lock()
	defer d.mu.Unlock()
	d.on = false
	return d.sent
}

func (d *recDriver) note(q string) {
	d.mu.Lock()
	defer d.mu.Unlock()
	if d.on && !strings.Contains(q, "pg_catalog.") { // not the wrapper's checks
		d.sent = append(d.sent, q)
	}
}

func (d *recDriver) Open(name string) (driver.Conn, error) {
	c, err := d.Driver.Open(name)
	if err != nil {
		return nil, err
	}
	return &recConn{Conn: c, d: d}, nil
}

// recConn forwards the interfaces the pgx connection has and the wrapper uses.
type recConn struct {
	driver.Conn
	d *recDriver
}

func (c *recConn) QueryContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Rows, error) {
	c.d.note(q)
	return c.Conn.(driver.QueryerContext).QueryContext(ctx, q, args)
}

func (c *recConn) ExecContext(ctx context.Context, q string, args []driver.NamedValue) (driver.Result, error) {
	c.d.note(q)
	return c.Conn.(driver.ExecerContext).ExecContext(ctx, q, args)
}

func (c *recConn) PrepareContext(ctx context.Context, q string) (driver.Stmt, error) {
	c.d.note(q)
	return c.Conn.(driver.ConnPrepareContext).PrepareContext(ctx, q)
}

func (c *recConn) BeginTx(ctx context.Context, opts driver.TxOptions) (driver.Tx, error) {
	return c.Conn.(driver.ConnBeginTx).BeginTx(ctx, opts)
}

func (c *recConn) CheckNamedValue(nv *driver.NamedValue) error {
	return c.Conn.(driver.NamedValueChecker).CheckNamedValue(nv)
}

func (c *recConn) ResetSession(ctx context.Context) error {
	return c.Conn.(driver.SessionResetter).ResetSession(ctx)
}

// The claim holds the lock the read asked for: FOR UPDATE blocks a concurrent insert
// of a row that references a claimed one (its foreign key check locks FOR KEY SHARE),
// as the raw read does; FOR NO KEY UPDATE lets it through, as the raw read does, and
// so do FOR SHARE and FOR KEY SHARE, which the claim's write makes FOR NO KEY UPDATE.
// Each selection: by its WHERE and by row locator (NOWAIT, ORDER BY, LIMIT, OFFSET).
func TestClaimOnePostgresLockStrength(t *testing.T) {
	e := newClaimOneEnv(t)
	if _, err := e.raw.ExecContext(e.ctx, "CREATE TABLE child (account_id BIGINT NOT NULL REFERENCES accounts (id))"); err != nil {
		t.Fatal(err)
	}
	for _, c := range []struct {
		q       string
		blocked bool
	}{
		{"SELECT id FROM accounts WHERE id = $1 FOR UPDATE", true},
		{"SELECT id FROM accounts WHERE id = $1 FOR UPDATE OF accounts", true},
		{"SELECT id FROM accounts WHERE id = $1 ORDER BY id LIMIT 1 FOR UPDATE", true},
		{"SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE", false},
		// Claimed by row locator: its locking query takes the read's strength, at
		// least FOR NO KEY UPDATE (red-team rt37d F1: it took FOR UPDATE for each).
		{"SELECT id FROM accounts WHERE id = $1 FOR UPDATE NOWAIT", true},
		{"SELECT id FROM accounts WHERE id = $1 ORDER BY id LIMIT 1 FOR NO KEY UPDATE", false},
		{"SELECT id FROM accounts WHERE id = $1 FOR NO KEY UPDATE NOWAIT", false},
		{"SELECT id FROM accounts WHERE id = $1 ORDER BY id LIMIT 1 OFFSET 0 FOR SHARE", false},
		{"SELECT id FROM accounts WHERE id = $1 ORDER BY id FOR KEY SHARE NOWAIT", false},
	} {
		for _, fenced := range []bool{false, true} {
			pool, ctx := e.raw, e.ctx
			if fenced {
				pool, ctx = e.db, fencedsql.WithToken(e.ctx, 70)
			}
			tx, err := pool.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			e.rec.start()
			rows, err := tx.QueryContext(ctx, c.q, 1)
			if err == nil {
				_, err = readAll(rows)
			}
			sent := e.rec.stop()
			if err != nil {
				t.Fatalf("%s: %v", c.q, err)
			}
			if fenced && (len(sent) != 1 || !strings.Contains(sent[0], "fencedsql_claimed")) {
				t.Fatalf("%s: sent %q, want the one-statement claim", c.q, sent)
			}
			conn, err := e.raw.Conn(e.ctx)
			if err != nil {
				t.Fatal(err)
			}
			_, err = conn.ExecContext(e.ctx, "SET lock_timeout = '300ms'")
			if err == nil {
				_, err = conn.ExecContext(e.ctx, "INSERT INTO child VALUES (1)")
			}
			conn.Close()
			if blocked := err != nil && strings.Contains(err.Error(), "lock timeout"); blocked != c.blocked {
				t.Errorf("%s (fenced %v): the referencing insert: %v; want blocked %v", c.q, fenced, err, c.blocked)
			}
			if err := tx.Rollback(); err != nil {
				t.Fatal(err)
			}
			if _, err := e.raw.ExecContext(e.ctx, "DELETE FROM child"); err != nil {
				t.Fatal(err)
			}
		}
	}
}

// A table the one statement cannot claim with the two statements' answer keeps the two
// (dialect.ClaimOneChecker): with a rule on UPDATE (the one statement would fail) and
// with an AFTER UPDATE trigger that writes the claimed row again (the one statement
// would return the row as it was before the trigger). A rule on the table is a door
// the lazy check refuses (ErrSchema) in a pool that starts with it, so the rules are
// created under a running pool, after its lazy check passed.
func TestClaimOnePostgresRulesAndTriggers(t *testing.T) {
	sh := claimOneShape{"plain", "SELECT id, owner, balance FROM accounts WHERE id IN ($1, $2) FOR UPDATE", []any{1, 2}, false, false}
	cases := []struct {
		name string
		ddl  []string
		want []string // the claimed read's rows
	}{
		{"DO ALSO rule", []string{"CREATE RULE audit AS ON UPDATE TO accounts DO ALSO INSERT INTO ledger VALUES (NEW.id, 0)"},
			[]string{"1|ann|100", "2|bob|200"}},
		{"conditional DO INSTEAD rule", []string{"CREATE RULE frozen AS ON UPDATE TO accounts WHERE OLD.balance < 0 DO INSTEAD NOTHING"},
			[]string{"1|ann|100", "2|bob|200"}},
		// The trigger's UPDATE gives the claimed rows new ctids after the claim
		// recorded them: the read restricted to the recorded ctids finds none, and the
		// count refuses the claim (fail closed; rt18d F4, rt19c).
		{"AFTER trigger writing the row", []string{
			`CREATE FUNCTION bump() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE accounts SET balance = balance + 1000 WHERE id = NEW.id; RETURN NULL; END $$`,
			"CREATE TRIGGER bump AFTER UPDATE ON accounts FOR EACH ROW WHEN (pg_trigger_depth() = 0) EXECUTE FUNCTION bump()"},
			nil},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			e := newClaimOneEnv(t)
			if _, err := e.db.ExecContext(fencedsql.WithToken(e.ctx, 50), "UPDATE accounts SET balance = balance WHERE id = 0"); err != nil {
				t.Fatal(err)
			}
			for _, q := range c.ddl {
				if _, err := e.raw.ExecContext(e.ctx, q); err != nil {
					t.Fatal(err)
				}
			}
			if strings.Contains(c.name, "rule") {
				fresh := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), e.dsn), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
				defer fresh.Close()
				if _, err := fresh.ExecContext(fencedsql.WithToken(e.ctx, 50), "UPDATE accounts SET balance = balance WHERE id = 0"); !errors.Is(err, fencedsql.ErrSchema) {
					t.Fatalf("a fresh pool with a rule on accounts: %v, want ErrSchema", err)
				}
			}
			if c.want == nil {
				tx, err := e.db.BeginTx(fencedsql.WithToken(e.ctx, 60), nil)
				if err != nil {
					t.Fatal(err)
				}
				rs, err := tx.QueryContext(e.ctx, sh.q, sh.args...)
				if err == nil {
					_, err = readAll(rs)
				}
				if !errors.Is(err, fencedsql.ErrUnsupported) {
					t.Fatalf("claim: %v, want ErrUnsupported", err)
				}
				if err := tx.Commit(); err == nil {
					t.Fatal("Commit after the refused claim succeeded")
				}
				return
			}
			for _, prepared := range []bool{false, true} {
				rows, stamped, sent := e.claimRead(t, sh, 60, prepared)
				if len(sent) == 1 && strings.Contains(sent[0], "fencedsql_claimed AS (UPDATE") {
					t.Errorf("prepared %v: claimed in one statement:\n  %s", prepared, strings.Join(sent, "\n  "))
				}
				if !slices.Equal(rows, normalise(c.want, false)) {
					t.Errorf("prepared %v: claimed read returned %v, want %v", prepared, rows, c.want)
				}
				if !slices.Equal(stamped, []string{"1", "2"}) {
					t.Errorf("prepared %v: stamped %v, want [1 2]", prepared, stamped)
				}
			}
		})
	}
	// The control: the same table without them is claimed in one statement.
	e := newClaimOneEnv(t)
	if _, _, sent := e.claimRead(t, sh, 60, false); len(sent) != 1 || !strings.Contains(sent[0], "fencedsql_claimed AS (UPDATE") {
		t.Errorf("without rules or triggers, sent:\n  %s", strings.Join(sent, "\n  "))
	}
}

// A rule added on UPDATE under a running pool, after the pool's verdict said the
// one-statement claim may be sent: PostgreSQL refuses that claim (an error, nothing
// claimed; the caller's transaction is lost), and the pool asks again, so the next
// claim runs as two statements — not the same failure until the pool is reopened.
func TestClaimOneVerdictDroppedOnFailure(t *testing.T) {
	sh := claimOneShape{"plain", "SELECT id, owner, balance FROM accounts WHERE id IN ($1, $2) FOR UPDATE", []any{1, 2}, false, false}
	for _, prepared := range []bool{false, true} {
		t.Run(fmt.Sprintf("prepared=%v", prepared), func(t *testing.T) {
			e := newClaimOneEnv(t)
			if _, _, sent := e.claimRead(t, sh, 60, prepared); !slices.ContainsFunc(sent, func(s string) bool { return strings.Contains(s, "fencedsql_claimed AS (UPDATE") }) {
				t.Fatalf("the first claim did not run as one statement:\n  %s", strings.Join(sent, "\n  "))
			}
			if _, err := e.raw.ExecContext(e.ctx, "CREATE RULE audit AS ON UPDATE TO accounts DO ALSO INSERT INTO ledger VALUES (NEW.id, 0)"); err != nil {
				t.Fatal(err)
			}
			// The pool's yes is now stale: this claim fails whole.
			ctx := fencedsql.WithToken(e.ctx, 61)
			tx, err := e.db.BeginTx(ctx, nil)
			if err != nil {
				t.Fatal(err)
			}
			rs, err := tx.QueryContext(ctx, sh.q, sh.args...)
			if err == nil {
				_, err = readAll(rs)
			}
			_ = tx.Rollback()
			if err == nil || errors.Is(err, fencedsql.ErrFenced) {
				t.Fatalf("the claim under a stale verdict: %v, want the database's refusal", err)
			}
			var stamped int
			if err := e.raw.QueryRowContext(e.ctx, "SELECT count(*) FROM accounts WHERE fence_token = 61").Scan(&stamped); err != nil || stamped != 0 {
				t.Fatalf("the failed claim stamped %d rows (%v)", stamped, err)
			}
			// The next claim asks again and runs as two statements.
			rows, stampedIDs, sent := e.claimRead(t, sh, 62, prepared)
			if slices.ContainsFunc(sent, func(s string) bool { return strings.Contains(s, "fencedsql_claimed AS (UPDATE") }) {
				t.Errorf("after the failure, claimed in one statement again:\n  %s", strings.Join(sent, "\n  "))
			}
			if want := normalise([]string{"1|ann|100", "2|bob|200"}, false); !slices.Equal(rows, want) || !slices.Equal(stampedIDs, []string{"1", "2"}) {
				t.Errorf("after the failure: rows %v stamped %v", rows, stampedIDs)
			}
		})
	}
}
