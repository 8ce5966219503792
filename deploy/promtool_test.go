package deploy

import (
	"os"
	"os/exec"
	"regexp"
	"strings"
	"testing"

	yaml "go.yaml.in/yaml/v2"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

const (
	rulesPath     = "prometheus/fencedsql-alerts.yml"
	rulesTestPath = "prometheus/fencedsql-alerts_test.yml"
)

// promtool returns the path of promtool (Debian's prometheus package; scripts/servers.sh
// installs it when run as root). Without it the test is skipped, or fails under
// FENCEDSQL_REQUIRE_SERVERS=1 (scripts/test.sh, CI).
func promtool(t *testing.T) string {
	t.Helper()
	p, err := exec.LookPath("promtool")
	if err == nil {
		return p
	}
	if testdb.RequireServers() {
		t.Fatalf("promtool not on PATH but %s=1: the alerting rules cannot be checked (install Debian's prometheus package, or source scripts/servers.sh as root)",
			testdb.EnvRequireServers)
	}
	t.Skip("promtool not on PATH (Debian's prometheus package; scripts/servers.sh installs it as root): promtool check rules / test rules skipped")
	return ""
}

func runPromtool(t *testing.T, args ...string) {
	t.Helper()
	cmd := exec.Command(promtool(t), args...)
	out, err := cmd.CombinedOutput()
	if err != nil {
		t.Fatalf("promtool %s: %v\n%s", strings.Join(args, " "), err, out)
	}
	t.Logf("promtool %s:\n%s", strings.Join(args, " "), out)
}

// promtool check rules: the rules file is what Prometheus loads.
func TestPromtoolCheckRules(t *testing.T) {
	runPromtool(t, "check", "rules", rulesPath)
}

// promtool test rules: the unit tests of the rules (fencedsql-alerts_test.yml) pass —
// among them each critical alert firing for a process whose first event is its only
// one, on a series created at 0 and on one that appears at its first increment.
func TestPromtoolTestRules(t *testing.T) {
	runPromtool(t, "test", "rules", rulesTestPath)
}

type promTests struct {
	RuleFiles []string `yaml:"rule_files"`
	Tests     []struct {
		InputSeries []struct {
			Series string `yaml:"series"`
			Values string `yaml:"values"`
		} `yaml:"input_series"`
		AlertRuleTest []struct {
			EvalTime  string `yaml:"eval_time"`
			Alertname string `yaml:"alertname"`
			ExpAlerts []struct {
				ExpLabels map[string]string `yaml:"exp_labels"`
			} `yaml:"exp_alerts"`
		} `yaml:"alert_rule_test"`
	} `yaml:"tests"`
}

var seriesLabelRE = regexp.MustCompile(`([a-zA-Z_][a-zA-Z0-9_]*)="([^"]*)"`)

// The rules' unit tests cover what they are for: every expected alert carries job and
// instance, and each critical alert (and LockLeasesLost) is expected to fire both for
// a series that existed at 0 before the event (values starting "0") and for one that
// appears at its first increment (values starting "_": no earlier sample). This holds
// without promtool; promtool then proves the expectations.
func TestRulesTestsCoverFirstEvent(t *testing.T) {
	raw, err := os.ReadFile(rulesPath)
	if err != nil {
		t.Fatal(err)
	}
	var rf rulesFile
	if err := yaml.UnmarshalStrict(raw, &rf); err != nil {
		t.Fatal(err)
	}
	required := map[string][]string{} // alert → the metrics its expression reads
	for _, g := range rf.Groups {
		for _, r := range g.Rules {
			if r.Labels["severity"] == "critical" || r.Alert == "LockLeasesLost" {
				required[r.Alert] = metricRE.FindAllString(r.Expr, -1)
			}
		}
	}
	if len(required) < 3 {
		t.Fatalf("expected FencedWriteRejected, LockServiceUnavailable and LockLeasesLost among the rules, got %v", required)
	}

	raw, err = os.ReadFile(rulesTestPath)
	if err != nil {
		t.Fatal(err)
	}
	var pt promTests
	if err := yaml.Unmarshal(raw, &pt); err != nil {
		t.Fatal(err)
	}
	if len(pt.RuleFiles) != 1 || pt.RuleFiles[0] != "fencedsql-alerts.yml" {
		t.Errorf("rule_files = %v, want [fencedsql-alerts.yml]", pt.RuleFiles)
	}
	covered := map[string]map[string]bool{} // alert → "zero" / "first" → seen
	for i, tg := range pt.Tests {
		for _, at := range tg.AlertRuleTest {
			for _, ea := range at.ExpAlerts {
				job, inst := ea.ExpLabels["job"], ea.ExpLabels["instance"]
				if job == "" || inst == "" {
					t.Errorf("test %d, %s at %s: expected alert %v lacks job or instance", i, at.Alertname, at.EvalTime, ea.ExpLabels)
					continue
				}
				metrics, ok := required[at.Alertname]
				if !ok {
					continue
				}
				for _, in := range tg.InputSeries {
					name, _, _ := strings.Cut(in.Series, "{")
					labels := map[string]string{}
					for _, m := range seriesLabelRE.FindAllStringSubmatch(in.Series, -1) {
						labels[m[1]] = m[2]
					}
					if !containsStr(metrics, name) || labels["job"] != job || labels["instance"] != inst {
						continue
					}
					for k, v := range ea.ExpLabels {
						if lv, ok := labels[k]; ok && lv != v {
							goto next
						}
					}
					if covered[at.Alertname] == nil {
						covered[at.Alertname] = map[string]bool{}
					}
					switch v := strings.TrimSpace(in.Values); {
					case strings.HasPrefix(v, "_"):
						covered[at.Alertname]["first"] = true
					case strings.HasPrefix(v, "0"):
						covered[at.Alertname]["zero"] = true
					}
				next:
				}
			}
		}
	}
	for alert := range required {
		if !covered[alert]["zero"] {
			t.Errorf("%s: no test expects it to fire on a series that starts at 0 (values '0x… 1x…')", alert)
		}
		if !covered[alert]["first"] {
			t.Errorf("%s: no test expects it to fire on a series that appears at its first increment (values '_x… 1x…')", alert)
		}
	}
}

func containsStr(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}
