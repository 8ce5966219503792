package secret

import (
	"errors"
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

// A value of more than one line — an env file read whole, a variable holding a line
// break — is refused from every source, and the error says how many lines it has,
// never what they hold (red-team rt45e F3: pgx's parse error quoted the file's
// PGPASSWORD=… line).
func TestSourceReadRefusesMoreThanOneLine(t *testing.T) {
	const pw = "Zq9S3cret"
	for name, v := range map[string]string{
		"env file":          "postgres://app@db/shop\nPGPASSWORD=" + pw + "\n",
		"CRLF lines":        "postgres://app@db/shop\r\nPGPASSWORD=" + pw + "\r\n",
		"blank line first":  "\npostgres://app:" + pw + "@db/shop\n",
		"lone CR":           "postgres://app@db/shop\rPGPASSWORD=" + pw,
		"NUL":               "postgres://app@db/shop\x00" + pw,
		"unicode separator": "postgres://app@db/shop\u2028PGPASSWORD=" + pw,
		"NEL":               "postgres://app@db/shop\u0085PGPASSWORD=" + pw,
	} {
		file := filepath.Join(t.TempDir(), "dsn")
		if err := os.WriteFile(file, []byte(v), 0o600); err != nil {
			t.Fatal(err)
		}
		env := func(string) string { return v }
		for _, src := range []Source{
			{Flag: "dsn", Value: v},
			{Flag: "dsn", Env: "DSN"},
			{Flag: "dsn", File: file},
			{Flag: "dsn", File: "-"},
		} {
			got, err := src.Read(env, strings.NewReader(v))
			if !errors.Is(err, ErrNotOneLine) || got != "" {
				t.Errorf("%s, %+v: %q, %v; want ErrNotOneLine", name, src, got, err)
				continue
			}
			if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "PGPASSWORD") || strings.Contains(err.Error(), "shop") {
				t.Errorf("%s, %+v: the error quotes the value: %v", name, src, err)
			}
		}
	}
	// A tab is a blank of the keyword/value form, not a control character.
	if got, err := (Source{Flag: "dsn", Value: "host=db\tuser=app"}).Read(nil, nil); err != nil || got != "host=db\tuser=app" {
		t.Errorf("a tab: %q, %v", got, err)
	}
}

// NotOneLine counts the lines it refuses.
func TestNotOneLineCountsLines(t *testing.T) {
	err := NotOneLine("-dsn-file: f", "a\nb\n\nc")
	if err == nil || !strings.Contains(err.Error(), "-dsn-file: f has 3 lines") {
		t.Errorf("got %v", err)
	}
	if err := NotOneLine("x", "postgres://u@h/db?a=b c"); err != nil {
		t.Errorf("one line refused: %v", err)
	}
}
