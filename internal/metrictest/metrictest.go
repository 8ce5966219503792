// Package metrictest reads OpenTelemetry metrics in tests through the SDK's manual
// reader.
package metrictest

import (
	"context"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"
)

// Reader is a MeterProvider with a manual reader.
type Reader struct {
	*sdkmetric.MeterProvider
	r *sdkmetric.ManualReader
}

// New returns a provider whose metrics the test collects on demand.
func New(t testing.TB) *Reader {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	t.Cleanup(func() { mp.Shutdown(context.Background()) })
	return &Reader{MeterProvider: mp, r: r}
}

// Sum returns the total of counter name over data points whose attributes include
// every attrs pair (all points when attrs is empty).
func (r *Reader) Sum(t testing.TB, name string, attrs ...attribute.KeyValue) int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	var total int64
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if m.Name != name {
				continue
			}
			switch d := m.Data.(type) {
			case metricdata.Sum[int64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes, attrs) {
						total += p.Value
					}
				}
			case metricdata.Histogram[float64]:
				for _, p := range d.DataPoints {
					if match(p.Attributes, attrs) {
						total += int64(p.Count)
					}
				}
			default:
				t.Fatalf("metric %s has unexpected type %T", name, m.Data)
			}
		}
	}
	return total
}

// Histogram returns the count and sum of histogram name over matching points.
func (r *Reader) Histogram(t testing.TB, name string, attrs ...attribute.KeyValue) (count uint64, sum float64) {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if h, ok := m.Data.(metricdata.Histogram[float64]); ok && m.Name == name {
				for _, p := range h.DataPoints {
					if match(p.Attributes, attrs) {
						count += p.Count
						sum += p.Sum
					}
				}
			}
		}
	}
	return count, sum
}

func match(set attribute.Set, attrs []attribute.KeyValue) bool {
	for _, kv := range attrs {
		v, ok := set.Value(kv.Key)
		if !ok || v != kv.Value {
			return false
		}
	}
	return true
}
