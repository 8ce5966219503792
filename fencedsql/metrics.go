package fencedsql

import (
	"context"

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
)

// Attribute keys of the metrics.
const (
	AttrDBSystem    = attribute.Key("db.system.name")
	AttrDBTable     = attribute.Key("db.collection.name")
	AttrCacheResult = attribute.Key("fencedsql.cache.result")
)

// WithMeterProvider sets the OpenTelemetry MeterProvider (default: the global one,
// which records nothing until an SDK is installed). Recording allocates nothing: the
// attribute sets are computed once per guarded table.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meter = mp }
}

type instruments struct {
	fenced, version, noToken, unsupported, unique, cache metric.Int64Counter

	base      []metric.AddOption            // db.system.name only
	byTable   map[*guard][]metric.AddOption // plus db.collection.name
	hit, miss []metric.AddOption
}

func dbSystem(d Dialect) string {
	switch d.Name() {
	case "postgres":
		return "postgresql"
	default:
		return d.Name()
	}
}

func newInstruments(mp metric.MeterProvider, d Dialect, rw *rewriter) *instruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter("github.com/fencedsql/fencedsql/fencedsql")
	in := &instruments{byTable: map[*guard][]metric.AddOption{}}
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
	sys := AttrDBSystem.String(dbSystem(d))
	in.base = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(sys))}
	in.hit = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(sys, AttrCacheResult.String("hit")))}
	in.miss = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(sys, AttrCacheResult.String("miss")))}
	for _, gs := range rw.guards {
		for _, g := range gs {
			in.byTable[g] = []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(sys, AttrDBTable.String(g.String())))}
		}
	}
	return in
}

// count adds one to c with the table's attributes (or the base ones).
func (in *instruments) count(c metric.Int64Counter, g *guard) {
	opts := in.byTable[g]
	if opts == nil {
		opts = in.base
	}
	c.Add(context.Background(), 1, opts...)
}
