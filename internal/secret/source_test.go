package secret

import (
	"os"
	"path/filepath"
	"strings"
	"testing"
)

// A DSN is read from exactly one of the flag, an environment variable and a file, and
// no error shows it (red-team rt41b F1).
func TestSourceRead(t *testing.T) {
	const dsn = "app:S3cret@tcp(db:3306)/shop"
	file := filepath.Join(t.TempDir(), "dsn")
	if err := os.WriteFile(file, []byte(dsn+"\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	empty := filepath.Join(t.TempDir(), "empty")
	if err := os.WriteFile(empty, []byte("\n"), 0o600); err != nil {
		t.Fatal(err)
	}
	env := func(k string) string {
		if k == "DSN" {
			return dsn
		}
		return ""
	}
	for _, c := range []struct {
		src     Source
		want    string
		wantErr string
	}{
		{Source{Flag: "dsn", Value: dsn}, dsn, ""},
		{Source{Flag: "dsn", Env: "DSN"}, dsn, ""},
		{Source{Flag: "dsn", File: file}, dsn, ""},
		{Source{Flag: "dsn", File: "-"}, dsn, ""},
		{Source{Flag: "dsn"}, "", ""},
		{Source{Flag: "dsn", Value: dsn, Env: "DSN"}, "", "only one of"},
		{Source{Flag: "dsn", Env: "DSN", File: file}, "", "only one of"},
		{Source{Flag: "dsn", Env: "UNSET"}, "", "UNSET is not set"},
		{Source{Flag: "dsn", File: empty}, "", "is empty"},
		{Source{Flag: "dsn", File: filepath.Join(t.TempDir(), "none")}, "", "-dsn-file"},
	} {
		got, err := c.src.Read(env, strings.NewReader(dsn+"\r\n"))
		if c.wantErr != "" {
			if err == nil || !strings.Contains(err.Error(), c.wantErr) || strings.Contains(err.Error(), "S3cret") {
				t.Errorf("%+v: error %v, want one containing %q and not the password", c.src, err, c.wantErr)
			}
			continue
		}
		if err != nil || got != c.want {
			t.Errorf("%+v: %q, %v; want %q", c.src, got, err, c.want)
		}
	}
}
