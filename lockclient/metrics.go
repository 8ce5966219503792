package lockclient

import (
	"context"
	"reflect"
	"strings"
	"time"

	"go.opentelemetry.io/otel"
	"go.opentelemetry.io/otel/attribute"
	"go.opentelemetry.io/otel/metric"
)

// Metric names. Every instrument carries the attribute lock.backend (the backend's
// package name: memlock, etcdlock, sqllock, redislock, or a Name() the backend reports).
const (
	// MetricAcquireDuration is a histogram (seconds) of Acquire and TryAcquire calls, by
	// lock.outcome: acquired, held, unavailable, cancelled, invalid_config (ErrInvalidConfig:
	// an invalid option or a lock service set up wrongly, such as a missing lease table).
	MetricAcquireDuration = "lockclient.acquire.duration"
	// MetricHoldDuration is a histogram (seconds) of how long leases were held, by
	// lock.end: released or lost.
	MetricHoldDuration = "lockclient.hold.duration"
	// MetricRenewals counts renewals, by lock.outcome: ok, failed (transient), refused,
	// unhealthy (not sent: the health check of WithHealthCheck failed).
	MetricRenewals = "lockclient.renewals"
	// MetricLeasesLost counts leases declared lost, by lock.cause: refused (the service
	// refused a renewal), deadline (renewals failed until the local deadline), unhealthy
	// (renewals were withheld by the health check until the local deadline), closed.
	MetricLeasesLost = "lockclient.leases.lost"
)

// Bucket advice of the duration histograms, in seconds. Without it the SDK uses its
// default boundaries (0, 5, 10, 25, … 10000), meant for milliseconds: every acquire
// would fall in the first bucket and no quantile could be read.
var (
	// AcquireBuckets are OpenTelemetry's semantic-convention boundaries for request
	// durations, 5ms to 10s.
	AcquireBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10}
	// HoldBuckets extend them to an hour: leases are held for seconds to minutes.
	HoldBuckets = []float64{0.005, 0.01, 0.025, 0.05, 0.075, 0.1, 0.25, 0.5, 0.75, 1, 2.5, 5, 7.5, 10,
		30, 60, 120, 300, 600, 1800, 3600}
)

// Attribute keys of the metrics.
const (
	AttrBackend = attribute.Key("lock.backend")
	AttrOutcome = attribute.Key("lock.outcome")
	AttrEnd     = attribute.Key("lock.end")
	AttrCause   = attribute.Key("lock.cause")
)

// WithMeterProvider sets the OpenTelemetry MeterProvider for the client's metrics
// (default: the global one, which records nothing until an SDK is installed).
// A nil provider is valid and means the default. Every counter series the client can
// emit (renewals by outcome, leases lost by cause) exists at 0 from New on, so that
// Prometheus's increase() sees the first event.
func WithMeterProvider(mp metric.MeterProvider) Option {
	return func(c *config) { c.meter = mp }
}

// instruments holds the client's instruments and the attribute options computed once,
// so that recording allocates nothing.
type instruments struct {
	acquire metric.Float64Histogram
	hold    metric.Float64Histogram
	renew   metric.Int64Counter
	lost    metric.Int64Counter

	acqAcquired, acqHeld, acqUnavailable, acqCancelled   []metric.RecordOption
	acqInvalidConfig                                     []metric.RecordOption
	holdReleased, holdLost                               []metric.RecordOption
	renewOK, renewFailed, renewRefused, renewUnhealthy   []metric.AddOption
	lostRefused, lostDeadline, lostClosed, lostUnhealthy []metric.AddOption
}

func backendName(b Backend) string {
	if n, ok := b.(interface{ Name() string }); ok {
		return n.Name()
	}
	t := reflect.TypeOf(b)
	for t != nil && t.Kind() == reflect.Pointer {
		t = t.Elem()
	}
	if t == nil {
		return "unknown"
	}
	p := t.PkgPath()
	return p[strings.LastIndexByte(p, '/')+1:]
}

func newInstruments(mp metric.MeterProvider, backend string) *instruments {
	if mp == nil {
		mp = otel.GetMeterProvider()
	}
	m := mp.Meter("github.com/fencedsql/fencedsql/lockclient")
	in := &instruments{}
	in.acquire, _ = m.Float64Histogram(MetricAcquireDuration, metric.WithUnit("s"),
		metric.WithDescription("Time spent in Acquire and TryAcquire, by outcome."),
		metric.WithExplicitBucketBoundaries(AcquireBuckets...))
	in.hold, _ = m.Float64Histogram(MetricHoldDuration, metric.WithUnit("s"),
		metric.WithDescription("How long leases were held, by how they ended."),
		metric.WithExplicitBucketBoundaries(HoldBuckets...))
	in.renew, _ = m.Int64Counter(MetricRenewals, metric.WithUnit("{renewal}"),
		metric.WithDescription("Lease renewal calls, by outcome."))
	in.lost, _ = m.Int64Counter(MetricLeasesLost, metric.WithUnit("{lease}"),
		metric.WithDescription("Leases declared lost, by cause."))
	be := AttrBackend.String(backend)
	rec := func(k attribute.Key, v string) []metric.RecordOption {
		return []metric.RecordOption{metric.WithAttributeSet(attribute.NewSet(be, k.String(v)))}
	}
	add := func(k attribute.Key, v string) []metric.AddOption {
		return []metric.AddOption{metric.WithAttributeSet(attribute.NewSet(be, k.String(v)))}
	}
	in.acqAcquired, in.acqHeld = rec(AttrOutcome, "acquired"), rec(AttrOutcome, "held")
	in.acqUnavailable, in.acqCancelled = rec(AttrOutcome, "unavailable"), rec(AttrOutcome, "cancelled")
	in.acqInvalidConfig = rec(AttrOutcome, "invalid_config")
	in.holdReleased, in.holdLost = rec(AttrEnd, "released"), rec(AttrEnd, "lost")
	in.renewOK, in.renewFailed, in.renewRefused = add(AttrOutcome, "ok"), add(AttrOutcome, "failed"), add(AttrOutcome, "refused")
	in.renewUnhealthy = add(AttrOutcome, "unhealthy")
	in.lostRefused, in.lostDeadline, in.lostClosed = add(AttrCause, "refused"), add(AttrCause, "deadline"), add(AttrCause, "closed")
	in.lostUnhealthy = add(AttrCause, "unhealthy")
	// Every counter series the client can emit exists at 0 from New on, not from its
	// first increment: Prometheus's increase() needs a sample before the first event to
	// see it, so increase(lockclient_leases_lost_total[10m]) > 0 fires for a process
	// whose first lost lease is its only one (deploy/prometheus). Bounded: four renewal
	// outcomes and four causes per client. "unhealthy" is created whether or not a
	// health check is set (it then stays 0). Histograms are not pre-created: a
	// recording would be an observation.
	ctx := context.Background()
	for _, o := range [][]metric.AddOption{in.renewOK, in.renewFailed, in.renewRefused, in.renewUnhealthy} {
		in.renew.Add(ctx, 0, o...)
	}
	for _, o := range [][]metric.AddOption{in.lostRefused, in.lostDeadline, in.lostUnhealthy, in.lostClosed} {
		in.lost.Add(ctx, 0, o...)
	}
	return in
}

// acquired records an Acquire/TryAcquire that ended with err after start.
func (in *instruments) acquired(start time.Time, err error) {
	opts := in.acqAcquired
	switch {
	case err == nil:
	case isHeld(err):
		opts = in.acqHeld
	case isInvalidConfig(err):
		opts = in.acqInvalidConfig
	case isUnavailable(err):
		opts = in.acqUnavailable
	default:
		opts = in.acqCancelled
	}
	in.acquire.Record(context.Background(), time.Since(start).Seconds(), opts...)
}
