package main

import (
	"context"
	"errors"
	"fmt"
	"net"
	"net/http"
	"strings"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	"github.com/prometheus/client_golang/prometheus/promhttp"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// promFencedRejections is the Prometheus name the OpenTelemetry exporter gives
// fencedsql.MetricFencedRejections ("fencedsql.fenced_rejections"): dots become
// underscores and a counter gets the _total suffix (its unit, "{write}", is an
// annotation and adds no suffix).
const promFencedRejections = "fencedsql_fenced_rejections_total"

// metricsServer exposes the fenced run's metrics (lock client and fencedsql) on a
// Prometheus endpoint: an OpenTelemetry MeterProvider whose reader is the Prometheus
// exporter, registered on a registry of its own, served by promhttp.
type metricsServer struct {
	provider *sdkmetric.MeterProvider
	registry *prometheus.Registry
	ln       net.Listener
	srv      *http.Server
	served   chan error
}

// startMetrics listens on addr (host:port; port 0 picks a free one) and serves the
// metrics at /metrics (and /).
func startMetrics(addr string) (*metricsServer, error) {
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		return nil, fmt.Errorf("metrics exporter: %w", err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	ln, err := net.Listen("tcp", addr)
	if err != nil {
		_ = mp.Shutdown(context.Background())
		return nil, fmt.Errorf("-metrics %s: %w", addr, err)
	}
	h := promhttp.HandlerFor(reg, promhttp.HandlerOpts{})
	mux := http.NewServeMux()
	mux.Handle("/metrics", h)
	mux.Handle("/{$}", h)
	m := &metricsServer{
		provider: mp, registry: reg, ln: ln,
		srv:    &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second},
		served: make(chan error, 1),
	}
	go func() { m.served <- m.srv.Serve(ln) }()
	return m, nil
}

// Addr returns the address the server listens on (with the port it picked).
func (m *metricsServer) Addr() string { return m.ln.Addr().String() }

// URL returns the address of the metrics page.
func (m *metricsServer) URL() string { return "http://" + m.Addr() + "/metrics" }

// FencedRejections reads the fenced-rejection counter for table the way Prometheus
// would scrape it: through the registry the endpoint serves.
func (m *metricsServer) FencedRejections(table string) (int64, error) {
	families, err := m.registry.Gather()
	if err != nil {
		return 0, err
	}
	label := strings.ReplaceAll(string(fencedsql.AttrDBTable), ".", "_") // db_collection_name
	var total float64
	for _, f := range families {
		if f.GetName() != promFencedRejections {
			continue
		}
		for _, mt := range f.GetMetric() {
			for _, lp := range mt.GetLabel() {
				if lp.GetName() == label && lp.GetValue() == table {
					total += mt.GetCounter().GetValue()
				}
			}
		}
	}
	return int64(total), nil
}

// Close stops serving and shuts the provider down.
func (m *metricsServer) Close() error {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	err := m.srv.Shutdown(ctx)
	if serr := <-m.served; !errors.Is(serr, http.ErrServerClosed) {
		err = errors.Join(err, serr)
	}
	return errors.Join(err, m.provider.Shutdown(ctx))
}
