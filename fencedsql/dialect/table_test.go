package dialect

import (
	"errors"
	"strings"
	"testing"
)

func TestParseTableName(t *testing.T) {
	for in, want := range map[string]TableName{
		"accounts":      {Name: "accounts"},
		"Shop.Accounts": {Schema: "Shop", Name: "Accounts"},
		"s$1.t_2":       {Schema: "s$1", Name: "t_2"},
	} {
		got, err := ParseTableName(in)
		if err != nil || got != want || got.String() != in {
			t.Errorf("ParseTableName(%q) = %+v, %v", in, got, err)
		}
	}
	for _, in := range []string{"", ".t", "s.", "a.b.c", "a b", `"a"`, "1a", "a;b"} {
		_, err := ParseTableName(in)
		var ne *NameError
		if !errors.As(err, &ne) || ne.Name != in || ne.Problem == "" {
			t.Errorf("ParseTableName(%q): %v, want a *NameError", in, err)
		}
	}
	q := func(s string) string { return "[" + s + "]" }
	if got := (TableName{Schema: "s", Name: "t"}).Quote(q); got != "[s].[t]" {
		t.Errorf("Quote = %q", got)
	}
	if got := (TableName{Name: "t"}).Quote(q); got != "[t]" {
		t.Errorf("Quote = %q", got)
	}
}

// A name that is not valid UTF-8 (a registered name read back in latin1, red-team
// rt40b F4) is not a plain identifier; non-ASCII letters in UTF-8 are.
func TestPlainIdentRefusesInvalidUTF8(t *testing.T) {
	for s, want := range map[string]bool{"café": true, "rt40b_caf\xe9": false, "a\ufffd": false, "\xff": false, "naïve_ß": true} {
		if got := PlainIdent(s); got != want {
			t.Errorf("PlainIdent(%q) = %v, want %v", s, got, want)
		}
	}
}

// TestTableNameExactParts: a part the catalog spelled is never folded and is quoted as
// it is by Text; a part as the application wrote it is folded by Folded and left to
// the server by Text (red-team rt56d F4).
func TestTableNameExactParts(t *testing.T) {
	quote := func(s string) string { return `"` + strings.ReplaceAll(s, `"`, `""`) + `"` }
	lower := strings.ToLower
	for _, c := range []struct {
		in           TableName
		text, folded string
	}{
		{TableName{Name: "Accounts"}, "Accounts", `"accounts"`},
		{TableName{Schema: "App", Name: "Accounts"}, "App.Accounts", `"app"."accounts"`},
		{TableName{Name: "Accounts"}.InCatalogSchema("odd sch"), `"odd sch".Accounts`, `"odd sch"."accounts"`},
		{TableName{Name: "accounts"}.InCatalogSchema("Mixed"), `"Mixed".accounts`, `"Mixed"."accounts"`},
		{TableName{Name: "accounts"}.InCatalogSchema(`q"uote`), `"q""uote".accounts`, `"q""uote"."accounts"`},
		{TableName{Name: "accounts"}.InCatalogSchema("a.b"), `"a.b".accounts`, `"a.b"."accounts"`},
		{CatalogName("Sch", "T x"), `"Sch"."T x"`, `"Sch"."T x"`},
	} {
		if got := c.in.Text(quote); got != c.text {
			t.Errorf("%#v.Text = %s, want %s", c.in, got, c.text)
		}
		f := c.in.Folded(lower)
		if got := f.Quote(quote); got != c.folded || f.Text(quote) != c.folded {
			t.Errorf("%#v.Folded: Quote %s, Text %s; want %s", c.in, got, f.Text(quote), c.folded)
		}
		if !f.SameName(f.Folded(strings.ToUpper)) {
			t.Errorf("%#v.Folded folded again: %#v", c.in, f.Folded(strings.ToUpper))
		}
	}
}
