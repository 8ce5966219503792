// Package deploy holds the operators' kit for fencedsql, as files rather than code:
//
//   - prometheus/fencedsql-alerts.yml: Prometheus alerting rules (a fenced rejection
//     is a split brain that already happened; lost leases; renewal failures; an
//     unavailable lock service; …);
//   - grafana/fencedsql-dashboard.json: a Grafana dashboard of the same metrics.
//
// Its test parses both and checks that every metric and label they use is one the
// code exports, under the name the OpenTelemetry Prometheus exporter gives it (dots
// become underscores, seconds add _seconds, counters add _total).
package deploy
