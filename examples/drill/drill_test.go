package main

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"encoding/xml"
	"fmt"
	"io"
	"math/rand/v2"
	"net/http"
	"os"
	"path/filepath"
	"regexp"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/redis/go-redis/v9"

	"github.com/fencedsql/fencedsql/internal/etcdtest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMain checks for leaked goroutines like goleak.VerifyTestMain, but gives a stopped
// embedded etcd's peer connections the few seconds they take to end (see etcdtest).
func TestMain(m *testing.M) {
	etcdtest.VerifyTestMain(m)
}

// smallConfig is a drill of a few seconds: strong faults, few rounds.
func smallConfig() config {
	cfg := defaultConfig()
	cfg.Workers = 4
	cfg.Rounds = 10
	cfg.TTL = 200 * time.Millisecond
	cfg.Work = time.Millisecond
	cfg.PauseProb = 0.15
	cfg.PartitionProb = 0.05
	cfg.Seed = 1
	return cfg
}

func runDrill(t *testing.T, cfg config) report {
	t.Helper()
	var log bytes.Buffer
	cfg.Verbose, cfg.Log = true, &log
	ctx, cancel := context.WithTimeout(context.Background(), 2*time.Minute)
	defer cancel()
	rep, err := run(ctx, cfg)
	if testing.Verbose() || t.Failed() || err != nil {
		t.Logf("event log:\n%s", log.String())
	}
	if err != nil {
		t.Fatalf("run: %v", err)
	}
	checkReport(t, rep)
	return rep
}

// checkReport asserts what every drill must show.
func checkReport(t *testing.T, rep report) {
	t.Helper()
	u, f := rep.Unfenced, rep.Fenced
	t.Logf("unfenced: %+v", u)
	t.Logf("fenced:   %+v", f)
	t.Logf("verdict:  %s", rep.Verdict)
	if u.LostUpdates <= 0 {
		t.Errorf("unfenced run lost %d updates, want > 0 (the faults should break the lock alone)", u.LostUpdates)
	}
	if u.LostUpdates != u.Committed-u.FinalBalance {
		t.Errorf("unfenced lost_updates %d != committed %d - final_balance %d", u.LostUpdates, u.Committed, u.FinalBalance)
	}
	if f.LostUpdates != 0 || f.FinalBalance != f.Committed || !f.InvariantHolds {
		t.Errorf("fenced run: committed %d, final balance %d, lost %d: the invariant must hold", f.Committed, f.FinalBalance, f.LostUpdates)
	}
	if f.FencedRejections <= 0 {
		t.Errorf("fenced run: %d fenced rejections, want > 0", f.FencedRejections)
	}
	for _, r := range []runReport{u, f} {
		if r.OtherErrors != 0 {
			t.Errorf("%s run: %d unexpected errors, first: %s", r.Name, r.OtherErrors, r.FirstError)
		}
		faults := r.Pauses + r.Partitions
		if r.LateWrites != faults {
			t.Errorf("%s run: %d late writes after %d faults", r.Name, r.LateWrites, faults)
		}
		if r.LeasesLost < faults {
			t.Errorf("%s run: %d leases lost after %d faults", r.Name, r.LeasesLost, faults)
		}
		if want := int64(rep.Config.Workers * rep.Config.Rounds); r.Rounds != want {
			t.Errorf("%s run: %d rounds, want %d", r.Name, r.Rounds, want)
		}
	}
	if u.LateWrites != u.LateWritesCommitted {
		t.Errorf("unfenced run: only %d of %d late writes committed", u.LateWritesCommitted, u.LateWrites)
	}
	if f.FencedRejections+f.LateWritesCommitted+f.LeaseRefusals != f.LateWrites {
		t.Errorf("fenced run: %d late writes but %d fenced + %d committed + %d refused at commit",
			f.LateWrites, f.FencedRejections, f.LateWritesCommitted, f.LeaseRefusals)
	}
	// Same seed, same rounds: the same fault schedule in both runs.
	if u.Pauses != f.Pauses || u.Partitions != f.Partitions {
		t.Errorf("fault schedules differ: unfenced %d pauses/%d partitions, fenced %d/%d",
			u.Pauses, u.Partitions, f.Pauses, f.Partitions)
	}
	if !rep.OK || !strings.HasPrefix(rep.Verdict, "PASS") {
		t.Errorf("verdict: ok=%v %q", rep.OK, rep.Verdict)
	}
}

func TestDrillSQLite(t *testing.T) {
	t.Parallel()
	runDrill(t, smallConfig())
}

func TestDrillSQLiteBindLease(t *testing.T) {
	t.Parallel()
	cfg := smallConfig()
	cfg.Bind = "lease"
	cfg.Seed = 2
	runDrill(t, cfg)
}

// TestDrillJSON runs the command line with -json and checks the one object on stdout.
func TestDrillJSON(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	args := []string{"-json", "-workers", "4", "-rounds", "10", "-ttl", "200ms", "-work", "1ms",
		"-pause-prob", "0.15", "-partition-prob", "0.05", "-seed", "3"}
	code := realMain(context.Background(), args, &stdout, &stderr, false)
	if code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s\nstdout:\n%s", code, stderr.String(), stdout.String())
	}
	if stderr.Len() != 0 {
		t.Errorf("stderr not empty without -v: %q", stderr.String())
	}
	dec := json.NewDecoder(&stdout)
	var top map[string]json.RawMessage
	if err := dec.Decode(&top); err != nil {
		t.Fatalf("stdout is not a JSON object: %v\n%s", err, stdout.String())
	}
	if dec.More() {
		t.Fatalf("more than one JSON value on stdout")
	}
	var rest bytes.Buffer
	if _, err := rest.ReadFrom(dec.Buffered()); err != nil || strings.TrimSpace(rest.String()) != "" {
		t.Fatalf("trailing output after the JSON object: %q", rest.String())
	}
	required := []string{"committed", "final_balance", "lost_updates", "fenced_rejections", "leases_lost", "duration_ms", "late_writes"}
	sides := map[string]map[string]any{}
	for _, side := range []string{"unfenced", "fenced"} {
		raw, ok := top[side]
		if !ok {
			t.Fatalf("JSON lacks %q: %s", side, stdout.String())
		}
		var m map[string]any
		if err := json.Unmarshal(raw, &m); err != nil {
			t.Fatalf("%s: %v", side, err)
		}
		for _, k := range required {
			if _, ok := m[k].(float64); !ok {
				t.Errorf("%s.%s missing or not a number: %v", side, k, m[k])
			}
		}
		sides[side] = m
	}
	if v := sides["unfenced"]["lost_updates"].(float64); v <= 0 {
		t.Errorf("unfenced.lost_updates = %v, want > 0", v)
	}
	if v := sides["fenced"]["lost_updates"].(float64); v != 0 {
		t.Errorf("fenced.lost_updates = %v, want 0", v)
	}
	if v := sides["fenced"]["fenced_rejections"].(float64); v <= 0 {
		t.Errorf("fenced.fenced_rejections = %v, want > 0", v)
	}
	if c, b := sides["fenced"]["committed"].(float64), sides["fenced"]["final_balance"].(float64); c != b {
		t.Errorf("fenced: committed %v != final_balance %v", c, b)
	}
}

// TestDrillReport checks the human report's shape on a short run.
func TestDrillReport(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	args := []string{"-workers", "3", "-rounds", "8", "-ttl", "200ms", "-work", "1ms", "-pause-prob", "0.3", "-seed", "4"}
	code := realMain(context.Background(), args, &stdout, &stderr, false)
	out := stdout.String()
	if code != exitOK {
		t.Fatalf("exit code %d, stderr:\n%s\nstdout:\n%s", code, stderr.String(), out)
	}
	for _, want := range []string{"unfenced run", "fenced run", "committed increments", "final balance",
		"lost updates", "fenced rejections", "leases lost", "duration", "\nverdict: PASS"} {
		if !strings.Contains(out, want) {
			t.Errorf("report lacks %q:\n%s", want, out)
		}
	}
}

// TestInconclusive: without faults the unfenced run loses nothing, and the drill says so.
func TestInconclusive(t *testing.T) {
	t.Parallel()
	var stdout, stderr bytes.Buffer
	args := []string{"-workers", "2", "-rounds", "5", "-pause-prob", "0", "-partition-prob", "0"}
	code := realMain(context.Background(), args, &stdout, &stderr, false)
	if code != exitInconclusive {
		t.Fatalf("exit code %d, want %d; stdout:\n%s", code, exitInconclusive, stdout.String())
	}
	if !strings.Contains(stdout.String(), "verdict: INCONCLUSIVE") || !strings.Contains(stdout.String(), "too weak") {
		t.Errorf("report does not explain the weak faults:\n%s", stdout.String())
	}
}

func TestBadFlags(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args []string
		want string
	}{
		{[]string{"-locks", "zookeeper"}, "-locks"},
		{[]string{"-locks", "etcd"}, "needs -lock-endpoints"},
		{[]string{"-locks", "etcd", "-lock-endpoints", "https://etcd:2379"}, "http://"},
		{[]string{"-locks", "etcd-embedded", "-ttl", "500ms"}, "whole seconds"},
		{[]string{"-locks", "etcd-embedded", "-etcd-members", "0"}, "-etcd-members"},
		{[]string{"-locks", "etcd-embedded", "-etcd-members", "1", "-failover"}, "-failover needs"},
		{[]string{"-failover"}, "-failover needs"},
		{[]string{"-locks", "redis"}, "needs -lock-endpoints"},
		{[]string{"-locks", "redis", "-lock-endpoints", "no-port"}, "host:port"},
		{[]string{"-locks", "sql"}, "-lock-dsn"},
		{[]string{"-locks", "sql", "-lock-dsn", "what"}, "-lock-dsn"},
		{[]string{"-lock-endpoints", "127.0.0.1:2379"}, "-lock-endpoints is for"},
		{[]string{"-lock-dsn", "postgres://h/db"}, "-lock-dsn is for"},
		{[]string{"-workers", "1"}, "-workers 1"},
		{[]string{"-driver", "oracle"}, "-driver"},
		{[]string{"-driver", "postgres"}, "needs -dsn"},
		{[]string{"-bind", "maybe"}, "-bind"},
		{[]string{"-pause-prob", "0.8", "-partition-prob", "0.5"}, "probabilities"},
		{[]string{"-table", "a;b"}, "-table"},
		{[]string{"-ttl", "1ms"}, "-ttl"},
		{[]string{"-rounds", "0"}, "-duration"},
		{[]string{"extra"}, "unexpected"},
	} {
		var stdout, stderr bytes.Buffer
		code := realMain(context.Background(), tc.args, &stdout, &stderr, false)
		if code != exitUsage || !strings.Contains(stderr.String(), tc.want) {
			t.Errorf("%v: exit %d, stderr %q; want exit %d mentioning %q", tc.args, code, stderr.String(), exitUsage, tc.want)
		}
		if stdout.Len() != 0 {
			t.Errorf("%v: stdout %q, want nothing", tc.args, stdout.String())
		}
	}
}

func TestDurationWithoutRounds(t *testing.T) {
	cfg, _, err := parseFlags([]string{"-duration", "3s"}, &bytes.Buffer{})
	if err != nil || cfg.Rounds != 0 || cfg.Duration != 3*time.Second {
		t.Fatalf("-duration alone: rounds %d, duration %v, err %v", cfg.Rounds, cfg.Duration, err)
	}
	cfg, _, err = parseFlags([]string{"-duration", "3s", "-rounds", "5"}, &bytes.Buffer{})
	if err != nil || cfg.Rounds != 5 {
		t.Fatalf("-duration with -rounds: rounds %d, err %v", cfg.Rounds, err)
	}
}

func TestScheduleReproducible(t *testing.T) {
	cfg := defaultConfig()
	draw := func(seed uint64, worker int) []step {
		rng := rand.New(rand.NewPCG(seed, uint64(worker)))
		out := make([]step, 200)
		for i := range out {
			out[i] = cfg.nextStep(rng)
		}
		return out
	}
	a, b := draw(7, 1), draw(7, 1)
	for i := range a {
		if a[i] != b[i] {
			t.Fatalf("seed 7 worker 1 round %d: %+v then %+v", i, a[i], b[i])
		}
	}
	faults := 0
	for _, s := range a {
		if s.fault != faultNone {
			faults++
			if s.hold < cfg.TTL*3/2 || s.hold > cfg.TTL*3 {
				t.Errorf("fault holds %v, want 1.5 to 3 TTLs", s.hold)
			}
		}
	}
	if faults == 0 {
		t.Errorf("no fault in 200 rounds at the default probabilities")
	}
	c := draw(8, 1)
	same := true
	for i := range a {
		same = same && a[i] == c[i]
	}
	if same {
		t.Errorf("seeds 7 and 8 drew the same schedule")
	}
}

func TestAddParam(t *testing.T) {
	const kv = "fenced_tables=accounts"
	for _, tc := range []struct{ driver, dsn, want string }{
		{"postgres", "postgres://u:p@h/db", "postgres://u:p@h/db?" + kv},
		{"postgres", "postgres://u:p@h/db?sslmode=disable", "postgres://u:p@h/db?sslmode=disable&" + kv},
		{"postgres", "host=h dbname=db", "host=h dbname=db " + kv},
		{"mysql", "u:p@tcp(h:3306)/db", "u:p@tcp(h:3306)/db?" + kv},
		{"mysql", "u:p@tcp(h:3306)/db?parseTime=true", "u:p@tcp(h:3306)/db?parseTime=true&" + kv},
		{"sqlite", "file:x.db", "file:x.db?" + kv},
		{"sqlite", "file:x.db?_pragma=busy_timeout(5000)", "file:x.db?_pragma=busy_timeout(5000)&" + kv},
	} {
		if got := addParam(tc.driver, tc.dsn, kv); got != tc.want {
			t.Errorf("addParam(%q, %q) = %q, want %q", tc.driver, tc.dsn, got, tc.want)
		}
	}
}

// TestDrillPostgres runs the drill on a fresh PostgreSQL database (FENCEDSQL_PG_DSN).
func TestDrillPostgres(t *testing.T) {
	dsn := testdb.Postgres(t)
	cfg := smallConfig()
	cfg.Driver, cfg.DSN = "postgres", dsn
	runDrill(t, cfg)
}

// TestDrillMySQL runs the drill on a fresh MariaDB/MySQL database (FENCEDSQL_MYSQL_DSN).
func TestDrillMySQL(t *testing.T) {
	dsn := testdb.MySQL(t)
	cfg := smallConfig()
	cfg.Driver, cfg.DSN = "mysql", dsn
	runDrill(t, cfg)
}

// TestDrillTimeline writes the SVG timeline and checks that it is well-formed XML whose
// markers match the report: a lease bar per round, a cross per fenced rejection, a red
// dot per late write that committed.
func TestDrillTimeline(t *testing.T) {
	t.Parallel()
	cfg := smallConfig()
	cfg.Seed = 5
	cfg.Timeline = filepath.Join(t.TempDir(), "timeline.svg")
	rep := runDrill(t, cfg)
	if rep.Timeline != cfg.Timeline {
		t.Errorf("report names timeline %q, want %q", rep.Timeline, cfg.Timeline)
	}
	data, err := os.ReadFile(cfg.Timeline)
	if err != nil {
		t.Fatal(err)
	}
	type counts struct{ leases, rejected, committed int }
	got := map[string]*counts{}
	dec := xml.NewDecoder(bytes.NewReader(data))
	var root string
	var run *counts
	for {
		tok, err := dec.Token()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatalf("timeline is not well-formed XML: %v", err)
		}
		se, ok := tok.(xml.StartElement)
		if !ok {
			continue
		}
		if root == "" {
			root = se.Name.Local
			if se.Name.Space != "http://www.w3.org/2000/svg" {
				t.Errorf("root element in namespace %q, want SVG's", se.Name.Space)
			}
		}
		attr := map[string]string{}
		for _, a := range se.Attr {
			attr[a.Name.Local] = a.Value
		}
		if se.Name.Local == "g" && attr["class"] == "run" {
			run = &counts{}
			got[strings.TrimPrefix(attr["id"], "run-")] = run
			continue
		}
		if run == nil {
			continue // the legend
		}
		switch attr["class"] {
		case "lease":
			run.leases++
		case "write-rejected":
			run.rejected++
		case "write-committed":
			run.committed++
		}
	}
	if root != "svg" {
		t.Fatalf("root element %q, want svg", root)
	}
	for _, rr := range []runReport{rep.Unfenced, rep.Fenced} {
		c := got[rr.Name]
		if c == nil {
			t.Fatalf("no panel for the %s run", rr.Name)
		}
		t.Logf("%s panel: %+v", rr.Name, *c)
		if int64(c.leases) != rr.Rounds {
			t.Errorf("%s panel: %d lease bars, want %d (one per round)", rr.Name, c.leases, rr.Rounds)
		}
		if int64(c.rejected) != rr.FencedRejections {
			t.Errorf("%s panel: %d rejected-write markers, want %d", rr.Name, c.rejected, rr.FencedRejections)
		}
		if int64(c.committed) != rr.LateWritesCommitted {
			t.Errorf("%s panel: %d committed-late-write markers, want %d", rr.Name, c.committed, rr.LateWritesCommitted)
		}
	}
	if got["fenced"].rejected == 0 {
		t.Errorf("the fenced panel has no rejected-write marker")
	}
}

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

// TestLockServiceDefaults: each lock service has its own -ttl and -rounds defaults, and
// explicit flags win.
func TestLockServiceDefaults(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct {
		args    []string
		ttl     time.Duration
		rounds  int
		members int
	}{
		{nil, 300 * time.Millisecond, 40, 1},
		{[]string{"-locks", "etcd-embedded"}, time.Second, 10, 1},
		{[]string{"-locks", "etcd-embedded", "-failover"}, time.Second, 10, 3},
		{[]string{"-locks", "etcd-embedded", "-failover", "-etcd-members", "5", "-ttl", "2s", "-rounds", "7"}, 2 * time.Second, 7, 5},
		{[]string{"-locks", "etcd", "-lock-endpoints", "http://127.0.0.1:2379,127.0.0.1:2381"}, time.Second, 10, 1},
		{[]string{"-locks", "redis", "-lock-endpoints", "127.0.0.1:6379"}, 500 * time.Millisecond, 40, 1},
		{[]string{"-locks", "sqllock", "-driver", "postgres", "-dsn", "postgres://u@h/db"}, 500 * time.Millisecond, 40, 1},
		{[]string{"-locks", "redis", "-lock-endpoints", "127.0.0.1:6379", "-duration", "5s"}, 500 * time.Millisecond, 0, 1},
	} {
		cfg, _, err := parseFlags(tc.args, io.Discard)
		if err != nil {
			t.Errorf("%v: %v", tc.args, err)
			continue
		}
		if cfg.TTL != tc.ttl || cfg.Rounds != tc.rounds || cfg.EtcdMembers != tc.members {
			t.Errorf("%v: ttl %v rounds %d members %d; want %v, %d, %d", tc.args, cfg.TTL, cfg.Rounds, cfg.EtcdMembers,
				tc.ttl, tc.rounds, tc.members)
		}
	}
}

// TestFaultHoldCoversServiceExpiry: a fault outlasts the time the lock service may keep
// the lease (for etcd: the session lease's slack and whole seconds, and the lessor's
// 500ms expiry check), so that the lock really moves before the late write.
func TestFaultHoldCoversServiceExpiry(t *testing.T) {
	t.Parallel()
	cfg := defaultConfig()
	cfg.Locks, cfg.TTL, cfg.PauseProb = locksEtcdEmbedded, time.Second, 1
	rng := rand.New(rand.NewPCG(1, 1))
	for range 100 {
		st := cfg.nextStep(rng)
		// etcd expires the 2s session lease (1s TTL + 1s slack) at most 2.5s after its
		// last renewal, which came before the fault; the fault lasts 1.5 to 3 TTLs more
		// than the 1.5s by which that exceeds the TTL.
		if st.fault != faultPause || st.hold < 3*time.Second || st.hold > 4500*time.Millisecond {
			t.Fatalf("etcd fault %+v: want a pause of 3s to 4.5s", st)
		}
	}
	cfg.Locks = locksRedis
	if lag := cfg.serviceLag(); lag != 0 {
		t.Errorf("redis: service lag %v, want 0", lag)
	}
}

func TestEtcdEndpoints(t *testing.T) {
	t.Parallel()
	got, err := etcdEndpoints(" http://127.0.0.1:2379, 10.0.0.2:2379 ,")
	if err != nil || strings.Join(got, ",") != "127.0.0.1:2379,10.0.0.2:2379" {
		t.Errorf("etcdEndpoints = %q, %v", got, err)
	}
	for _, bad := range []string{"", "https://h:2379", "h"} {
		if _, err := etcdEndpoints(bad); err == nil {
			t.Errorf("etcdEndpoints(%q): no error", bad)
		}
	}
}

// TestSQLLocksVia: the lease table's DSN is rewritten to go through a worker's proxy.
func TestSQLLocksVia(t *testing.T) {
	t.Parallel()
	for _, tc := range []struct{ driver, dsn, target, want string }{
		{"pgx", "postgres://u:p@db.example:5433/app?sslmode=disable", "db.example:5433",
			"postgres://u:p@127.0.0.1:9999/app?connect_timeout=2&sslmode=disable"},
		{"pgx", "host=db.example port=5433 user=u dbname=app", "db.example:5433",
			"host=db.example port=5433 user=u dbname=app host=127.0.0.1 port=9999 connect_timeout=2"},
		{"mysql", "u:p@tcp(db.example:3307)/app?parseTime=true", "db.example:3307",
			"u:p@tcp(127.0.0.1:9999)/app?parseTime=true&timeout=2s"},
	} {
		target, err := sqlTarget(tc.driver, tc.dsn)
		if err != nil || target != tc.target {
			t.Errorf("sqlTarget(%q) = %q, %v; want %q", tc.dsn, target, err, tc.target)
		}
		s := &sqlLocks{driver: tc.driver, dsn: tc.dsn}
		if got, err := s.via("127.0.0.1:9999"); err != nil || got != tc.want {
			t.Errorf("via(%q) = %q, %v; want %q", tc.dsn, got, err, tc.want)
		}
	}
	if _, err := sqlTarget("pgx", "host=/var/run/postgresql dbname=app"); err == nil {
		t.Errorf("a Unix socket DSN: no error")
	}
}

// netConfig is a short drill on a networked lock service: each worker's lock client goes
// through a loopback proxy of its own, which the faults block (and reset, at the end of
// a partition).
func netConfig(locks string, seed uint64) config {
	cfg := smallConfig()
	cfg.Locks = locks
	cfg.TTL = defaultTTL(locks)
	cfg.Seed = seed
	return cfg
}

// TestDrillPostgresEtcd runs the drill on PostgreSQL with a three-member etcd cluster
// started in the process, whose leader is killed half-way through each run: the workers'
// Acquire retries through the election, and the fenced run's invariant holds.
func TestDrillPostgresEtcd(t *testing.T) {
	t.Parallel()
	dsn := testdb.Postgres(t)
	cfg := netConfig(locksEtcdEmbedded, 13) // 3 faults in 24 rounds
	cfg.Driver, cfg.DSN = "postgres", dsn
	cfg.Rounds = 6
	cfg.EtcdMembers, cfg.Failover = 3, true
	rep := runDrill(t, cfg)
	for _, rr := range []runReport{rep.Unfenced, rep.Fenced} {
		f := rr.Failover
		if f == nil {
			t.Errorf("%s run: no failover", rr.Name)
			continue
		}
		t.Logf("%s run: failover %+v", rr.Name, *f)
		if f.Error != "" || f.Killed == "" || f.NewLeader == "" || f.NewLeader == f.Killed {
			t.Errorf("%s run: failover %+v: want a killed leader and another one elected", rr.Name, *f)
		}
		if half := int64(cfg.Workers * cfg.Rounds / 2); f.RoundsBefore < half || f.RoundsBefore >= 2*half {
			t.Errorf("%s run: failover after %d rounds, want half-way (%d)", rr.Name, f.RoundsBefore, half)
		}
	}
}

// TestDrillMySQLRedis runs the drill on MariaDB with Redis locks (redislock).
func TestDrillMySQLRedis(t *testing.T) {
	t.Parallel()
	dsn := testdb.MySQL(t)
	addr, prefix := testdb.Redis(t)
	cfg := netConfig(locksRedis, 17) // 5 faults in 40 rounds
	cfg.Driver, cfg.DSN = "mysql", dsn
	cfg.LockEndpoints, cfg.LockPrefix = addr, prefix
	runDrill(t, cfg)

	// The drill deletes its keys.
	rdb := redis.NewClient(&redis.Options{Addr: addr})
	defer rdb.Close()
	keys, err := rdb.Keys(context.Background(), prefix+"*").Result()
	if err != nil || len(keys) != 0 {
		t.Errorf("keys left under %s: %v, %v", prefix, keys, err)
	}
}

// TestDrillMySQLSQLLock runs the drill on MariaDB with the lease table (sqllock) in the
// same database.
func TestDrillMySQLSQLLock(t *testing.T) {
	t.Parallel()
	dsn := testdb.MySQL(t)
	cfg := netConfig(locksSQL, 17)
	cfg.Driver, cfg.DSN = "mysql", dsn
	runDrill(t, cfg)

	// The drill drops the lease table and its token counter and procedure.
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	var n int
	if err := db.QueryRow(`SELECT (SELECT COUNT(*) FROM information_schema.tables WHERE table_schema = DATABASE())
		+ (SELECT COUNT(*) FROM information_schema.routines WHERE routine_schema = DATABASE())`).Scan(&n); err != nil || n != 0 {
		t.Errorf("%d tables and routines left in the database (err %v), want 0", n, err)
	}
}
