package deploy

import (
	"context"
	"database/sql"
	"database/sql/driver"
	"encoding/json"
	"errors"
	"os"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/prometheus/client_golang/prometheus"
	otelprom "go.opentelemetry.io/otel/exporters/prometheus"
	sdkmetric "go.opentelemetry.io/otel/sdk/metric"
	yaml "go.yaml.in/yaml/v2"
	moderncsqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/memlock"
)

// metricConstants are the metric name constants of the code: every one must be
// exposed, and the rules and dashboard may use no other.
var metricConstants = []string{
	fencedsql.MetricFencedRejections, fencedsql.MetricVersionConflicts, fencedsql.MetricNoToken,
	fencedsql.MetricUnsupported, fencedsql.MetricUniqueViolations, fencedsql.MetricRewriteCache,
	fencedsql.MetricGuardedWriteDuration,
	lockclient.MetricAcquireDuration, lockclient.MetricHoldDuration, lockclient.MetricRenewals,
	lockclient.MetricLeasesLost,
}

// family is one exposed metric family: its type and label names.
type family struct {
	typ    string
	labels map[string]bool
}

// exposed drives every instrument of fencedsql and lockclient once, through the same
// exporter the drill serves /metrics with, and returns the families Prometheus would
// scrape, by name.
func exposed(t *testing.T) map[string]family {
	t.Helper()
	reg := prometheus.NewRegistry()
	exp, err := otelprom.New(otelprom.WithRegisterer(reg))
	if err != nil {
		t.Fatal(err)
	}
	mp := sdkmetric.NewMeterProvider(sdkmetric.WithReader(exp))
	defer mp.Shutdown(context.Background())
	ctx := context.Background()

	// lockclient: an acquisition, one that finds the key held, renewals, a lost lease,
	// a hold.
	svc := memlock.New()
	ttl := 2 * time.Second
	opts := []lockclient.Option{lockclient.WithTTL(ttl), lockclient.WithRenewInterval(20 * time.Millisecond), lockclient.WithMeterProvider(mp)}
	a := lockclient.New(svc, append(opts, lockclient.WithOwner("a"))...)
	defer a.Close(ctx)
	b := lockclient.New(svc, append(opts, lockclient.WithOwner("b"))...)
	defer b.Close(ctx)
	la, err := a.Acquire(ctx, "k")
	if err != nil {
		t.Fatal(err)
	}
	if _, err := b.TryAcquire(ctx, "k"); !errors.Is(err, lockclient.ErrHeld) {
		t.Fatalf("TryAcquire: %v", err)
	}
	time.Sleep(100 * time.Millisecond) // renewals
	svc.Advance(ttl)
	select {
	case <-la.Lost():
	case <-time.After(5 * time.Second):
		t.Fatal("lease not lost")
	}
	_ = la.Release(ctx)

	// fencedsql: each outcome once.
	d := fencedsql.Wrap(&moderncsqlite.Driver{}, fencedsql.WithDialect(sqlite.Dialect), fencedsql.Guard("accounts"),
		fencedsql.WithDDL(true), fencedsql.WithMeterProvider(mp))
	conn, err := d.(driver.DriverContext).OpenConnector("file:" + t.TempDir() + "/m.db")
	if err != nil {
		t.Fatal(err)
	}
	db := sql.OpenDB(conn)
	defer db.Close()
	tok := func(n uint64) context.Context { return fencedsql.WithToken(ctx, n) }
	steps := []struct {
		ctx  context.Context
		sql  string
		want error
	}{
		{ctx, `CREATE TABLE accounts (id INTEGER PRIMARY KEY, name TEXT UNIQUE, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`, nil},
		{tok(5), `INSERT INTO accounts (id, name) VALUES (1, 'a')`, nil},
		{tok(4), `UPDATE accounts SET name = 'b' WHERE id = 1`, fencedsql.ErrFenced},
		{fencedsql.ExpectVersion(tok(5), 99), `UPDATE accounts SET name = 'b' WHERE id = 1`, fencedsql.ErrVersionConflict},
		{ctx, `INSERT INTO accounts (id, name) VALUES (2, 'c')`, fencedsql.ErrNoToken},
		{tok(5), `UPDATE accounts SET name = 'x'; UPDATE accounts SET name = 'y'`, fencedsql.ErrUnsupported},
		{tok(5), `INSERT INTO accounts (id, name) VALUES (3, 'a')`, fencedsql.ErrDuplicate},
	}
	for _, s := range steps {
		if _, err := db.ExecContext(s.ctx, s.sql); !errors.Is(err, s.want) && !(s.want == nil && err == nil) {
			t.Fatalf("%s: %v, want %v", s.sql, err, s.want)
		}
	}

	mfs, err := reg.Gather()
	if err != nil {
		t.Fatal(err)
	}
	out := map[string]family{}
	for _, mf := range mfs {
		f := family{typ: strings.ToLower(mf.GetType().String()), labels: map[string]bool{}}
		for _, m := range mf.GetMetric() {
			for _, l := range m.GetLabel() {
				f.labels[l.GetName()] = true
			}
		}
		out[mf.GetName()] = f
	}
	return out
}

// series returns the names a family's samples are exposed under.
func series(name string, f family) []string {
	if f.typ == "histogram" {
		return []string{name + "_bucket", name + "_sum", name + "_count"}
	}
	return []string{name}
}

// targetLabels are the labels Prometheus adds to every scraped series: which job
// and which process (the pod that was paused).
var targetLabels = map[string]bool{"job": true, "instance": true}

var (
	metricRE   = regexp.MustCompile(`\b(?:fencedsql|lockclient)_[a-z0-9_]+\b`)
	selectorRE = regexp.MustCompile(`\b((?:fencedsql|lockclient)_[a-z0-9_]+)\{([^}]*)\}`)
	matcherRE  = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)\s*(?:=~|!~|!=|=)\s*"`)
	byRE       = regexp.MustCompile(`\b(?:by|without)\s*\(([^)]*)\)`)
	legendRE   = regexp.MustCompile(`\{\{\s*\$?(?:labels\.)?([a-zA-Z_][a-zA-Z0-9_]*)\s*\}\}`)
)

// checkExpr checks one PromQL expression: balanced brackets, at least one metric, every
// metric exposed, every label it matches on or groups by carried by its metrics.
// legends are templates ({{label}} or {{ $labels.label }}) that may only name those
// labels too.
func checkExpr(t *testing.T, where, expr string, fams map[string]family, legends ...string) {
	t.Helper()
	stack := []rune{}
	pairs := map[rune]rune{')': '(', ']': '[', '}': '{'}
	inStr := false
	for _, r := range expr {
		switch {
		case r == '"':
			inStr = !inStr
		case inStr:
		case r == '(' || r == '[' || r == '{':
			stack = append(stack, r)
		case pairs[r] != 0:
			if len(stack) == 0 || stack[len(stack)-1] != pairs[r] {
				t.Errorf("%s: unbalanced %q in %s", where, r, expr)
				return
			}
			stack = stack[:len(stack)-1]
		}
	}
	if len(stack) != 0 || inStr {
		t.Errorf("%s: unbalanced brackets or quotes in %s", where, expr)
	}
	known := map[string]family{}
	for name, f := range fams {
		for _, s := range series(name, f) {
			known[s] = f
		}
	}
	// le: histogram buckets; job and instance: the target labels Prometheus adds at
	// scrape time (which process).
	labels := map[string]bool{"le": true, "job": true, "instance": true}
	// Label names (in matchers and groupings) may start like metric names: leave them out.
	bare := byRE.ReplaceAllString(regexp.MustCompile(`\{[^}]*\}`).ReplaceAllString(expr, "{}"), "")
	used := metricRE.FindAllString(bare, -1)
	if len(used) == 0 {
		t.Errorf("%s: no fencedsql/lockclient metric in %s", where, expr)
	}
	for _, m := range used {
		f, ok := known[m]
		if !ok {
			t.Errorf("%s: metric %s is not exposed by the code (exposed: %v)", where, m, slices.Sorted(func(yield func(string) bool) {
				for k := range known {
					if !yield(k) {
						return
					}
				}
			}))
			continue
		}
		for l := range f.labels {
			labels[l] = true
		}
	}
	for _, sel := range selectorRE.FindAllStringSubmatch(expr, -1) {
		f := known[sel[1]]
		for _, mm := range matcherRE.FindAllStringSubmatch(sel[2], -1) {
			if !f.labels[mm[1]] && !targetLabels[mm[1]] && mm[1] != "le" {
				t.Errorf("%s: %s has no label %s", where, sel[1], mm[1])
			}
		}
	}
	for _, by := range byRE.FindAllStringSubmatch(expr, -1) {
		for l := range strings.SplitSeq(by[1], ",") {
			if l = strings.TrimSpace(l); l != "" && !labels[l] {
				t.Errorf("%s: grouping by %s, a label none of its metrics has", where, l)
			}
		}
	}
	for _, lg := range legends {
		for _, m := range legendRE.FindAllStringSubmatch(lg, -1) {
			if !labels[m[1]] && m[1] != "value" {
				t.Errorf("%s: template %q names label %s, which its metrics lack", where, lg, m[1])
			}
		}
	}
}

func TestMetricNamesExposed(t *testing.T) {
	fams := exposed(t)
	for _, c := range metricConstants {
		base := strings.ReplaceAll(c, ".", "_")
		found := false
		for _, n := range []string{base, base + "_total", base + "_seconds"} {
			if _, ok := fams[n]; ok {
				found = true
			}
		}
		if !found {
			t.Errorf("metric constant %s is not exposed as %s[_total|_seconds]", c, base)
		}
	}
}

type rulesFile struct {
	Groups []struct {
		Name  string `yaml:"name"`
		Rules []struct {
			Alert       string            `yaml:"alert"`
			Record      string            `yaml:"record"`
			Expr        string            `yaml:"expr"`
			For         string            `yaml:"for"`
			Labels      map[string]string `yaml:"labels"`
			Annotations map[string]string `yaml:"annotations"`
		} `yaml:"rules"`
	} `yaml:"groups"`
}

// The alerting rules parse, have what Alertmanager routes and people read, and use
// only metrics and labels the code exports. The four conditions the issue names are
// covered.
func TestAlertRules(t *testing.T) {
	fams := exposed(t)
	raw, err := os.ReadFile("prometheus/fencedsql-alerts.yml")
	if err != nil {
		t.Fatal(err)
	}
	var rf rulesFile
	if err := yaml.UnmarshalStrict(raw, &rf); err != nil {
		t.Fatalf("rules file: %v", err)
	}
	alerts := map[string]string{}
	for _, g := range rf.Groups {
		if g.Name == "" || len(g.Rules) == 0 {
			t.Errorf("group %q: a name and rules are required", g.Name)
		}
		for _, r := range g.Rules {
			where := g.Name + "/" + r.Alert
			if r.Alert == "" || r.Record != "" {
				t.Errorf("%s: only alerting rules are expected here", where)
			}
			if _, dup := alerts[r.Alert]; dup {
				t.Errorf("%s: duplicate alert name", where)
			}
			alerts[r.Alert] = r.Expr
			if r.For != "" {
				if _, err := time.ParseDuration(r.For); err != nil {
					t.Errorf("%s: for %q: %v", where, r.For, err)
				}
			}
			if !slices.Contains([]string{"critical", "warning", "info"}, r.Labels["severity"]) {
				t.Errorf("%s: severity %q", where, r.Labels["severity"])
			}
			if r.Annotations["summary"] == "" || r.Annotations["description"] == "" {
				t.Errorf("%s: summary and description annotations are required", where)
			}
			checkExpr(t, where, r.Expr, fams, r.Annotations["summary"], r.Annotations["description"])
			checkKeepsTarget(t, where, r.Expr)
			if !strings.Contains(r.Annotations["summary"], "$labels.instance") {
				t.Errorf("%s: the summary must name the instance ({{ $labels.instance }})", where)
			}
		}
	}
	for alert, metric := range map[string]string{
		"FencedWriteRejected":    "fencedsql_fenced_rejections_total",
		"LockLeasesLost":         "lockclient_leases_lost_total",
		"LockRenewalFailures":    "lockclient_renewals_total",
		"LockServiceUnavailable": `lock_outcome="unavailable"`,
	} {
		if !strings.Contains(alerts[alert], metric) {
			t.Errorf("alert %s missing or not on %s", alert, metric)
		}
	}
}

type panel struct {
	ID         int    `json:"id"`
	Type       string `json:"type"`
	Title      string `json:"title"`
	Datasource *struct {
		Type string `json:"type"`
	} `json:"datasource"`
	Targets []struct {
		RefID        string `json:"refId"`
		Expr         string `json:"expr"`
		LegendFormat string `json:"legendFormat"`
		Instant      bool   `json:"instant"`
	} `json:"targets"`
	Panels []panel `json:"panels"`
}

// The dashboard is valid JSON with a uid, unique panel ids, Prometheus targets, and
// uses only metrics and labels the code exports; every metric constant is on it.
func TestDashboard(t *testing.T) {
	fams := exposed(t)
	raw, err := os.ReadFile("grafana/fencedsql-dashboard.json")
	if err != nil {
		t.Fatal(err)
	}
	var d struct {
		UID           string  `json:"uid"`
		Title         string  `json:"title"`
		SchemaVersion int     `json:"schemaVersion"`
		Panels        []panel `json:"panels"`
		Templating    struct {
			List []struct {
				Name       string          `json:"name"`
				Type       string          `json:"type"`
				IncludeAll bool            `json:"includeAll"`
				AllValue   string          `json:"allValue"`
				Query      json.RawMessage `json:"query"` // a string, or {query, refId}
			} `json:"list"`
		} `json:"templating"`
	}
	if err := json.Unmarshal(raw, &d); err != nil {
		t.Fatalf("dashboard: %v", err)
	}
	if d.UID == "" || d.Title == "" || d.SchemaVersion == 0 {
		t.Errorf("uid %q, title %q, schemaVersion %d: all are required", d.UID, d.Title, d.SchemaVersion)
	}
	// job and instance variables (which process), All meaning every value.
	vars := map[string]bool{}
	for _, v := range d.Templating.List {
		vars[v.Name] = true
		if targetLabels[v.Name] {
			if v.Type != "query" || !v.IncludeAll || v.AllValue != ".*" || !strings.Contains(string(v.Query), "label_values(") {
				t.Errorf("variable %s: want a label_values query variable with All = .*", v.Name)
			}
		}
	}
	for l := range targetLabels {
		if !vars[l] {
			t.Errorf("no %s template variable", l)
		}
	}
	// Panels showing refusals: over the selected range, as one value.
	overRange := map[string]bool{}
	ids := map[int]bool{}
	var all strings.Builder
	var walk func([]panel)
	walk = func(ps []panel) {
		for _, p := range ps {
			if ids[p.ID] {
				t.Errorf("panel id %d used twice", p.ID)
			}
			ids[p.ID] = true
			walk(p.Panels)
			if p.Type == "row" {
				continue
			}
			if len(p.Targets) == 0 || p.Datasource == nil || p.Datasource.Type != "prometheus" {
				t.Errorf("panel %q: Prometheus targets are required", p.Title)
			}
			for _, tg := range p.Targets {
				where := "panel " + p.Title + "/" + tg.RefID
				checkExpr(t, where, tg.Expr, fams, tg.LegendFormat)
				checkScoped(t, where, tg.Expr, fams)
				all.WriteString(tg.Expr + "\n")
				if p.Type == "stat" || p.Type == "bargauge" || p.Type == "gauge" {
					// A stat of a rate reads 0 an hour after the event: show the
					// selected range's total.
					if !tg.Instant || !strings.Contains(tg.Expr, "[$__range]") || strings.Contains(tg.Expr, "$__rate_interval") {
						t.Errorf("%s: a single-value panel must be an instant query over [$__range]: %s", where, tg.Expr)
					}
					for _, m := range metricRE.FindAllString(tg.Expr, -1) {
						overRange[m] = true
					}
				}
			}
		}
	}
	walk(d.Panels)
	for _, m := range []string{"fencedsql_fenced_rejections_total", "fencedsql_no_token_total", "fencedsql_unsupported_total", "lockclient_leases_lost_total"} {
		if !overRange[m] {
			t.Errorf("no single-value panel shows %s over the selected range", m)
		}
	}
	for _, c := range metricConstants {
		if !strings.Contains(all.String(), strings.ReplaceAll(c, ".", "_")) {
			t.Errorf("no panel shows %s", c)
		}
	}
}

var (
	aggRE     = regexp.MustCompile(`\b(sum|avg|min|max|count|group|stddev|stdvar|topk|bottomk|quantile|count_values)\s*(by|without)?\s*(?:\(([^()]*)\)\s*)?\(`)
	scopedRE  = regexp.MustCompile(`\b((?:fencedsql|lockclient)_[a-z0-9_]+)(\{[^}]*\})?`)
	jobVarRE  = regexp.MustCompile(`\bjob\s*=~\s*"\$job"`)
	instVarRE = regexp.MustCompile(`\binstance\s*=~\s*"\$instance"`)
)

// checkKeepsTarget fails an alert expression whose aggregations drop job or
// instance: the alert must say which process (the pod that was paused).
func checkKeepsTarget(t *testing.T, where, expr string) {
	t.Helper()
	n := 0
	for _, m := range aggRE.FindAllStringSubmatch(expr, -1) {
		n++
		var list []string
		for l := range strings.SplitSeq(m[3], ",") {
			list = append(list, strings.TrimSpace(l))
		}
		switch m[2] {
		case "by":
			if !slices.Contains(list, "job") || !slices.Contains(list, "instance") {
				t.Errorf("%s: %s by (%s) drops job or instance", where, m[1], m[3])
			}
		case "without":
			if slices.Contains(list, "job") || slices.Contains(list, "instance") {
				t.Errorf("%s: %s without (%s) drops job or instance", where, m[1], m[3])
			}
		default:
			t.Errorf("%s: %s( … ) without by (job, instance, …) drops which process it was", where, m[1])
		}
	}
	if n == 0 && !strings.Contains(expr, "job") {
		t.Errorf("%s: no aggregation keeps job and instance", where)
	}
}

// checkScoped fails a dashboard expression with a metric selector not narrowed to the
// $job and $instance variables.
func checkScoped(t *testing.T, where, expr string, fams map[string]family) {
	t.Helper()
	known := map[string]bool{}
	for name, f := range fams {
		for _, s := range series(name, f) {
			known[s] = true
		}
	}
	for _, m := range scopedRE.FindAllStringSubmatch(expr, -1) {
		if !known[m[1]] {
			continue // a label such as fencedsql_outcome
		}
		if !jobVarRE.MatchString(m[2]) || !instVarRE.MatchString(m[2]) {
			t.Errorf("%s: %s%s is not narrowed to job=~\"$job\", instance=~\"$instance\"", where, m[1], m[2])
		}
	}
}
