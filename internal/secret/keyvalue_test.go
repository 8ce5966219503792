package secret

import (
	"strings"
	"testing"
)

// Every spelling of a keyword/value password pgx reads is found and masked
// (red-team rt31d F7: blanks around '=' were missed, so a driver's parse error quoting
// the DSN printed the password).
func TestPasswordKeywordValueSpellings(t *testing.T) {
	for _, c := range []struct{ dsn, want string }{
		{"host=h password = s3cr3t dbname=d", "s3cr3t"},
		{"host=h password =s3cr3t dbname=d", "s3cr3t"},
		{"host=h password= s3cr3t dbname=d", "s3cr3t"},
		{"host=h\tpassword\t=\ts3cr3t\tdbname=d", "s3cr3t"},
		{"password=s3cr3t host=h", "s3cr3t"},
		{"host=h password = 's3 cr3t' dbname=d", "s3 cr3t"},
		{`host=h password='it\'s \\ x' dbname=d`, `it's \ x`},
		{`host=h password=it\'s dbname=d`, `it's`},
		{`host=h password=a\ b dbname=d`, `a\ b|a b`},               // as written, and as pgx unescapes it
		{"host=h password=first password = second", "first|second"}, // each occurrence
		{"host=h password= dbname=d", "dbname=d"},                   // pgx skips the blanks after the =
		{"host=h mypassword = x dbname=d", ""},
		{"host=h dbname=password", ""},
	} {
		got := Passwords(c.dsn)
		if strings.Join(got, "|") != c.want {
			t.Errorf("Passwords(%q) = %q, want %q", c.dsn, got, c.want)
			continue
		}
		if got == nil {
			continue
		}
		msg := "cannot parse `" + c.dsn + "`: failed"
		red := Redact(msg, got...)
		for _, part := range []string{"s3cr3t", "s3 cr3t", "cr3t", "it's", `it\'s`, "first", "second"} {
			if strings.Contains(c.dsn, part) && strings.Contains(red, part) {
				t.Errorf("Redact left %q in %q", part, red)
			}
		}
	}
}

// KeyValues reports each setting's span, from its keyword to the end of its value.
func TestKeyValuesSpans(t *testing.T) {
	s := `a=1  b = 'x y'  c=\'z d`
	got := KeyValues(s)
	want := []KeyValue{{"a", "1", 0, 3}, {"b", "x y", 5, 14}, {"c", `'z`, 16, 21}, {"d", "", 22, 23}}
	if len(got) != len(want) {
		t.Fatalf("KeyValues(%q) = %+v", s, got)
	}
	for i := range want {
		if got[i] != want[i] {
			t.Errorf("KeyValues(%q)[%d] = %+v, want %+v", s, i, got[i], want[i])
		}
	}
}
