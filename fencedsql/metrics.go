package fencedsql

import (
	"context"

	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names. Every instrument carries db.system.name (postgresql, mysql, sqlite);
// per-table ones also db.collection.name (the guarded table), following OpenTelemetry's
// database semantic conventions.
const (
	// MetricFencedRejections counts writes the database refused for a stale token: each
	// one is the visible trace of a split brain that already happened.
	MetricFencedRejections = "fencedsql.fenced_rejections"
	// MetricVersionConflicts counts ExpectVersion writes that found another version.
	MetricVersionConflicts = "fencedsql.version_conflicts"
	// MetricNoToken counts guarded writes refused for lack of a token.
	MetricNoToken = "fencedsql.no_token"
	// MetricUnsupported counts statements refused as impossible to fence safely.
	MetricUnsupported = "fencedsql.unsupported"
	// MetricUniqueViolations counts unique-constraint violations (ErrDuplicate).
	MetricUniqueViolations = "fencedsql.unique_violations"
	// MetricRewriteCache counts statement-plan cache lookups, by fencedsql.cache.result:
	// hit or miss.
	MetricRewriteCache = "fencedsql.rewrite_cache.lookups"
	// MetricGuardedWriteDuration is a histogram (seconds) of guarded statements — fenced
	// writes and claimed reads carrying a token — from the call to the outcome, by
	// fencedsql.outcome (accepted, fenced, version_conflict, no_token, unsupported,
	// schema, duplicate, error). A statement that returns rows ends when its rows close.
	MetricGuardedWriteDuration = "fencedsql.guarded_write.duration"
)

// DurationBuckets is the explicit bucket advice of the duration histograms, in
// seconds: OpenTelemetry's semantic-convention boundaries for request durations
// (0.005 … 10 s), so that p50 and p99 of sub-second operations can be read from
// Prometheus. Without advice the SDK would use its default boundaries (0, 5, 10, 25, …
// 10000), meant for milliseconds, and every observation would fall in the first bucket.
var DurationBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}

// Attribute keys of the metrics.
const (
	AttrDBSystem    = attribute.Key("db.system.name")
	AttrDBTable     = attribute.Key("db.collection.name")
	AttrCacheResult = attribute.Key("fencedsql.cache.result")
)

// WithMeterProvider sets the OpenTelemetry MeterProvider (default: the global one,
// which records nothing until an SDK is installed). Recording allocates nothing: the
// attribute sets are computed once per guarded table. Every counter series the pool
// can emit for a guarded table (and the cache's and the table-less refusals') exists
// at 0 from the pool's opening, so that Prometheus's increase() sees the first event.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meter = mp }
}

type instruments struct {
	fenced, version, noToken, unsupported, unique, cache metric.Int64Counter
	duration                                             metric.Float64Histogram
	byOutcome                                            map[*plan.Table]*[len(outcomes)][]metric.RecordOption

	sys       attribute.KeyValue                 // db.system.name
	base      []metric.AddOption                 // db.system.name only
	byTable   map[*plan.Table][]metric.AddOption // plus db.collection.name
	hit, miss []metric.AddOption
}

// dbSystem is the dialect's OpenTelemetry database name (dialect.SystemNamer), else its
// Name().
func dbSystem(d dialect.Dialect) string {
	if n, ok := d.(dialect.SystemNamer); ok {
		return n.SystemName()
	}
	return d.Name()
}

func newInstruments(mp metric.MeterProvider, d dialect.Dialect, rw *plan.Planner) *instruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter("github.com/fencedsql/fencedsql/fencedsql")
	in := &instruments{byTable: map[*plan.Table][]metric.AddOption{}, byOutcome: map[*plan.Table]*[len(outcomes)][]metric.RecordOption{}}
	counter := func(name, unit, desc string) metric.Int64Counter {
		c, _ := m.Int64Counter(name, metric.WithUnit(unit), metric.WithDescription(desc))
		return c
	}
	in.fenced = counter(MetricFencedRejections, "{write}", "Writes refused by the database for a stale fencing token.")
	in.version = counter(MetricVersionConflicts, "{write}", "ExpectVersion writes that found another version.")
	in.noToken = counter(MetricNoToken, "{write}", "Guarded writes refused for lack of a fencing token.")
	in.unsupported = counter(MetricUnsupported, "{statement}", "Statements refused because they cannot be fenced safely.")
	in.unique = counter(MetricUniqueViolations, "{write}", "Unique-constraint violations.")
	in.cache = counter(MetricRewriteCache, "{lookup}", "Statement plan cache lookups.")
	in.duration, _ = m.Float64Histogram(MetricGuardedWriteDuration, metric.WithUnit("s"),
		metric.WithDescription("Duration of guarded statements, by outcome."),
		metric.WithExplicitBucketBoundaries(DurationBuckets...))
	sys := AttrDBSystem.String(dbSystem(d))
	in.sys = sys
	in.base = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(sys))}
	in.hit = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(sys, AttrCacheResult.String("hit")))}
	in.miss = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(sys, AttrCacheResult.String("miss")))}
	// Series that exist from the start (see addGuard): the cache's two results and the
	// statements refused before their table is known.
	ctx := context.Background()
	in.cache.Add(ctx, 0, in.hit...)
	in.cache.Add(ctx, 0, in.miss...)
	in.unsupported.Add(ctx, 0, in.base...)
	for _, g := range rw.Tables() {
		in.addGuard(g)
	}
	return in
}

// addGuard computes g's attribute sets and creates its counter series at 0. Every
// per-table counter series the pool can emit for g exists from the pool's opening, not
// from its first increment: Prometheus's increase() needs a sample before the first
// event to see it, so an alert such as increase(fencedsql_fenced_rejections_total[5m])
// > 0 fires for a process whose first rejection is its only one (deploy/prometheus).
// The set is bounded: five counters per guarded table. Histograms are not pre-created
// (a recording would be an observation). Call it before the instruments are shared:
// the maps are read without a lock.
func (in *instruments) addGuard(g *plan.Table) {
	if _, ok := in.byTable[g]; ok {
		return
	}
	tbl := AttrDBTable.String(g.String())
	in.byTable[g] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(in.sys, tbl))}
	var byOutcome [len(outcomes)][]metric.RecordOption
	for i, o := range outcomes {
		byOutcome[i] = []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(in.sys, tbl, AttrOutcome.String(o)))}
	}
	in.byOutcome[g] = &byOutcome
	for _, c := range in.perTable() {
		c.Add(context.Background(), 0, in.byTable[g]...)
	}
}

// perTable are the counters recorded with a guarded table's attributes.
func (in *instruments) perTable() []metric.Int64Counter {
	return []metric.Int64Counter{in.fenced, in.version, in.noToken, in.unsupported, in.unique}
}

// count adds one to c with the table's attributes (or the base ones).
func (in *instruments) count(c metric.Int64Counter, g *plan.Table) {
	opts := in.byTable[g.Base()]
	if opts == nil {
		opts = in.base
	}
	c.Add(context.Background(), 1, opts...)
}

// writeDuration records a guarded statement on g that took secs with outcome i.
func (in *instruments) writeDuration(g *plan.Table, i int, secs float64) {
	if opts := in.byOutcome[g.Base()]; opts != nil {
		in.duration.Record(context.Background(), secs, opts[i]...)
	}
}
