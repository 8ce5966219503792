package fencedsql

import (
	"context"
	"database/sql/driver"
	"io"
	"sync"
	"sync/atomic"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// core is the state shared by every connection of one DB: configuration, the rewriter,
// the plan cache and the tables whose schema was verified. cfg, rw, cache and metrics
// are set before the first connection is handed out (open may extend them with the
// registry's tables) and read-only afterwards.
type core struct {
	cfg     config
	dialect dialect.Dialect
	rw      *plan.Planner
	cache   *planCache
	checked sync.Map // *guard → checkedAt: schema verified then, on that server (WithSchemaRecheck)
	// namesGen counts forgetNames: DDL that may have moved what a guarded name
	// resolves to on every connection (names.go)
	namesGen atomic.Uint64
	// namePath is the dialect's name resolution (dialect.NamePather) of the connections
	// whose verdicts the pool caches: the first connection's to ask (namepath.go)
	namePath atomic.Pointer[string]
	// deleteFence: *plan.Table → verdict, the table's dialect.DeleteFencer verdict
	deleteFence sync.Map
	// guardInstalled: *plan.Table → verdict, the table's dialect.UpdateTriggerFinder (or Guarder) verdict (which
	// form of a no-op ON DUPLICATE KEY UPDATE to send: plan.Plan.Stamped)
	guardInstalled sync.Map
	// claimOne: *plan.Table → verdict, the table's dialect.ClaimOneChecker verdict
	claimOne sync.Map
	// locator: *plan.Table → verdict, the table's dialect.LocatorChecker verdict
	locator sync.Map
	// twoStepDelete: *plan.Table → verdict, the table's dialect.TwoStepDeleteChecker
	// verdict (twostepdelete.go)
	twoStepDelete sync.Map
	// rowKeys: *plan.Table → rowKey, the table's primary key columns (keyed.go)
	rowKeys sync.Map
	// absence: *plan.Table → verdict: the table's dialect.AbsenceRecorder is
	// installed (absent.go).
	absence sync.Map
	// keyed: *plan.Plan (a keyed template) → keyedForm, the template completed
	keyed sync.Map
	// viewLock: relation text → verdict, the dialect.ViewLockChecker verdict on a name a
	// locking read reads (lockthrough.go)
	viewLock sync.Map
	metrics  *instruments
	first    firstUse // the registry and the listed tables, at the first connection
	// guardRecorded: the first connection found a table recorded as guarded (a registry
	// row or a guard trigger), so the lazy check judges the floor coverage (floorguard.go)
	guardRecorded atomic.Bool
	// server is the identity of the server the first-connection reads were made on
	// (serverchange.go)
	server  serverState
	missing missingListed // listed tables that did not exist yet (WithDDL: missing.go)
	// relatives stops the pool's writes once a relative it does not guard appeared
	// (relatives.go)
	relatives relativeBlock
	raw       driver.Connector // the plain driver's connector, for WithTokenSource's check
	regress   regression
	// sendCheck is the dialect's judge of the driver's own reading of what is sent
	// (dialect.SendChecker), nil when it has none (checkSend).
	sendCheck dialect.SendChecker
}

func newCore(opts []Option) (*core, error) {
	cfg := defaultConfig()
	for _, o := range opts {
		o(&cfg)
	}
	rw, err := cfg.newRewriter()
	if err != nil {
		return nil, err
	}
	k := &core{cfg: cfg, dialect: cfg.dialect, rw: rw, cache: newPlanCache(cfg.cacheSize),
		metrics: newInstruments(cfg.meter, cfg.dialect, rw)}
	k.sendCheck, _ = cfg.dialect.(dialect.SendChecker)
	return k, nil
}

// plan returns the cached plan for sql, rewriting it on a miss. Refusals are not
// cached: they are rare and their errors carry no per-call state.
func (k *core) plan(sql string, versioned bool) (*plan.Plan, error) {
	if p, ok := k.cache.get(sql, versioned); ok {
		k.metrics.cache.Add(context.Background(), 1, k.metrics.hit...)
		return p, nil
	}
	k.metrics.cache.Add(context.Background(), 1, k.metrics.miss...)
	p, err := k.rw.Rewrite(sql, versioned)
	if err != nil {
		return nil, k.refused(err)
	}
	k.cache.put(sql, versioned, p)
	return p, nil
}

// refused turns the planner's refusal into an *UnsupportedError, logs and counts it.
func (k *core) refused(err error) error {
	err = asUnsupported(err)
	// The reason names the table and the form, never the statement's values.
	k.cfg.logger.Warn("fencedsql: statement refused", "err", err.Error())
	k.metrics.count(k.metrics.unsupported, k.guardOf(err))
	return err
}

type connector struct {
	raw  driver.Connector
	core *core
	drv  driver.Driver
	// passwords are the DSN's (secret.Passwords), masked in the plain driver's
	// errors (maskPassword); nil when the DSN is not the wrapper's to read.
	passwords []string
}

// Connect implements driver.Connector. The plain driver's error is returned masked of
// the DSN's password.
func (c *connector) Connect(ctx context.Context) (driver.Conn, error) {
	raw, err := c.raw.Connect(ctx)
	if err != nil {
		return nil, maskPassword(err, c.passwords)
	}
	fc := newConn(raw, c.core)
	if err := c.core.open(ctx, fc); err != nil {
		_ = raw.Close()
		return nil, err
	}
	return fc, nil
}

// Driver implements driver.Connector.
func (c *connector) Driver() driver.Driver { return c.drv }

// Close closes the wrapped connector if it is an io.Closer (database/sql calls it from
// DB.Close).
func (c *connector) Close() error {
	if cl, ok := c.raw.(io.Closer); ok {
		return cl.Close()
	}
	return nil
}

// guardOf finds the guard an UnsupportedError names, for metrics.
func (k *core) guardOf(err error) *plan.Table {
	ue, ok := err.(*UnsupportedError)
	if !ok {
		return nil
	}
	for _, g := range k.rw.Tables() {
		if g.String() == ue.Table {
			return g
		}
	}
	return nil
}
