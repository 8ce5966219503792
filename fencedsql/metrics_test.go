package fencedsql_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"

	"go.opentelemetry.io/otel/attribute"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	"go.opentelemetry.io/otel/sdk/metric/metricdata"

	"github.com/fencedsql/fencedsql/dialects/postgres"
	"github.com/fencedsql/fencedsql/fencedsql"
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
					out[m.Name+seriesLabels(p.Attributes)] = p.Value
				}
			}
		}
	}
	return out
}

func seriesLabels(s attribute.Set) string {
	var kv []string
	for _, a := range s.ToSlice() {
		kv = append(kv, string(a.Key)+"="+a.Value.Emit())
	}
	return "{" + strings.Join(kv, ",") + "}"
}

// Every counter series a pool can emit for its guarded tables exists at 0 once the pool
// is opened, before any statement: Prometheus's increase() then sees a process's first
// rejection (deploy/prometheus/fencedsql-alerts_test.yml). The first increment lands on
// the same series (same attribute set), not on a new one.
func TestMetricSeriesExistAtZero(t *testing.T) {
	r := sdkmetric.NewManualReader()
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(r))
	defer mp.Shutdown(context.Background())
	db, mock := newMockDB(t, postgres.Dialect, fencedsql.Guard("billing.invoices"), fencedsql.WithMeterProvider(mp))

	got := counterPoints(t, r)
	var want []string
	for _, tbl := range []string{"accounts", "billing.invoices"} {
		for _, m := range []string{fencedsql.MetricFencedRejections, fencedsql.MetricVersionConflicts, fencedsql.MetricNoToken,
			fencedsql.MetricUnsupported, fencedsql.MetricUniqueViolations} {
			want = append(want, m+"{db.collection.name="+tbl+",db.system.name=postgresql}")
		}
	}
	want = append(want,
		fencedsql.MetricUnsupported+"{db.system.name=postgresql}",
		fencedsql.MetricRewriteCache+"{db.system.name=postgresql,fencedsql.cache.result=hit}",
		fencedsql.MetricRewriteCache+"{db.system.name=postgresql,fencedsql.cache.result=miss}")
	slices.Sort(want)
	keys := make([]string, 0, len(got))
	for k, v := range got {
		keys = append(keys, k)
		if v != 0 {
			t.Errorf("%s = %d before any statement, want 0", k, v)
		}
	}
	slices.Sort(keys)
	if !slices.Equal(keys, want) {
		t.Errorf("series at open:\n got  %q\n want %q", keys, want)
	}

	// A tokenless write: the pre-created series counts it, no second series appears.
	if _, err := db.ExecContext(context.Background(), `UPDATE accounts SET balance = 1 WHERE id = 1`); !errors.Is(err, fencedsql.ErrNoToken) {
		t.Fatalf("tokenless write: %v", err)
	}
	mockMet(t, mock)
	after := counterPoints(t, r)
	if k := fencedsql.MetricNoToken + "{db.collection.name=accounts,db.system.name=postgresql}"; after[k] != 1 {
		t.Errorf("%s = %d, want 1", k, after[k])
	}
	for k := range after {
		if _, ok := got[k]; !ok {
			t.Errorf("new series %s after the first event: its attributes differ from the pre-created ones", k)
		}
	}
}
