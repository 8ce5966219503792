package sqllock

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"sync/atomic"
	"time"

	"github.com/fencedsql/fencedsql/lockclient"
)

// Schema version 1 (a lease table without the waiter queue): the statements the
// session falls back to until the table is migrated, and the check for the migration.

// tryAcquireV1 is TryAcquire with the statements of schema version 1 (no queue).
func (s *session) tryAcquireV1(ctx context.Context, key, gs string, entered bool) (lockclient.Grant, error) {
	// PostgreSQL returns no row when the key is held; MySQL's procedure returns 0.
	var tok int64
	err := s.b.scanRow(ctx, s.b.q.grant, []any{key, s.owner, gs, s.ttlMicros}, &tok)
	if errors.Is(err, sql.ErrNoRows) && s.b.dialect == Postgres || err == nil && tok == 0 {
		return lockclient.Grant{}, lockclient.ErrHeld
	}
	if err != nil {
		if missingObject(err) { // nothing ran: version 1's objects are missing too
			return lockclient.Grant{}, s.b.fail(ctx, "try-acquire", key, err)
		}
		if entered {
			s.abandonV1(key, gs) // the request may still reach the server
		}
		return lockclient.Grant{}, s.b.grantFailed(ctx, "try-acquire", key, err)
	}
	if tok <= 0 {
		return lockclient.Grant{}, unavailable("try-acquire", key, fmt.Errorf("invalid token %d from the server", tok))
	}
	return lockclient.Grant{Key: key, Token: uint64(tok), Data: gs}, nil
}

// acquireV1 is AcquireQueued with the statements of schema version 1: TryAcquire and
// Wait in turn, no queue.
func (s *session) acquireV1(ctx context.Context, key string, ended, failed func(error) error) (lockclient.Grant, time.Time, error) {
	for {
		gs, err := s.newRequest()
		if err != nil {
			return lockclient.Grant{}, time.Time{}, err
		}
		sent := time.Now()
		g, err := s.tryAcquireV1(ctx, key, gs, true)
		switch {
		case err == nil:
			return g, sent, nil
		case !errors.Is(err, lockclient.ErrHeld):
			return lockclient.Grant{}, time.Time{}, failed(err)
		}
		if err := s.Wait(ctx, key); err != nil {
			if ctx.Err() != nil {
				return lockclient.Grant{}, time.Time{}, ended(err)
			}
			return lockclient.Grant{}, time.Time{}, failed(err)
		}
	}
}

// abandonV1 is abandon for schema version 1: no mark, the owner-checked delete is
// repeated until it deletes the row (or two TTLs passed).
func (s *session) abandonV1(key, gs string) {
	s.background(func(ctx context.Context) error { return s.deleteAbandonedV1(ctx, key, gs) })
}

func (s *session) deleteAbandonedV1(ctx context.Context, key, gs string) error {
	var n int64
	if s.b.dialect == Postgres {
		var notified int64
		if err := s.b.scanRow(ctx, s.b.q.abandon, []any{key, gs, s.b.table.name}, &n, &notified); err != nil {
			return err
		}
	} else {
		res, err := s.b.exec(ctx, s.b.q.abandon, key, gs)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
	}
	if n == 0 {
		return errNotYet
	}
	return nil
}

// Schema version 2 missing: the backend falls back to version 1 and looks again after
// legacyRecheck.
const legacyRecheck = time.Minute

// legacy reports whether the backend currently uses schema version 1's statements.
func (b *Backend) legacy() bool {
	u := b.legacyUntil.Load()
	return u != 0 && time.Now().UnixNano() < u
}

// fallBackFor is the common part of missingV2 and missingRenewProcs: when err says that
// a table or routine does not exist (nothing ran) and the lease table itself exists,
// the table was created by an earlier release and not upgraded, so it sets *until to
// legacyRecheck from now (the statements of that release are used until then) and
// returns (true, nil). It returns (false, nil) for any other error, (false, a
// *SchemaError) when the lease table does not exist (CreateTable never ran), and
// (false, an error wrapping lockclient.ErrUnavailable) when the database cannot answer.
func (b *Backend) fallBackFor(ctx context.Context, op, key string, err error, until *atomic.Int64) (bool, error) {
	if !missingObject(err) {
		return false, nil
	}
	if perr := b.probeTable(ctx); perr != nil {
		var se *SchemaError
		if errors.As(perr, &se) {
			return false, perr
		}
		return false, unavailable(op, key, perr)
	}
	until.Store(time.Now().Add(legacyRecheck).UnixNano())
	return true, nil
}

// missingV2 decides what a failed statement of schema version 2 means when err says
// that a table or routine does not exist. It returns (false, nil) for any other error.
// Otherwise it asks whether the lease table itself exists: if it does not, the error is
// a *SchemaError (CreateTable never ran: a configuration error, returned at once); if
// it does, the table was created by an earlier version and not upgraded: the backend
// uses version 1's statements for a while, warns once (through WithLogger's logger)
// and missingV2 returns (true, nil). When the database cannot answer that question, the
// error wraps lockclient.ErrUnavailable.
func (b *Backend) missingV2(ctx context.Context, op, key string, err error) (legacy bool, _ error) {
	if fallBack, ferr := b.fallBackFor(ctx, op, key, err, &b.legacyUntil); !fallBack {
		return false, ferr
	}
	b.legacyWarn.Do(func() {
		b.logger.Warn("sqllock: the waiter queue (schema version 2) is missing; run sqllock.CreateTable to upgrade the lease table. Until then waiters are not queued (no fairness)",
			"table", b.table.String(), "err", err)
	})
	return true, nil
}
