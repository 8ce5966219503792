package fencedsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"strconv"
	"sync"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// A lock service that was switched, rebuilt or restored without raising its floor
// (lockclient.FloorRaiser) issues tokens below the ones the rows carry: every new
// holder is fenced, and the application sees a wall of ErrFenced that looks like
// contention. With WithTokenSource the fenced driver tells the two apart. On a fenced
// write — refused by a row's newer token or by the database's token floor — (the error
// path only, at most once per table every regressionInterval; a cached "behind"
// verdict is confirmed with one LastToken call before it is reported) it
// reads the highest token in the table (schema.MaxToken, through a separate plain connection)
// and then the lock service's last token: when a row carries a token the service has
// not issued yet, the service is behind the database, and the write fails with a
// *TokenRegressionError naming the procedure, wrapping the plain *FencedError or
// *BelowFloorError. schema.MaxToken counts the floor − 1 as accepted, so a service
// behind a floor raised by the switch procedure is found too. The order
// of the two reads matters: every token in the table when it was read had been issued
// before LastToken was asked, so a table maximum above the service's answer cannot be a
// grant that raced with the check.

// TokenSource is the lock service as the fenced driver sees it: *lockclient.Client
// implements it (LastToken: the highest token issued, or the service's floor).
type TokenSource interface {
	LastToken(ctx context.Context) (uint64, error)
}

// WithTokenSource lets the fenced driver recognise a lock service whose tokens went
// back below the database's (see TokenRegressionError). The check runs only when a
// write is fenced; it costs nothing on the happy path.
func WithTokenSource(src TokenSource) Option { return func(c *config) { c.tokens = src } }

// ErrTokenRegression means the lock service issues tokens below the highest token the
// database has accepted: it was switched, rebuilt or restored without raising its
// floor. errors.Is(err, ErrFenced) holds too: nothing was changed.
var ErrTokenRegression = errors.New("fencedsql: the lock service issues tokens below the database's")

// TokenRegressionError is a fenced write explained: the lock service's last token is
// below the highest token the table has accepted. errors.Is(err, ErrTokenRegression)
// and errors.Is(err, ErrFenced) hold, and errors.As reaches the *FencedError or
// *BelowFloorError it explains (then errors.Is(err, ErrBelowFloor) holds too).
type TokenRegressionError struct {
	Table         string
	Token         uint64 // the statement's token
	ServiceToken  uint64 // the lock service's last token when checked
	DatabaseToken uint64 // the highest token the table accepted when checked (schema.MaxToken: its rows, or its floor − 1)
	Err           error  // the *FencedError or *BelowFloorError
}

func (e *TokenRegressionError) Error() string {
	return "fencedsql: write to " + e.Table + " with token " + strconv.FormatUint(e.Token, 10) +
		" fenced because the lock service is behind the database: its last token is " + strconv.FormatUint(e.ServiceToken, 10) +
		" but the table has accepted token " + strconv.FormatUint(e.DatabaseToken, 10) +
		"; raise the lock service's floor above the database's highest token (N=$(fencedsql-schema -max-token …); lockfloor -raise $N), " +
		"see README, \"Switching or rebuilding the lock service\""
}

func (e *TokenRegressionError) Unwrap() []error { return []error{ErrTokenRegression, ErrFenced, e.Err} }

// regressionInterval bounds how often a table is checked.
const regressionInterval = 10 * time.Second

// regression is a core's check state.
type regression struct {
	mu      sync.Mutex
	checked map[string]regressionVerdict // by table
}

type regressionVerdict struct {
	at                time.Time
	service, database uint64 // database > service: behind
}

// noClose hides a connector's Close from the check's own short-lived sql.DB.
type noClose struct{ driver.Connector }

// explainFenced returns fe — the *FencedError or *BelowFloorError of a write to g under
// token tok — or a *TokenRegressionError wrapping it when the lock service is behind
// the table's tokens (see above). A "behind" verdict taken from the cache is confirmed
// first with one LastToken call (recheckTimeout): the operator's fix — raising the
// service's floor — must not leave a genuinely stale holder's refusal explained as a
// regression for the rest of the interval (red-team rt31b F7). A confirmation that
// fails reports fe alone, with a warning.
func (k *core) explainFenced(fe error, tok uint64, g *plan.Table) error {
	src := k.cfg.tokens
	if src == nil || k.raw == nil || g == nil {
		return fe
	}
	v, cached, ok := k.regressionVerdict(src, g)
	if !ok || v.database <= v.service || tok > v.database {
		return fe
	}
	if cached {
		ctx, cancel := context.WithTimeout(context.Background(), recheckTimeout)
		last, err := src.LastToken(ctx)
		cancel()
		if err != nil {
			k.cfg.logger.Warn("fencedsql: token regression check: confirming the lock service's last token", "err", err.Error())
			return fe
		}
		if last > v.service {
			v.service = last
			k.regress.mu.Lock()
			if cur, ok := k.regress.checked[g.String()]; ok && cur.at.Equal(v.at) && cur.service < last {
				cur.service = last
				k.regress.checked[g.String()] = cur
			}
			k.regress.mu.Unlock()
		}
		if v.database <= v.service {
			return fe
		}
	}
	k.cfg.logger.Error("fencedsql: the lock service issues tokens below the database's", "table", g.String(), "service_token", v.service, "database_token", v.database)
	return &TokenRegressionError{Table: g.String(), Token: tok, ServiceToken: v.service, DatabaseToken: v.database, Err: fe}
}

// recheckTimeout bounds explainFenced's confirmation of a cached "behind" verdict.
const recheckTimeout = 2 * time.Second

// regressionVerdict returns the table's verdict: the cached one (cached) when younger
// than regressionInterval, otherwise a new one read now (schema.MaxToken through a
// separate plain connection, then the service's LastToken: in that order, see above).
// ok is false when a read failed (logged).
func (k *core) regressionVerdict(src TokenSource, g *plan.Table) (v regressionVerdict, cached, ok bool) {
	k.regress.mu.Lock()
	defer k.regress.mu.Unlock()
	v, ok = k.regress.checked[g.String()]
	if ok && time.Since(v.at) <= regressionInterval {
		return v, true, true
	}
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	db := sql.OpenDB(noClose{k.raw})
	defer db.Close()
	db.SetMaxOpenConns(1)
	max, err := schema.MaxToken(ctx, db, k.dialect, schema.GuardSpec{Table: g.String(), TokenColumn: g.TokenCol, VersionColumn: g.VerCol})
	if err != nil {
		k.cfg.logger.Warn("fencedsql: token regression check: reading the table's highest token", "table", g.String(), "err", err.Error())
		return v, false, false
	}
	last, err := src.LastToken(ctx)
	if err != nil {
		k.cfg.logger.Warn("fencedsql: token regression check: reading the lock service's last token", "err", err.Error())
		return v, false, false
	}
	v = regressionVerdict{at: time.Now(), service: last, database: max}
	if k.regress.checked == nil {
		k.regress.checked = map[string]regressionVerdict{}
	}
	k.regress.checked[g.String()] = v
	return v, false, true
}
