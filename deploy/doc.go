// Package deploy holds the operators' kit for fencedsql, as files rather than code:
//
//   - prometheus/fencedsql-alerts.yml: Prometheus alerting rules (a fenced rejection
//     is a split brain that already happened; lost leases; renewal failures; an
//     unavailable lock service; …);
//   - grafana/fencedsql-dashboard.json: a Grafana dashboard of the same metrics.
//
// Its test parses both and checks that every metric and label they use is one the
// code exports, under the name the OpenTelemetry Prometheus exporter gives it (dots
// become underscores, seconds add _seconds, counters add _total), plus the target
// labels job and instance: every alert keeps them (which process: the pod that was
// paused), and every dashboard query is narrowed to the $job and $instance variables.
// Single-value panels show the selected range (increase over $__range).
//
// prometheus/fencedsql-alerts_test.yml holds promtool unit tests of the rules; the
// test runs `promtool check rules` and `promtool test rules` (promtool comes from
// Debian's prometheus package, which scripts/servers.sh installs when run as root;
// without it the test skips, or fails under FENCEDSQL_REQUIRE_SERVERS=1). They show
// each critical alert firing for a process whose first event is its only one, both on
// a series the library created at 0 (pool open, lock client creation) and on one that
// appears at its first increment; the rules file's header explains both branches.
package deploy
