package mysqldriver_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"maps"
	"os"
	"os/exec"
	"path/filepath"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// exceptions are the tests (full names, as go test reports them) that pass on the raw
// driver and may fail wrapped, each with the reason. README.md ("The drivers' own
// suites…") lists the same. A listed test that passes wrapped fails
// TestDriverSuite, so the list cannot go stale.
var exceptions = map[string]string{}

// suiteTimeout bounds each nested go test run (build included). The suite itself runs
// in about 10 s against a local MariaDB.
const suiteTimeout = 5 * time.Minute

// TestDriverSuite runs go-sql-driver/mysql's published driver_test.go twice, each
// time in a copy of the driver's module built in a temporary directory (the file is an
// internal test of package mysql, and fencedsql's dialects/mysql imports that package,
// so it cannot run inside this module): once unmodified on the raw driver, once
// adapted (testdata/wrapped/driver_test.go, see adapt_test.go) with
// testdata/wrapped/fenced_wrap_test.go added, through fencedsql's wrapper over this
// working tree. Every test that passes raw must pass wrapped, but for the exceptions.
//
// Each run gets a database of its own on the server named by FENCEDSQL_MYSQL_DSN,
// passed as the MYSQL_TEST_* variables driver_test.go reads. MYSQL_TEST_CONCURRENT is
// left unset (TestConcurrent skips in both runs): it opens @@max_connections
// connections at once, which would starve the other suites sharing the server.
func TestDriverSuite(t *testing.T) {
	testdb.NeedServer(t, testdb.EnvMySQL, "MySQL/MariaDB")
	modDir, err := moduleDir()
	if err != nil {
		t.Fatalf("%s@%s's source: %v", module, version, err)
	}
	root, err := repoRoot()
	if err != nil {
		t.Fatal(err)
	}

	var raw, wrapped *suiteRun
	t.Run("run", func(t *testing.T) {
		t.Run("raw", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyModule(t, modDir, dir)
			copyFile(t, published, filepath.Join(dir, "driver_test.go"))
			raw = runSuite(t, dir, testdb.MySQL(t))
		})
		t.Run("wrapped", func(t *testing.T) {
			t.Parallel()
			dir := t.TempDir()
			copyModule(t, modDir, dir)
			copyFile(t, adapted, filepath.Join(dir, "driver_test.go"))
			copyFile(t, added, filepath.Join(dir, filepath.Base(added)))
			writeWrappedGoMod(t, dir, modDir, root)
			wrapped = runSuite(t, dir, testdb.MySQL(t))
		})
	})
	if raw == nil || wrapped == nil {
		t.Fatal("a run did not complete")
	}
	t.Logf("raw:     %s", raw.summary())
	t.Logf("wrapped: %s", wrapped.summary())
	if raw.result["TestCRUD"] != "pass" {
		t.Fatalf("TestCRUD %s on the raw driver: the suite did not reach the server", resultWord(raw.result["TestCRUD"]))
	}
	if got := wrapped.result["TestFencedWrapperInUse"]; got != "pass" {
		t.Fatalf("TestFencedWrapperInUse (testdata/wrapped/fenced_wrap_test.go) %s: the wrapped run may not have gone through the wrapper:\n%s",
			resultWord(got), indent(wrapped.output["TestFencedWrapperInUse"]))
	}

	for _, name := range slices.Sorted(maps.Keys(raw.result)) {
		if raw.result[name] != "pass" {
			continue
		}
		got := wrapped.result[name]
		why, excepted := exceptions[name]
		switch {
		case got == "pass" && excepted:
			t.Errorf("%s passes wrapped but is listed as an exception (%s): remove it here and in README.md", name, why)
		case got != "pass" && excepted:
			t.Logf("%s: %s wrapped, an exception: %s", name, resultWord(got), why)
		case got != "pass":
			t.Errorf("%s passes on the raw driver but %s wrapped:\n%s", name, resultWord(got), indent(wrapped.output[name]))
		}
	}
	for name, why := range exceptions {
		if raw.result[name] != "pass" {
			t.Logf("exception %s (%s) did not pass raw here (%s)", name, why, resultWord(raw.result[name]))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(wrapped.result)) {
		if wrapped.result[name] == "pass" && raw.result[name] != "pass" && name != "TestFencedWrapperInUse" {
			t.Logf("%s passes wrapped but %s raw", name, resultWord(raw.result[name]))
		}
	}
}

func resultWord(action string) string {
	switch action {
	case "pass":
		return "passes"
	case "fail":
		return "fails"
	case "skip":
		return "is skipped"
	}
	return "does not run"
}

func indent(s string) string {
	if s == "" {
		return "\t(no output)"
	}
	return "\t" + strings.ReplaceAll(strings.TrimRight(s, "\n"), "\n", "\n\t")
}

// suiteRun is one nested go test run: each test's final action (pass, fail, skip) and
// output, by full name.
type suiteRun struct {
	result  map[string]string
	output  map[string]string
	elapsed time.Duration
}

func (r *suiteRun) summary() string {
	count := func(top bool) map[string]int {
		c := map[string]int{}
		for name, a := range r.result {
			if !top || !strings.Contains(name, "/") {
				c[a]++
			}
		}
		return c
	}
	top, all := count(true), count(false)
	return fmt.Sprintf("top-level tests %d passed, %d failed, %d skipped; with subtests %d passed, %d failed, %d skipped; %s",
		top["pass"], top["fail"], top["skip"], all["pass"], all["fail"], all["skip"], r.elapsed.Round(100*time.Millisecond))
}

// runSuite runs go test -json in dir with the MYSQL_TEST_* variables naming the
// database of dsn.
func runSuite(t *testing.T, dir, dsn string) *suiteRun {
	t.Helper()
	cfg, err := mysql.ParseDSN(dsn)
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithTimeout(t.Context(), suiteTimeout+time.Minute)
	defer cancel()
	args := []string{"test", "-count=1", "-json", "-timeout", suiteTimeout.String()}
	if raceEnabled {
		args = append(args, "-race")
	}
	cmd := exec.CommandContext(ctx, "go", append(args, ".")...)
	cmd.Dir = dir
	env := slices.DeleteFunc(os.Environ(), func(kv string) bool {
		return strings.HasPrefix(kv, "MYSQL_TEST_") || strings.HasPrefix(kv, "GOFLAGS=") || strings.HasPrefix(kv, "GOWORK=")
	})
	cmd.Env = append(env,
		"GOFLAGS="+strings.TrimSpace(os.Getenv("GOFLAGS")+" -mod=mod"),
		"GOWORK=off",
		"MYSQL_TEST_USER="+cfg.User,
		"MYSQL_TEST_PASS="+cfg.Passwd,
		"MYSQL_TEST_PROT="+cfg.Net,
		"MYSQL_TEST_ADDR="+cfg.Addr,
		"MYSQL_TEST_DBNAME="+cfg.DBName,
	)
	var stderr bytes.Buffer
	cmd.Stderr = &stderr
	start := time.Now()
	out, runErr := cmd.Output()
	r := &suiteRun{result: map[string]string{}, output: map[string]string{}, elapsed: time.Since(start)}
	var other strings.Builder // output not attributed to a test (build errors, summary)
	sc := bufio.NewScanner(bytes.NewReader(out))
	sc.Buffer(make([]byte, 1<<20), 16<<20)
	for sc.Scan() {
		var ev struct {
			Action, Test, Output string
		}
		if err := json.Unmarshal(sc.Bytes(), &ev); err != nil {
			other.WriteString(redact(sc.Text(), cfg.Passwd) + "\n")
			continue
		}
		switch {
		case ev.Test == "":
			other.WriteString(redact(ev.Output, cfg.Passwd))
		case ev.Action == "output":
			r.output[ev.Test] += redact(ev.Output, cfg.Passwd)
		case ev.Action == "pass" || ev.Action == "fail" || ev.Action == "skip":
			r.result[ev.Test] = ev.Action
		}
	}
	if len(r.result) == 0 {
		t.Fatalf("go test in %s ran no test (%v):\n%s%s", dir, runErr, other.String(), redact(stderr.String(), cfg.Passwd))
	}
	t.Logf("%s (go test: %v)", r.summary(), runErr)
	return r
}

// redact blots out the password in the DSNs driver_test.go prints ("user:password@").
func redact(s, password string) string {
	if password == "" {
		return s
	}
	return strings.ReplaceAll(s, ":"+password+"@", ":xxxxx@")
}

// moduleDir returns the directory of go-sql-driver/mysql's module source, downloading
// it through the module proxy when the module cache does not have it.
func moduleDir() (string, error) {
	out, err := exec.Command("go", "mod", "download", "-json", module+"@"+version).Output()
	if err != nil {
		return "", fmt.Errorf("go mod download: %v", err)
	}
	var m struct{ Dir, Error string }
	if err := json.Unmarshal(out, &m); err != nil {
		return "", err
	}
	if m.Error != "" || m.Dir == "" {
		return "", fmt.Errorf("go mod download: %s", m.Error)
	}
	return m.Dir, nil
}

// repoRoot returns the directory of fencedsql's go.mod.
func repoRoot() (string, error) {
	out, err := exec.Command("go", "env", "GOMOD").Output()
	if err != nil {
		return "", fmt.Errorf("go env GOMOD: %v", err)
	}
	gomod := strings.TrimSpace(string(out))
	if gomod == "" || gomod == os.DevNull {
		return "", fmt.Errorf("not in a module")
	}
	return filepath.Dir(gomod), nil
}

// copyModule copies the module's go.mod, go.sum and non-test Go files (the package
// has no sub-packages that its tests use) into dst.
func copyModule(t *testing.T, src, dst string) {
	t.Helper()
	entries, err := os.ReadDir(src)
	if err != nil {
		t.Fatal(err)
	}
	for _, e := range entries {
		name := e.Name()
		if !e.Type().IsRegular() {
			continue
		}
		if name == "go.mod" || name == "go.sum" || strings.HasSuffix(name, ".go") && !strings.HasSuffix(name, "_test.go") {
			copyFile(t, filepath.Join(src, name), filepath.Join(dst, name))
		}
	}
}

func copyFile(t *testing.T, src, dst string) {
	t.Helper()
	b, err := os.ReadFile(src)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(dst, b, 0o644); err != nil {
		t.Fatal(err)
	}
}

var goDirective = regexp.MustCompile(`(?m)^go [0-9.]+[ \t]*$`)

// writeWrappedGoMod makes the copy in dir require fencedsql, replaced by the working
// tree at root: the driver's go.mod with fencedsql's go version, one more requirement
// and the replace directive (go test -mod=mod adds what fencedsql needs), and a go.sum
// merged from the driver's and fencedsql's.
func writeWrappedGoMod(t *testing.T, dir, modDir, root string) {
	t.Helper()
	own, err := os.ReadFile(filepath.Join(modDir, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	fenced, err := os.ReadFile(filepath.Join(root, "go.mod"))
	if err != nil {
		t.Fatal(err)
	}
	goLine := goDirective.Find(fenced)
	if goLine == nil {
		t.Fatalf("no go directive in %s", filepath.Join(root, "go.mod"))
	}
	gomod := goDirective.ReplaceAll(own, goLine) // a newer go line is fine for the driver
	gomod = fmt.Appendf(gomod, "\nrequire github.com/fencedsql/fencedsql v0.0.0-00010101000000-000000000000\n\nreplace github.com/fencedsql/fencedsql => %s\n", root)
	if err := os.WriteFile(filepath.Join(dir, "go.mod"), gomod, 0o644); err != nil {
		t.Fatal(err)
	}
	var sums []string
	for _, f := range []string{filepath.Join(modDir, "go.sum"), filepath.Join(root, "go.sum")} {
		b, err := os.ReadFile(f)
		if err != nil {
			t.Fatal(err)
		}
		sums = append(sums, strings.Split(strings.TrimSpace(string(b)), "\n")...)
	}
	slices.Sort(sums)
	sums = slices.Compact(sums)
	if err := os.WriteFile(filepath.Join(dir, "go.sum"), []byte(strings.Join(sums, "\n")+"\n"), 0o644); err != nil {
		t.Fatal(err)
	}
}
