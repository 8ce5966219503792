package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"math"

	"github.com/fencedsql/fencedsql/lockclient"
)

// The token floor (lockclient.FloorRaiser): the token source of the lease table — the
// sequence <table>_token_seq on PostgreSQL, the counter row of <table>_token on MySQL —
// is raised, only upward, under the same lock that serialises grants.

var _ lockclient.FloorRaiser = (*Backend)(nil)

// maxFloor is the highest floor a token source can take: one that leaves
// tokenSeqMinLeft tokens before the largest BIGINT, the least the token-source check
// (checkTokenSeq) accepts, so that a floor one process raised never makes another
// process's first grant refuse the source (red-team rt28b F5). One limit for both
// dialects.
const maxFloor = math.MaxInt64 - tokenSeqMinLeft // floorLimit(math.MaxInt64)

// WithMinToken makes the backend raise the table's token floor to n (see RaiseFloor)
// when it opens its first session, before any grant of that session: every token
// granted after that, by any client of the table, is greater than n. It is idempotent
// — a floor, or a token already issued, at or above n changes nothing — so it can stay
// in the configuration for good: after a lease table was recreated or restored, or the
// application moved from another lock service, set n to the highest token that service
// (or the guarded database, fencedsql-schema -max-token) knows. If the database cannot
// be reached, Open fails with an error wrapping lockclient.ErrUnavailable and the next
// Open tries again. n above math.MaxInt64-1,000,000 (maxFloor: it leaves a million tokens) is refused by New (ErrInvalidConfig); 0
// means no floor. Given more than once, the highest n counts: floors only go up, so
// options assembled from defaults and overrides (WithMinToken(M), later
// WithMinToken(0)) never lower it (red-team rt62c).
func WithMinToken(n uint64) Option {
	return func(c *config) {
		if n > maxFloor {
			c.invalid("WithMinToken", "%d is above the largest floor, %d (it leaves %d tokens before the largest BIGINT)", n, uint64(maxFloor), tokenSeqMinLeft)
			return
		}
		c.minToken = max(c.minToken, n) // floors only go up
	}
}

// RaiseFloor implements lockclient.FloorRaiser: every token granted after it returns
// is greater than min. It changes the table's token source only upward: a min at or
// below the last token issued (or an earlier floor) changes nothing. On PostgreSQL it
// takes the table-wide advisory lock of the grants and then setval()s the sequence; on
// MySQL it updates the counter row, whose lock grants take. Either way it is ordered
// with every grant and every other RaiseFloor: no grant draws a token between the check
// and the raise. min above math.MaxInt64-1,000,000 is an error wrapping
// lockclient.ErrInvalidConfig; a missing table a *SchemaError; an unreachable database,
// or one that is a standby, a replica or read-only (checked as LastToken does, before
// anything is written), an error wrapping lockclient.ErrUnavailable.
func (b *Backend) RaiseFloor(ctx context.Context, min uint64) error {
	if min > maxFloor {
		return fmt.Errorf("sqllock: %w: RaiseFloor(%d): above the largest floor, %d (it leaves %d tokens before the largest BIGINT)",
			lockclient.ErrInvalidConfig, min, uint64(maxFloor), tokenSeqMinLeft)
	}
	if min == 0 {
		return nil
	}
	// Not compared with the lease table: a source behind its tokens is fixed by a raise.
	if err := b.tokenSourceChecked(ctx, "raise-floor", "", false); err != nil {
		return err
	}
	if b.dialect == MySQL {
		// Under the counter row's lock, the server's role first (leaseTop, as LastToken):
		// a raise on a replica would raise only its copy (red-team rt48d F2).
		err := b.inCounterLock(ctx, "raise-floor", func(tx *sql.Tx) error {
			if _, _, err := b.counterOnPrimary(ctx, tx, "raise-floor"); err != nil {
				return err
			}
			_, err := tx.ExecContext(ctx, b.q.raiseFloor, int64(min), int64(min))
			return err
		})
		if err != nil {
			return err
		}
		// The counter is now at or above min, or its row is missing, or the service is
		// retired (the counter at the largest BIGINT: the UPDATE changed nothing);
		// lastToken also refuses a counter still below a token of the lease table (a
		// raise not high enough to fix it).
		last, retired, err := b.lastToken(ctx)
		if err == nil && retired {
			err = b.retiredError("raise-floor", last)
		}
		return err
	}
	return b.inGrantLock(ctx, "raise-floor", func(tx *sql.Tx) error {
		if last, ok, err := b.retiredLast(ctx, tx); err != nil || ok {
			if ok {
				err = b.retiredError("raise-floor", last)
			}
			return err
		}
		var last int64
		var top sql.NullInt64
		var standby bool
		if err := tx.QueryRowContext(ctx, b.q.lastToken).Scan(&last, &top, &standby); err != nil {
			return err
		}
		if standby {
			return replicaError("raise-floor", nil)
		}
		if last >= int64(min) {
			return nil
		}
		seq := b.table.with("_token_seq")
		var seqMax int64
		if err := tx.QueryRowContext(ctx, `SELECT seqmax FROM pg_catalog.pg_sequence WHERE seqrelid = to_regclass($1::text)`,
			seq.quoted(Postgres)).Scan(&seqMax); err == nil && int64(min) > floorLimit(seqMax) {
			// A floor the token-source check of the next process would refuse (F5).
			e := b.schemaError("", nil)
			e.Unsafe = fmt.Sprintf("the floor %d leaves fewer than %d tokens before the MAXVALUE %d of token sequence %s; run ALTER SEQUENCE %s AS bigint NO MAXVALUE",
				min, tokenSeqMinLeft, seqMax, seq.String(), seq.quoted(Postgres))
			return e
		}
		_, err := tx.ExecContext(ctx, b.q.raiseFloor, seq.quoted(Postgres), int64(min))
		if state, ok := pgState(err); ok && state == "22003" {
			// setval past the sequence's MAXVALUE: no retry passes.
			e := b.schemaError("", err)
			e.Unsafe = fmt.Sprintf("the floor %d is above the MAXVALUE of token sequence %s; run ALTER SEQUENCE %s AS bigint NO MAXVALUE",
				min, seq.String(), seq.quoted(Postgres))
			return e
		}
		return err
	})
}

// LastToken implements lockclient.FloorRaiser: the highest token of the table's token
// source — the last one drawn, or the floor when that is higher. It waits for a grant
// in progress (PostgreSQL: the advisory lock of the grants; MySQL: a shared lock on the
// counter row), so every token granted before it returns is at most the result and
// every token granted after it returns is greater. On PostgreSQL a value drawn by a
// grant that then lost its race for the key counts as issued (it is never granted).
//
// Every call compares the source with the lease table's highest token under that lock
// (tokenSourceBehind, the check of a backend's first grant), on both dialects: a
// source that was set back below a token the table holds, or below 1, is a *SchemaError
// (Unsafe: raise the floor above that token), never a number below a token granted —
// a failover hook raises the guarded database's floor to LastToken+1 (red-team rt31b
// F1, F6). The backend's token-source check (tokenSeqChecked) runs first, as for a grant.
//
// The value is read from a primary only: on a PostgreSQL standby (pg_is_in_recovery)
// or a MySQL/MariaDB replica (@@global.read_only, or a replication thread in the
// process list, which an account without PROCESS does not see) the token source may
// lag tokens the primary granted, and a floor raised from it would let them write
// again; LastToken then fails with an error wrapping lockclient.ErrUnavailable (the
// statement that reads the lease table reads it too: no extra round trip).
func (b *Backend) LastToken(ctx context.Context) (uint64, error) {
	last, _, err := b.lastToken(ctx)
	if err != nil {
		return 0, err
	}
	return uint64(last), nil
}

// lastToken is LastToken, and whether the token source is retired (Retire: its last
// token is then the one the retirement recorded — on MySQL row retiredRow, not the
// counter; on PostgreSQL the sequence's MAXVALUE, which is its last value).
func (b *Backend) lastToken(ctx context.Context) (int64, bool, error) {
	if err := b.tokenSeqChecked(ctx, "last-token", ""); err != nil && !errors.Is(err, lockclient.ErrRetired) {
		return 0, false, err
	}
	var last int64
	var top sql.NullInt64
	var replica, retired bool
	var err error
	if b.dialect == MySQL {
		err = b.inCounterLock(ctx, "last-token", func(tx *sql.Tx) error {
			if err := tx.QueryRowContext(ctx, b.q.lastToken).Scan(&last); err != nil {
				return err
			}
			if err := tx.QueryRowContext(ctx, b.q.leaseTop).Scan(&top, &replica); err != nil {
				return err
			}
			if last == math.MaxInt64 { // the end of the counter, or a retirement
				var err error
				if l, ok, err2 := b.retiredLast(ctx, tx); ok {
					last, retired = l, true
				} else {
					err = err2
				}
				return err
			}
			return nil
		})
	} else {
		err = b.inGrantLock(ctx, "last-token", func(tx *sql.Tx) error {
			// A retired sequence's last value is the retirement's last token; the mark
			// (MAXVALUE and COMMENT) is read in the same transaction, under the lock.
			if err := tx.QueryRowContext(ctx, b.q.lastToken).Scan(&last, &top, &replica); err != nil {
				return err
			}
			l, ok, err := b.retiredLast(ctx, tx)
			if ok {
				last, retired = l, true
			}
			return err
		})
	}
	if err != nil {
		return 0, false, err
	}
	if replica {
		return 0, false, replicaError("last-token", nil)
	}
	if last < math.MaxInt64 {
		if p := tokenSourceBehind(b, b.tokenSource(), last+1, top); p != "" {
			e := b.schemaError("", nil)
			e.Unsafe = p
			return 0, false, e
		}
	}
	return last, retired, nil
}

var _ lockclient.RetirementReader = (*Backend)(nil)

// Retired implements lockclient.RetirementReader with the reads of LastToken, in the
// same transaction, under the same lock and with the same checks (a standby or replica
// is an error wrapping lockclient.ErrUnavailable; a token source behind the lease
// table's tokens a *SchemaError): whether the token source carries the retirement's
// mark (PostgreSQL: the sequence's COMMENT retiredMark, its MAXVALUE the last token;
// MySQL: row retiredRow beside a counter at the largest BIGINT) and that last token. It
// writes nothing and needs no right beyond LastToken's.
func (b *Backend) Retired(ctx context.Context) (uint64, bool, error) {
	last, retired, err := b.lastToken(ctx)
	if err != nil || !retired {
		return 0, false, err
	}
	return uint64(last), true, nil
}

// tokenSource is the name of the table's token source: the PostgreSQL sequence, the
// MySQL counter table.
func (b *Backend) tokenSource() tableName {
	if b.dialect == MySQL {
		return b.table.with("_token")
	}
	return b.table.with("_token_seq")
}

// counterOnPrimary locks the MySQL/MariaDB counter row in tx (inCounterLock) and
// reads the lease table's top token with the server's role (leaseTop, as LastToken):
// it returns the counter and the top token, or, on a replica, the typed unavailable
// error of op — a write there would change only the replica's copy (red-team rt48d F2).
func (b *Backend) counterOnPrimary(ctx context.Context, tx *sql.Tx, op string) (v int64, top sql.NullInt64, err error) {
	if err := tx.QueryRowContext(ctx, myAsOfNow+"SELECT v FROM "+b.tokenSource().quoted(MySQL)+" WHERE id = 1 FOR UPDATE").Scan(&v); err != nil {
		return 0, top, err
	}
	var replica bool
	if err := tx.QueryRowContext(ctx, b.q.leaseTop).Scan(&top, &replica); err != nil {
		return 0, top, err
	}
	if replica {
		return 0, top, replicaError(op, nil)
	}
	return v, top, nil
}

// inCounterLock runs f in a MySQL READ COMMITTED transaction whose first statement is
// expected to take the shared lock on the counter row (q.lastToken): while f holds it
// no grant can draw a token, so the lease table f reads next holds every token drawn
// up to the counter and none above. A missing counter row is a *SchemaError.
func (b *Backend) inCounterLock(ctx context.Context, op string, f func(tx *sql.Tx) error) error {
	tx, err := b.db.BeginTx(ctx, &sql.TxOptions{Isolation: sql.LevelReadCommitted})
	if err != nil {
		return unavailable(op, "", err)
	}
	defer tx.Rollback()
	if err := f(tx); errors.Is(err, sql.ErrNoRows) {
		return b.schemaError(b.counterRowMissing(), nil)
	} else if err != nil {
		return b.fail(ctx, op, "", err)
	}
	if err := tx.Commit(); err != nil {
		return unavailable(op, "", err)
	}
	return nil
}

// inGrantLock runs f in a PostgreSQL transaction that holds the table-wide advisory
// locks the grants take, in their order: the one of the name as spelled (earlier
// releases), then the table's own (tableClass), which every spelling of the table that
// grants, raises or reads the floor shares.
func (b *Backend) inGrantLock(ctx context.Context, op string, f func(tx *sql.Tx) error) error {
	tx, err := b.db.BeginTx(ctx, nil)
	if err != nil {
		return unavailable(op, "", err)
	}
	defer tx.Rollback()
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock($1, 1)", advisoryClass(b.table)); err != nil {
		return b.fail(ctx, op, "", err)
	}
	// With the lock, a durable commit for this transaction (pgDurableCommit): a raise
	// of the floor must survive a crash like a grant.
	if _, err := tx.ExecContext(ctx, "SELECT pg_advisory_xact_lock("+tableClass("$1")+", 1), "+pgDurableCommit, b.table.quoted(Postgres)); err != nil {
		return b.fail(ctx, op, "", err)
	}
	if err := f(tx); err != nil {
		if se := (*SchemaError)(nil); errors.As(err, &se) {
			return err // f's own verdict on the token source
		}
		return b.fail(ctx, op, "", err)
	}
	if err := tx.Commit(); err != nil {
		return unavailable(op, "", err)
	}
	return nil
}

// openFloor raises the floor of WithMinToken once, at the first Open that succeeds in
// doing so.
func (b *Backend) openFloor(ctx context.Context) error {
	if b.minToken == 0 {
		return nil
	}
	b.floorMu.Lock()
	defer b.floorMu.Unlock()
	if b.floorDone {
		return nil
	}
	if err := b.RaiseFloor(ctx, b.minToken); err != nil {
		return fmt.Errorf("sqllock: WithMinToken(%d): %w", b.minToken, err)
	}
	b.floorDone = true
	return nil
}
