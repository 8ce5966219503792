package main

import (
	"os"
	"os/exec"
	"strings"
	"testing"
)

// The usage text (printed on -h and on a mistyped flag) never shows $FENCEDSQL_PG_DSN,
// and a DSN of more than one line is refused without being shown (red-team rt45e F2:
// the variable was the -dsn flag's default, which the flag package prints, password
// included; F3: pgx's parse error quotes a DSN's other lines, PGPASSWORD=…). main runs
// in a child process: it exits, and prints on the process's stderr.
func TestDSNNotPrinted(t *testing.T) {
	const pw = "Zq9usageSECRET"
	if args := os.Getenv("PGSERVICE_TEST_ARGS"); args != "" {
		os.Args = append([]string{"pgservice"}, strings.Fields(args)...)
		main()
		return
	}
	for _, c := range []struct{ args, dsn, want string }{
		{"-no-such-flag", "postgres://app:" + pw + "@127.0.0.1:1/db", "-dsn"},
		{"-h", "host=127.0.0.1 port=1 user=app password=" + pw + " dbname=db", "-dsn"},
		{"-timeout 5s", "postgres://app@127.0.0.1:1/db?sslmode=bogus\nPGPASSWORD=" + pw, "line break"},
	} {
		cmd := exec.Command(os.Args[0], "-test.run=^TestDSNNotPrinted$")
		cmd.Env = append(os.Environ(), "PGSERVICE_TEST_ARGS="+c.args, "FENCEDSQL_PG_DSN="+c.dsn)
		out, err := cmd.CombinedOutput()
		if _, exited := err.(*exec.ExitError); err != nil && !exited {
			t.Fatalf("set-up: running the child: %v", err)
		}
		if !strings.Contains(string(out), c.want) {
			t.Errorf("%s: output lacks %q:\n%s", c.args, c.want, strings.ReplaceAll(string(out), pw, "<PASSWORD>"))
		}
		if strings.Contains(string(out), pw) {
			t.Errorf("%s: the DSN's password is printed:\n%s", c.args, strings.ReplaceAll(string(out), pw, "<PASSWORD>"))
		}
	}
}
