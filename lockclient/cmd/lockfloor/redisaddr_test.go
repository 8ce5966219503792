package main

import (
	"errors"
	"os"
	"os/exec"
	"strings"
	"testing"
)

// -addr in host:port form with credentials (u:PASSWORD@host:port, :PASSWORD@host:port)
// is refused before a client is built, and nothing prints the password (red-team
// rt45e F1: go-redis's package logger, which writes to the process's stderr, printed
// the raw address on every failed dial; the command's own line was masked). A
// redis:// URL to a closed port fails with the command's line only: go-redis's logger
// is silenced in main. The command runs as a child process through main, so its real
// stderr is seen (the logger holds the stderr it found at init: run's writer does not
// catch it).
func TestRedisAddrCredentialsNeverOnStderr(t *testing.T) {
	const pw = "Zq9addrSECRET"
	if args := os.Getenv("LOCKFLOOR_TEST_MAIN_ARGS"); args != "" {
		os.Args = append([]string{"lockfloor"}, strings.Split(args, "\x1f")...)
		main()
		return
	}
	for _, c := range []struct {
		args []string
		env  string // ADDR's value
		code int
	}{
		{args: []string{"-addr", "u:" + pw + "@127.0.0.1:1"}, code: exitUsage},
		{args: []string{"-addr", ":" + pw + "@127.0.0.1:1"}, code: exitUsage},
		{args: []string{"-addr-env", "ADDR"}, env: "u:" + pw + "@127.0.0.1:1", code: exitUsage},
		{args: []string{"-addr", "127.0.0.1:1?password=" + pw}, code: exitUsage},
		{args: []string{"-addr-env", "ADDR"}, env: "redis://u:" + pw + "@127.0.0.1:1/0", code: exitFailed},
	} {
		args := append([]string{"-backend", "redis", "-show", "-timeout", "5s"}, c.args...)
		cmd := exec.Command(os.Args[0], "-test.run=^TestRedisAddrCredentialsNeverOnStderr$")
		cmd.Env = append(os.Environ(), "LOCKFLOOR_TEST_MAIN_ARGS="+strings.Join(args, "\x1f"), "ADDR="+c.env)
		out, err := cmd.CombinedOutput()
		code := 0
		var exit *exec.ExitError
		if errors.As(err, &exit) {
			code = exit.ExitCode()
		} else if err != nil {
			t.Fatalf("set-up: running the command: %v", err)
		}
		shown := strings.ReplaceAll(strings.Join(c.args, " ")+" "+c.env, pw, "PASSWORD")
		if strings.Contains(string(out), pw) {
			t.Errorf("%s: the password is printed:\n%s", shown, strings.ReplaceAll(string(out), pw, "<PASSWORD>"))
		}
		if code != c.code {
			t.Errorf("%s: exit %d, want %d:\n%s", shown, code, c.code, out)
		}
		for _, line := range strings.Split(strings.TrimSpace(string(out)), "\n") {
			if !strings.HasPrefix(line, "lockfloor: ") && !strings.HasPrefix(line, "usage: ") {
				t.Errorf("%s: a line not the command's (go-redis's logger?): %q", shown, line)
			}
		}
	}
}

// redisOptions takes host:port and redis:// URLs, and refuses anything else with an
// error that does not quote it.
func TestRedisOptionsAddressForms(t *testing.T) {
	for addr, want := range map[string]error{
		"127.0.0.1:6379":                nil,
		"localhost:6379":                nil,
		"[::1]:6379":                    nil,
		":6379":                         nil,
		"redis://:S3cret@cache:6379/2":  nil,
		"rediss://u:S3cret@cache:6380":  nil,
		"u:S3cret@cache:6379":           errAddrUserInfo,
		":S3cret@cache:6379":            errAddrUserInfo,
		"S3cret@cache:6379":             errAddrUserInfo,
		"cache":                         errAddrForm,
		"cache:redis":                   errAddrForm,
		"cache:0":                       errAddrForm,
		"cache:70000":                   errAddrForm,
		"cache:6379?password=S3cret":    errAddrForm,
		"cache/S3cret:6379":             errAddrForm,
		"cache S3cret:6379":             errAddrForm,
		"redis://:S3cret@cache:6379/x%": errAddrURL,
	} {
		o, err := redisOptions(addr)
		if err != want {
			t.Errorf("%q: %v, want %v", addr, err, want)
		}
		if err != nil && strings.Contains(err.Error(), "S3cret") {
			t.Errorf("%q: the error quotes the address: %v", addr, err)
		}
		if err == nil && o.Password == "" && strings.Contains(addr, "S3cret") {
			t.Errorf("%q: the password is not in Options.Password", addr)
		}
	}
}
