package fencedsql

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
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

// regressionBackoff is how long a failed look-up (the lock service or the database
// did not answer) keeps the pool's later fenced writes of the table from asking again:
// an unreachable service — exactly when stale holders appear — costs one attempt per
// interval, not one per ErrFenced (red-team rt44f F4).
const regressionBackoff = 5 * time.Second

// lookupTimeout bounds one look-up (the table's highest token, then LastToken), within
// the statement's context.
const lookupTimeout = 5 * time.Second

// regression is a core's check state. mu guards the maps only: it is never held across
// a round trip (red-team rt44f F4: one pool-wide mutex held across both look-ups
// queued every table's fenced writes behind a lock service that did not answer).
type regression struct {
	mu      sync.Mutex
	checked map[string]regressionVerdict // by table
	// busy: a look-up of the table is under way; failed: when one last failed (or a
	// confirmation of a cached verdict did). A fenced write meeting either returns its
	// error unexplained at once: the explanation is best-effort.
	busy   map[string]bool
	failed map[string]time.Time
	// seen: the highest token a look-up of the table found (tableMaxToken). A table's
	// highest token does not go down (its rows' tokens rise, a deleted row leaves a
	// tombstone, the floor rises), so a token once seen above tok answers newerTokenIn
	// without another look-up.
	seen map[string]uint64
}

// sawAbove reports whether a look-up of g already found a token above tok (strict: at
// least tok).
func (r *regression) sawAbove(g *plan.Table, tok uint64, strict bool) bool {
	r.mu.Lock()
	defer r.mu.Unlock()
	m, ok := r.seen[g.String()]
	return ok && (m > tok || strict && m >= tok)
}

// saw records m, the highest token a look-up of g found.
func (r *regression) saw(g *plan.Table, m uint64) {
	r.mu.Lock()
	defer r.mu.Unlock()
	if r.seen == nil {
		r.seen = map[string]uint64{}
	}
	r.seen[g.String()] = max(r.seen[g.String()], m)
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
// fails reports fe alone, with a warning. Every look-up runs under ctx, the
// statement's, bounded by its own timeout; a look-up of the table already under way, or
// one that failed less than regressionBackoff ago, is not waited for: fe is returned
// unexplained at once (red-team rt44f F4).
func (k *core) explainFenced(ctx context.Context, fe error, tok uint64, g *plan.Table) error {
	src := k.cfg.tokens
	if src == nil || k.raw == nil || g == nil || ctx.Err() != nil {
		return fe // a statement whose context already ended is not explained
	}
	v, cached, ok := k.regressionVerdict(ctx, src, g)
	if !ok || v.database <= v.service || tok > v.database {
		return fe
	}
	if cached {
		if !k.regressBegin(g) {
			return fe
		}
		cctx, cancel := context.WithTimeout(ctx, recheckTimeout)
		last, err := src.LastToken(cctx)
		cancel()
		k.regressEnd(g, err)
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
// separate plain connection, then the service's LastToken: in that order, see above),
// under ctx bounded by lookupTimeout. ok is false when a read failed (logged), and,
// without a round trip, while another look-up of the table is under way or within
// regressionBackoff of a failed one (regressBegin).
func (k *core) regressionVerdict(ctx context.Context, src TokenSource, g *plan.Table) (v regressionVerdict, cached, ok bool) {
	k.regress.mu.Lock()
	v, ok = k.regress.checked[g.String()]
	k.regress.mu.Unlock()
	if ok && time.Since(v.at) <= regressionInterval {
		return v, true, true
	}
	if !k.regressBegin(g) {
		return v, false, false
	}
	v, err := k.readVerdict(ctx, src, g)
	k.regressEnd(g, err)
	if err != nil {
		k.cfg.logger.Warn("fencedsql: token regression check: "+err.Error(), "table", g.String())
		return v, false, false
	}
	k.regress.mu.Lock()
	if k.regress.checked == nil {
		k.regress.checked = map[string]regressionVerdict{}
	}
	k.regress.checked[g.String()] = v
	k.regress.mu.Unlock()
	return v, false, true
}

// readVerdict reads the table's highest token, then the lock service's last token.
func (k *core) readVerdict(ctx context.Context, src TokenSource, g *plan.Table) (regressionVerdict, error) {
	ctx, cancel := context.WithTimeout(ctx, lookupTimeout)
	defer cancel()
	max, err := k.tableMaxToken(ctx, g)
	if err != nil {
		return regressionVerdict{}, fmt.Errorf("reading the table's highest token: %w", err)
	}
	last, err := src.LastToken(ctx)
	if err != nil {
		return regressionVerdict{}, fmt.Errorf("reading the lock service's last token: %w", err)
	}
	return regressionVerdict{at: time.Now(), service: last, database: max}, nil
}

// tableMaxToken reads the highest token g has accepted (schema.MaxToken: its rows, its
// tombstones, its floor − 1) through a separate plain connection: the error path's
// look-up (explainFenced, newerTokenIn), never the happy path's. The application's
// account may not list the replication connections (red-team rt48i): the answer only
// explains a write the guards already refused.
func (k *core) tableMaxToken(ctx context.Context, g *plan.Table) (uint64, error) {
	db := sql.OpenDB(noClose{k.raw})
	defer db.Close()
	db.SetMaxOpenConns(1)
	m, err := schema.MaxToken(schema.WithServerRoleUnknownAllowed(ctx), db, k.dialect, schema.GuardSpec{Table: g.String(), TokenColumn: g.TokenCol, VersionColumn: g.VerCol})
	if err == nil {
		k.regress.saw(g, m)
	}
	return m, err
}

// regressBegin marks a look-up of g under way and reports true, or reports false when
// one is already under way or one failed less than regressionBackoff ago.
func (k *core) regressBegin(g *plan.Table) bool {
	k.regress.mu.Lock()
	defer k.regress.mu.Unlock()
	name := g.String()
	if k.regress.busy[name] {
		return false
	}
	if at, ok := k.regress.failed[name]; ok && time.Since(at) < regressionBackoff {
		return false
	}
	if k.regress.busy == nil {
		k.regress.busy = map[string]bool{}
	}
	k.regress.busy[name] = true
	return true
}

// regressEnd ends regressBegin's look-up of g, whose error was err: a failure starts
// regressionBackoff, whatever cut it (the lookup's timeout, the service's or the
// database's error, or the statement's context ending while the service did not
// answer: the next fenced writes would wait the same way).
func (k *core) regressEnd(g *plan.Table, err error) {
	k.regress.mu.Lock()
	defer k.regress.mu.Unlock()
	name := g.String()
	delete(k.regress.busy, name)
	if err == nil {
		delete(k.regress.failed, name)
	} else {
		if k.regress.failed == nil {
			k.regress.failed = map[string]time.Time{}
		}
		k.regress.failed[name] = time.Now()
	}
}
