// What the generators of several leases per transaction on PostgreSQL and MariaDB share
// (multilease_claims_test.go, racing_holders_test.go, claim_owner_churn_test.go): the
// accounts fixture, the row model and the predicates the generators select rows with,
// the claims and updates they draw, what each dialect claims with and which of the
// server's errors it may give, and the knobs (seed, trials, time budget).
//
// Knobs (internal/fencetest.ReadScheduleKnobs): the seed is time-based and logged at
// the start; trial i runs seed+i, and a failing trial names its seed with the command
// that replays it (FENCEDSQL_SCHEDULES_SEED=<seed> FENCEDSQL_SCHEDULES_ITERS=1: what a
// trial generates is the seed's; the timing of the races is not).
// FENCEDSQL_SCHEDULES_ITERS=n runs n trials with no time budget; FENCEDSQL_LONG=1 runs
// each test's long form (the red-team pass's counts) with no time budget. The default
// is the short form CI runs: a few trials within a small time budget per test.

package fencedsql_test

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math/rand/v2"
	"slices"
	"strings"
	"testing"
	"time"

	gomysql "github.com/go-sql-driver/mysql"
	"github.com/jackc/pgx/v5/stdlib"

	mysqld "github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// heldRow is one account in the model: its owner, balance and fence token.
type heldRow struct {
	owner    string
	bal, tok int64
}

// heldModel is the accounts table as the model holds it, by id.
type heldModel map[int64]heldRow

// heldPred is a WHERE clause and its meaning over the model.
type heldPred struct {
	sql string
	fn  func(id int64, r heldRow) bool
}

// selectIDs is the ids 1..8 the predicate selects in m, in ascending order.
func (m heldModel) selectIDs(p heldPred) []int64 {
	var sel []int64
	for id := int64(1); id <= 8; id++ {
		if r, ok := m[id]; ok && p.fn(id, r) {
			sel = append(sel, id)
		}
	}
	return sel
}

// genHeldPred draws a predicate over accounts 1..8: an id list, an id range, an owner,
// a subquery against the unguarded ledger table, or an id bound and an owner excluded.
func genHeldPred(rng *rand.Rand) heldPred {
	switch rng.IntN(5) {
	case 0:
		a, b := 1+rng.Int64N(10), 1+rng.Int64N(10)
		return heldPred{fmt.Sprintf("id IN (%d, %d)", a, b), func(id int64, _ heldRow) bool { return id == a || id == b }}
	case 1:
		a := 1 + rng.Int64N(8)
		b := a + rng.Int64N(4)
		return heldPred{fmt.Sprintf("id BETWEEN %d AND %d", a, b), func(id int64, _ heldRow) bool { return id >= a && id <= b }}
	case 2:
		o := string(rune('a' + rng.IntN(3)))
		return heldPred{fmt.Sprintf("owner = '%s'", o), func(_ int64, r heldRow) bool { return r.owner == o }}
	case 3:
		k := rng.Int64N(4)
		// ledger holds (id, id % 4) for ids 1..8, unguarded.
		return heldPred{fmt.Sprintf("id IN (SELECT account_id FROM ledger WHERE amount = %d)", k), func(id int64, _ heldRow) bool { return id%4 == k }}
	default:
		a := 1 + rng.Int64N(8)
		o := string(rune('a' + rng.IntN(3)))
		return heldPred{fmt.Sprintf("id >= %d AND owner <> '%s'", a, o), func(id int64, r heldRow) bool { return id >= a && r.owner != o }}
	}
}

// heldClaim is a generated locking read (returning id among other columns) and the
// rows the model selects (in the order it returns them when ordered).
type heldClaim struct {
	q       string
	sel     []int64
	ordered bool
}

// genHeldClaim draws a claim over m: a predicate, one of d's strengths (one time in
// four followed by one of nowait, when given), at times ORDER BY id [DESC] and LIMIT n.
func genHeldClaim(rng *rand.Rand, d holdersDialect, m heldModel, nowait []string) heldClaim {
	p := genHeldPred(rng)
	strength := d.strengths[rng.IntN(len(d.strengths))]
	if len(nowait) > 0 && rng.IntN(4) == 0 {
		strength += nowait[rng.IntN(len(nowait))]
	}
	c := heldClaim{sel: m.selectIDs(p)}
	order, limit := "", ""
	if rng.IntN(2) == 0 {
		c.ordered = true
		if rng.IntN(2) == 0 {
			order = " ORDER BY id DESC"
			slices.Reverse(c.sel)
		} else {
			order = " ORDER BY id"
		}
		if rng.IntN(2) == 0 {
			n := 1 + rng.IntN(3)
			limit = fmt.Sprintf(" LIMIT %d", n)
			c.sel = c.sel[:min(n, len(c.sel))]
		}
	}
	cols := []string{"id", "id, balance", "balance, id, owner"}[rng.IntN(3)]
	c.q = fmt.Sprintf("SELECT %s FROM accounts WHERE %s%s%s %s", cols, p.sql, order, limit, strength)
	return c
}

// returned reports whether got is what the claim selects (in order when ordered).
func (c heldClaim) returned(got []int64) bool {
	gs, ws := slices.Clone(got), slices.Clone(c.sel)
	if !c.ordered {
		slices.Sort(gs)
		slices.Sort(ws)
	}
	return slices.Equal(gs, ws)
}

// genHeldUpdate draws a fenced UPDATE adding 1 to the balances of the rows of m a
// predicate selects, and those rows.
func genHeldUpdate(rng *rand.Rand, m heldModel) (q string, sel []int64) {
	p := genHeldPred(rng)
	return fmt.Sprintf("UPDATE accounts SET balance = balance + 1 WHERE %s", p.sql), m.selectIDs(p)
}

// holdersDialect is what the generators need of a dialect: the claim strengths, the
// NOWAIT/WAIT suffixes, an upsert adding 1 to an existing key's balance (%d: the id),
// whether a refused statement aborts the transaction (PostgreSQL) or only itself
// (MySQL/MariaDB), the server's own lock errors, and the accounts fixture.
type holdersDialect struct {
	strengths, nowait []string
	upsert            string
	abortsTx          bool
	lockErr           func(error) bool
	open              func(t *testing.T) holdersFixture
}

// contendedRefusal reports whether err is a refusal the oracles accept from a statement
// racing another holder: ErrFenced, ErrClaimConflict (a claim with ORDER BY, LIMIT or
// NOWAIT whose rows a concurrent transaction changed while it waited, PostgreSQL at
// READ COMMITTED: G10) or the server's own lock errors.
func (d holdersDialect) contendedRefusal(err error) bool {
	return errors.Is(err, fencedsql.ErrFenced) || errors.Is(err, fencedsql.ErrClaimConflict) || d.lockErr(err)
}

// holdersFixture is a fresh database with accounts (guarded by db) and ledger: raw is
// a plain pool on it, dsn its DSN.
type holdersFixture struct {
	dsn     string
	raw, db *sql.DB
}

// ledgerRows fills ledger with (id, id % 4) for ids 1..8 (genHeldPred's subquery).
const ledgerRows = `INSERT INTO ledger VALUES (1,1),(2,2),(3,3),(4,0),(5,1),(6,2),(7,3),(8,0)`

var holdersPostgres = holdersDialect{
	abortsTx:  true,
	strengths: []string{"FOR UPDATE", "FOR NO KEY UPDATE", "FOR SHARE", "FOR KEY SHARE"},
	nowait:    []string{" NOWAIT"},
	upsert:    "INSERT INTO accounts (id, owner, balance) VALUES (%d, 'z', 1) ON CONFLICT (id) DO UPDATE SET balance = accounts.balance + EXCLUDED.balance",
	lockErr: func(err error) bool {
		var pe interface{ SQLState() string }
		if errors.As(err, &pe) {
			c := pe.SQLState()
			return c == "55P03" || c == "40P01" || c == "40001"
		}
		return false
	},
	open: func(t *testing.T) holdersFixture {
		dsn := testdb.Postgres(t)
		raw := testdb.Open(t, "pgx", dsn,
			`CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner TEXT NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
			`CREATE TABLE ledger (account_id BIGINT NOT NULL, amount BIGINT NOT NULL)`, ledgerRows)
		db := fencedsql.OpenDB(fencedsql.DSNConnector(stdlib.GetDefaultDriver(), dsn), fencedsql.WithDialect(postgres.Dialect), fencedsql.Guard("accounts"))
		t.Cleanup(func() { db.Close() })
		return holdersFixture{dsn, raw, db}
	},
}

var holdersMariaDB = holdersDialect{
	strengths: []string{"FOR UPDATE", "LOCK IN SHARE MODE"},
	nowait:    []string{" NOWAIT", " WAIT 0", " WAIT 1"},
	upsert:    "INSERT INTO accounts (id, owner, balance) VALUES (%d, 'z', 1) ON DUPLICATE KEY UPDATE balance = balance + VALUES(balance)",
	lockErr: func(err error) bool {
		var me *gomysql.MySQLError
		if errors.As(err, &me) {
			return me.Number == 1205 || me.Number == 1213 || me.Number == 3572
		}
		return false
	},
	open: func(t *testing.T) holdersFixture {
		dsn := testdb.MySQL(t)
		raw := testdb.Open(t, "mysql", dsn,
			`CREATE TABLE accounts (id BIGINT PRIMARY KEY, owner VARCHAR(10) NOT NULL, balance BIGINT NOT NULL DEFAULT 0, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0) ENGINE=InnoDB`,
			`CREATE TABLE ledger (account_id BIGINT NOT NULL, amount BIGINT NOT NULL) ENGINE=InnoDB`, ledgerRows)
		db := fencedsql.OpenDB(fencedsql.DSNConnector(&gomysql.MySQLDriver{}, dsn), fencedsql.WithDialect(mysqld.Dialect), fencedsql.Guard("accounts"))
		t.Cleanup(func() { db.Close() })
		return holdersFixture{dsn, raw, db}
	},
}

// setAccounts replaces the accounts table's rows with m's.
func setAccounts(t *testing.T, ctx context.Context, raw *sql.DB, m heldModel) {
	t.Helper()
	if _, err := raw.ExecContext(ctx, `DELETE FROM accounts`); err != nil {
		t.Fatal(err)
	}
	for id, r := range m {
		if _, err := raw.ExecContext(ctx, fmt.Sprintf(`INSERT INTO accounts (id, owner, balance, fence_token) VALUES (%d, '%s', %d, %d)`, id, r.owner, r.bal, r.tok)); err != nil {
			t.Fatal(err)
		}
	}
}

// readAccounts is the accounts table as q (a pool or a transaction) sees it.
func readAccounts(ctx context.Context, q interface {
	QueryContext(context.Context, string, ...any) (*sql.Rows, error)
}) (heldModel, error) {
	rows, err := q.QueryContext(ctx, `SELECT id, owner, balance, fence_token FROM accounts`)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	m := heldModel{}
	for rows.Next() {
		var id int64
		var r heldRow
		if err := rows.Scan(&id, &r.owner, &r.bal, &r.tok); err != nil {
			return nil, err
		}
		m[id] = r
	}
	return m, rows.Err()
}

// claimIDs runs the claim c in tx, through a statement prepared on db and rebound with
// tx.StmtContext when prepared, and returns the ids of the rows it returns, in order.
func claimIDs(ctx context.Context, db *sql.DB, tx *sql.Tx, prepared bool, c heldClaim) ([]int64, error) {
	var rows *sql.Rows
	var err error
	if prepared {
		st, perr := db.PrepareContext(ctx, c.q)
		if perr != nil {
			return nil, perr
		}
		defer st.Close()
		rows, err = tx.StmtContext(ctx, st).QueryContext(ctx)
	} else {
		rows, err = tx.QueryContext(ctx, c.q)
	}
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	cols, err := rows.Columns()
	if err != nil {
		return nil, err
	}
	var id int64
	dest := make([]any, len(cols))
	for i, c := range cols {
		if dest[i] = new(any); strings.EqualFold(c, "id") {
			dest[i] = &id
		}
	}
	var ids []int64
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, rows.Err()
}

// holdersRun is a generator's run: its knobs and when it started.
type holdersRun struct {
	t      *testing.T
	k      fencetest.ScheduleKnobs
	budget time.Duration
	start  time.Time
}

// startHolders reads the knobs (package comment) for a test whose short form runs
// short trials within budget and whose long form runs long trials, and logs the seed.
func startHolders(t *testing.T, short, long int, budget time.Duration) *holdersRun {
	k := fencetest.ReadScheduleKnobs(t, time.Now().UnixNano(), short)
	if testdb.Long() && !k.ItersSet {
		k.Iters, k.ItersSet = long, true
	}
	t.Logf("seed %d, up to %d trials (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=%d go test -run '^%s$' ./fencedsql/)", k.Seed, k.Iters, k.Seed, k.Iters, t.Name())
	return &holdersRun{t: t, k: k, budget: budget, start: time.Now()}
}

// more reports whether trial is to run: below the trials asked for, and within the
// budget unless the trials were set.
func (r *holdersRun) more(trial int) bool {
	return trial < r.k.Iters && !r.t.Failed() && (r.k.ItersSet || time.Since(r.start) < r.budget)
}

// seed is trial's seed.
func (r *holdersRun) seed(trial int) uint64 { return uint64(r.k.Seed) + uint64(trial) }

// replay is the command that runs seed's trial alone.
func (r *holdersRun) replay(seed uint64) string {
	return fmt.Sprintf("seed %d (replay: FENCEDSQL_SCHEDULES_SEED=%d FENCEDSQL_SCHEDULES_ITERS=1 go test -run '^%s$' ./fencedsql/)", int64(seed), int64(seed), r.t.Name())
}
