package failover

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// Table is the guarded table of the rounds: one row per round.
const Table = "failover_rows"

// DB is what a round needs to know about the database of a Pair.
type DB struct {
	Dialect      dialect.Dialect
	PlainDriver  string // "pgx" or "mysql"
	FencedDriver string // dialects/postgres.DriverName or dialects/mysql.DriverName
	CreateTable  string // CREATE TABLE Table (id, holder, fence_token, version)
	Upsert       string // writes (id, holder) whatever the row's existence: two parameters
	ReadToken    string // SELECT fence_token of the row id: one parameter
}

// FencedDSN is dsn with the fenced_tables parameter naming Table.
func FencedDSN(dsn string) string { return dsn + "&" + fencedsql.ParamTables + "=" + Table }

// Install creates Table on the primary and installs it as documented (what
// fencedsql-schema -apply does): record it in the registry (schema.RegisterTables),
// run schema.Check, run its Fix statements (the guards, the tombstone guard), check
// again. It returns the reports of the second check.
func Install(ctx context.Context, dsn string, d DB) ([]schema.TableReport, error) {
	db, err := sql.Open(d.PlainDriver, dsn)
	if err != nil {
		return nil, err
	}
	defer db.Close()
	if _, err := db.ExecContext(ctx, d.CreateTable); err != nil {
		return nil, fmt.Errorf("failover: creating %s: %w", Table, err)
	}
	spec := schema.GuardSpec{Table: Table}
	if err := schema.RegisterTables(ctx, db, d.Dialect, spec); err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	reports, err := schema.Check(ctx, db, d.Dialect, spec)
	if err != nil {
		return nil, fmt.Errorf("failover: %w", err)
	}
	for _, r := range reports {
		for _, s := range r.Fix {
			if _, err := db.ExecContext(ctx, s); err != nil {
				return nil, fmt.Errorf("failover: applying %q: %w", s, err)
			}
		}
	}
	return schema.Check(ctx, db, d.Dialect, spec)
}

// Hook is the floor hook run on the new primary right after the promotion, given a
// plain pool to it and the lock service's last token (schema.RaiseTokenFloor to
// last+1 in production).
type Hook func(ctx context.Context, db *sql.DB, last uint64) error

// Holders are the two lock holders of every round: A, whose lease ends, and B, who gets
// the next token.
type Holders struct {
	Svc  *memlock.Service
	A, B lockclient.Session
}

// NewHolders opens the two holders' sessions on a fresh memlock service.
func NewHolders(ctx context.Context) (*Holders, error) {
	svc := memlock.New()
	a, err := svc.Open(ctx, "A", time.Hour)
	if err != nil {
		return nil, err
	}
	b, err := svc.Open(ctx, "B", time.Hour)
	if err != nil {
		return nil, err
	}
	return &Holders{Svc: svc, A: a, B: b}, nil
}

// Outcome is what one round measured.
type Outcome struct {
	T1, T2 uint64
	// Lost: B's acknowledged write is not on the new primary (the row carries another
	// token, or is missing).
	Lost bool
	// StaleAcceptedNoFloor: A's write with t1 on the new primary, before the floor hook,
	// succeeded (run in a transaction that is rolled back).
	StaleAcceptedNoFloor bool
	// StaleAccepted: A's write with t1 after the floor hook succeeded (committed); false
	// when no hook ran.
	StaleAccepted bool
	// StaleErr is the error that refused A's write after the hook (nil when accepted).
	StaleErr error
	// Failover is how long the kill + promotion took.
	Failover time.Duration
}

// RoundOptions tunes a round.
type RoundOptions struct {
	// KillDelay is the pause between B's acknowledged COMMIT and the kill.
	KillDelay time.Duration
	// Detach cuts the replica off before B writes, so that B's write is surely lost
	// (a control showing what the measurement and the floor do with a lost write).
	Detach func(ctx context.Context) error
	// Hook is the floor hook; nil runs none (StaleAccepted is then false).
	Hook Hook
}

// Round runs one round on row id of pair: A (t1) writes the row; A's lease ends; B (t2 >
// t1) writes it and its COMMIT is acknowledged; KillDelay later the primary is killed
// and the replica promoted; the round reads the row on the new primary (was B's write
// lost?), tries A's write with t1 before the hook (rolled back), runs the hook, and
// writes with t1 again through a new fenced pool. It does not rebuild the pair.
// An error is an infrastructure failure or an unexpected refusal, not a measurement.
func Round(ctx context.Context, pair Pair, d DB, h *Holders, id int64, o RoundOptions) (Outcome, error) {
	var out Outcome
	key := fmt.Sprintf("row-%d", id)
	gA, err := h.A.TryAcquire(ctx, key)
	if err != nil {
		return out, err
	}
	out.T1 = gA.Token
	before, err := sql.Open(d.FencedDriver, FencedDSN(pair.DSN()))
	if err != nil {
		return out, err
	}
	defer before.Close()
	if _, err := before.ExecContext(fencedsql.WithToken(ctx, out.T1), d.Upsert, id, "A"); err != nil {
		return out, fmt.Errorf("failover: A's first write: %w", err)
	}
	if err := h.A.Release(ctx, gA); err != nil { // A's lease ends
		return out, err
	}
	gB, err := h.B.TryAcquire(ctx, key)
	if err != nil {
		return out, err
	}
	defer h.B.Release(context.WithoutCancel(ctx), gB)
	out.T2 = gB.Token
	if out.T2 <= out.T1 {
		return out, fmt.Errorf("failover: t2 %d not above t1 %d", out.T2, out.T1)
	}
	if o.Detach != nil {
		if err := o.Detach(ctx); err != nil {
			return out, fmt.Errorf("failover: detaching the replica: %w", err)
		}
	}
	if _, err := before.ExecContext(fencedsql.WithToken(ctx, out.T2), d.Upsert, id, "B"); err != nil {
		return out, fmt.Errorf("failover: B's write: %w", err)
	}
	// B's COMMIT is acknowledged.
	time.Sleep(o.KillDelay)
	start := time.Now()
	if err := pair.Failover(ctx); err != nil {
		return out, err
	}
	out.Failover = time.Since(start)
	before.Close()

	plain, err := sql.Open(d.PlainDriver, pair.DSN())
	if err != nil {
		return out, err
	}
	defer plain.Close()
	var tok uint64
	switch err := plain.QueryRowContext(ctx, d.ReadToken, id).Scan(&tok); {
	case errors.Is(err, sql.ErrNoRows):
		out.Lost = true
	case err != nil:
		return out, fmt.Errorf("failover: reading the row on the new primary: %w", err)
	default:
		out.Lost = tok != out.T2
	}

	after, err := sql.Open(d.FencedDriver, FencedDSN(pair.DSN()))
	if err != nil {
		return out, err
	}
	defer after.Close()
	stale := fencedsql.WithToken(ctx, out.T1)
	tx, err := after.BeginTx(stale, nil)
	if err != nil {
		return out, err
	}
	_, err = tx.ExecContext(stale, d.Upsert, id, "A")
	_ = tx.Rollback()
	if err != nil && !errors.Is(err, fencedsql.ErrFenced) {
		return out, fmt.Errorf("failover: A's stale write before the hook: %w", err)
	}
	out.StaleAcceptedNoFloor = err == nil
	if o.Hook == nil {
		return out, nil
	}
	last, err := h.Svc.LastToken(ctx)
	if err != nil {
		return out, err
	}
	if err := o.Hook(ctx, plain, last); err != nil {
		return out, fmt.Errorf("failover: the floor hook: %w", err)
	}
	_, err = after.ExecContext(stale, d.Upsert, id, "A")
	if err != nil && !errors.Is(err, fencedsql.ErrFenced) {
		return out, fmt.Errorf("failover: A's stale write after the hook: %w", err)
	}
	out.StaleAccepted, out.StaleErr = err == nil, err
	return out, nil
}
