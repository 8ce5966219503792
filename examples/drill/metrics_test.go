package main

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"
)

// TestDrillMetrics runs the command line with -metrics on a free loopback port, scrapes
// the Prometheus endpoint over HTTP after the fenced run while it is serving, and checks
// the fencing counter there against the drill's own count.
func TestDrillMetrics(t *testing.T) {
	t.Parallel()
	var addr, scrape string
	var scrapeErr error
	h := hooks{
		metricsListening: func(a string) { addr = a },
		afterRun: func(name string) {
			if name != "fenced" {
				return
			}
			client := &http.Client{Timeout: 10 * time.Second, Transport: &http.Transport{DisableKeepAlives: true}}
			resp, err := client.Get("http://" + addr + "/metrics")
			if err != nil {
				scrapeErr = err
				return
			}
			defer resp.Body.Close()
			body, err := io.ReadAll(resp.Body)
			if err == nil && resp.StatusCode != http.StatusOK {
				err = fmt.Errorf("HTTP %s", resp.Status)
			}
			scrape, scrapeErr = string(body), err
		},
	}
	var stdout, stderr bytes.Buffer
	args := []string{"-json", "-workers", "4", "-rounds", "10", "-ttl", "200ms", "-work", "1ms",
		"-pause-prob", "0.15", "-partition-prob", "0.05", "-seed", "6", "-metrics", "127.0.0.1:0"}
	code := realMainHooks(context.Background(), args, &stdout, &stderr, false, h)
	if code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	if !strings.HasPrefix(addr, "127.0.0.1:") || strings.HasSuffix(addr, ":0") {
		t.Fatalf("metrics address %q: want 127.0.0.1 and the port picked", addr)
	}
	if !strings.Contains(stderr.String(), "http://"+addr+"/metrics") {
		t.Errorf("stderr does not announce the endpoint: %q", stderr.String())
	}
	if scrapeErr != nil {
		t.Fatalf("scraping http://%s/metrics: %v", addr, scrapeErr)
	}
	var rep struct {
		Metrics string `json:"metrics_url"`
		Fenced  struct {
			FencedRejections int64  `json:"fenced_rejections"`
			Metric           *int64 `json:"metrics_fenced_rejections"`
		} `json:"fenced"`
		Unfenced map[string]any `json:"unfenced"`
	}
	if err := json.Unmarshal(stdout.Bytes(), &rep); err != nil {
		t.Fatalf("JSON: %v\n%s", err, stdout.String())
	}
	if _, ok := rep.Unfenced["metrics_fenced_rejections"]; ok {
		t.Errorf("the unfenced run reports a metric count")
	}
	if rep.Fenced.Metric == nil || *rep.Fenced.Metric != rep.Fenced.FencedRejections || rep.Fenced.FencedRejections <= 0 {
		t.Errorf("fenced_rejections %d, metrics_fenced_rejections %v: want equal and > 0", rep.Fenced.FencedRejections, rep.Fenced.Metric)
	}

	// The text exposition: fencedsql.fenced_rejections as a Prometheus counter.
	re := regexp.MustCompile(`(?m)^` + promFencedRejections + `\{([^}]*)\} (\S+)$`)
	var found bool
	for _, m := range re.FindAllStringSubmatch(scrape, -1) {
		if !strings.Contains(m[1], `db_collection_name="accounts"`) {
			continue
		}
		found = true
		t.Logf("scraped: %s", m[0])
		v, err := strconv.ParseFloat(m[2], 64)
		if err != nil || v <= 0 {
			t.Errorf("counter value %q, want > 0", m[2])
		}
		if int64(v) != rep.Fenced.FencedRejections {
			t.Errorf("scraped %v fenced rejections, the drill counted %d", v, rep.Fenced.FencedRejections)
		}
		if !strings.Contains(m[1], `db_system_name="sqlite"`) {
			t.Errorf("labels %s lack db_system_name=\"sqlite\"", m[1])
		}
	}
	if !found {
		t.Fatalf("no %s{db_collection_name=\"accounts\"} sample in the scrape:\n%s", promFencedRejections, scrape)
	}
	if !strings.Contains(scrape, "# TYPE "+promFencedRejections+" counter") {
		t.Errorf("%s is not exposed as a counter", promFencedRejections)
	}
	for _, name := range []string{"lockclient_leases_lost_total", "lockclient_acquire_duration_seconds"} {
		if !strings.Contains(scrape, name) {
			t.Errorf("scrape lacks the lock client's %s", name)
		}
	}
	checkSubSecondBuckets(t, scrape)
}

// checkSubSecondBuckets checks that the duration histograms in a scrape have
// second-scale buckets (issue 13): sub-second boundaries from 5ms, so that p50/p99 of
// acquisitions and holds can be read, instead of the SDK's default millisecond-scale
// boundaries (0, 5, 10, 25 … 10000) that put every acquisition in one bucket.
func checkSubSecondBuckets(t *testing.T, scrape string) {
	t.Helper()
	for _, h := range []struct {
		name string
		les  []string
	}{
		{"lockclient_acquire_duration_seconds", []string{"0.005", "0.01", "0.05", "0.1", "0.5", "1", "10"}},
		{"lockclient_hold_duration_seconds", []string{"0.005", "0.1", "0.5", "1", "10", "60", "3600"}},
		{"fencedsql_guarded_write_duration_seconds", []string{"0.005", "0.01", "0.1", "1", "10"}},
	} {
		if !strings.Contains(scrape, "# TYPE "+h.name+" histogram") {
			t.Errorf("%s is not exposed as a histogram", h.name)
			continue
		}
		for _, le := range h.les {
			re := regexp.MustCompile(`(?m)^` + h.name + `_bucket\{[^}]*le="` + regexp.QuoteMeta(le) + `"\} \d`)
			if !re.MatchString(scrape) {
				t.Errorf("%s has no le=%q bucket", h.name, le)
			}
		}
		if regexp.MustCompile(`(?m)^` + h.name + `_bucket\{[^}]*le="(25|250|10000)"\}`).MatchString(scrape) {
			t.Errorf("%s still has the SDK's default (millisecond-scale) boundaries", h.name)
		}
	}
	// The acquisitions do not all fall in one bucket: some took under 5ms, some waited.
	first := regexp.MustCompile(`(?m)^lockclient_acquire_duration_seconds_bucket\{[^}]*lock_outcome="acquired"[^}]*le="0.005"\} (\d+)`).FindStringSubmatch(scrape)
	total := regexp.MustCompile(`(?m)^lockclient_acquire_duration_seconds_count\{[^}]*lock_outcome="acquired"[^}]*\} (\d+)`).FindStringSubmatch(scrape)
	if first == nil || total == nil {
		t.Errorf("no acquired samples in the acquire histogram")
	} else {
		t.Logf("acquisitions: %s of %s under 5ms", first[1], total[1])
	}
}

func TestMetricsFlags(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	if code := realMain(context.Background(), []string{"-metrics-wait", "1s"}, &stdout, &stderr, false); code != exitUsage ||
		!strings.Contains(stderr.String(), "-metrics-wait needs -metrics") {
		t.Errorf("-metrics-wait alone: exit %d, stderr %q", code, stderr.String())
	}
	stderr.Reset()
	if code := realMain(context.Background(), []string{"-metrics", "256.0.0.1:bad"}, &stdout, &stderr, false); code != exitError ||
		!strings.Contains(stderr.String(), "-metrics") {
		t.Errorf("bad -metrics address: exit %d, stderr %q", code, stderr.String())
	}
}
