package lockclient_test

import (
	"context"
	"slices"
	"strings"
	"testing"
	"time"

	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// counterPoints collects every counter data point: "name{k=v,…}" → value.
func counterPoints(t *testing.T, r sdkmetric.Reader) map[string]int64 {
	t.Helper()
	var rm metricdata.ResourceMetrics
	if err := r.Collect(context.Background(), &rm); err != nil {
		t.Fatal(err)
	}
	out := map[string]int64{}
	for _, sm := range rm.ScopeMetrics {
		for _, m := range sm.Metrics {
			if s, ok := m.Data.(metricdata.Sum[int64]); ok {
				for _, p := range s.DataPoints {
					var kv []string
					for _, a := range p.Attributes.ToSlice() {
						kv = append(kv, string(a.Key)+"="+a.Value.Emit())
					}
					out[m.Name+"{"+strings.Join(kv, ",")+"}"] = p.Value
				}
			}
		}
	}
	return out
}

// Every counter series a client can emit exists at 0 from New on, before any call:
// Prometheus's increase() then sees a process's first lost lease
// (deploy/prometheus/fencedsql-alerts_test.yml). The first loss lands on the same series.
func TestMetricSeriesExistAtZero(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	svc := memlock.New()
	ttl := 2 * time.Second
	c := lockclient.New(svc, lockclient.WithTTL(ttl), lockclient.WithRenewInterval(20*time.Millisecond), lockclient.WithMeterProvider(mp))
	defer c.Close(context.Background())

	got := counterPoints(t, r)
	var want []string
	for _, o := range []string{"ok", "failed", "refused", "unhealthy"} {
		want = append(want, lockclient.MetricRenewals+"{lock.backend=memlock,lock.outcome="+o+"}")
	}
	for _, cause := range []string{"refused", "deadline", "unhealthy", "closed"} {
		want = append(want, lockclient.MetricLeasesLost+"{lock.backend=memlock,lock.cause="+cause+"}")
	}
	slices.Sort(want)
	keys := make([]string, 0, len(got))
	for k, v := range got {
		keys = append(keys, k)
		if v != 0 {
			t.Errorf("%s = %d before any call, want 0", k, v)
		}
	}
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Errorf("series at New:\n got  %q\n want %q", keys, want)
	}

	// One lost lease (the service's clock jumps past the TTL; the renewal is refused).
	ctx := context.Background()
	l, err := c.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	svc.Advance(ttl)
	select {
	case <-l.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("lease not lost")
	}
	after := counterPoints(t, r)
	if k := lockclient.MetricLeasesLost + "{lock.backend=memlock,lock.cause=refused}"; after[k] != 1 {
		t.Errorf("%s = %d, want 1", k, after[k])
	}
	for k := range after {
		if _, ok := got[k]; !ok {
			t.Errorf("new series %s after the first event: its attributes differ from the pre-created ones", k)
		}
	}
}
