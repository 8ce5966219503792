package mysql

import "testing"

// The names classify reads from messages in each language the server ships
// (share/errmsg-utf8.txt's forms of 1048 and 1062).
func TestClassifyTextLocales(t *testing.T) {
	for _, c := range []struct{ msg, want string }{
		{"Column 'fence_token' cannot be null", "fence_token"},
		{"Feld 'fence_token' darf nicht NULL sein", "fence_token"},
		{"列 'version' は null にできません。", "version"},
		{"列'version'不能为NULL", "version"},
		{"A(z) 'fence_token' oszlop erteke nem lehet nulla", "fence_token"},
		{"Column 'it''s' cannot be null", "it''s"},
		{"no quote", ""},
	} {
		if got := nullColumn(c.msg); got != c.want {
			t.Errorf("nullColumn(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
	for _, c := range []struct{ msg, want string }{
		{"Duplicate entry '8' for key 'lm_u_code'", "lm_u_code"},
		{"Duplicate entry 'a'b' for key 'k'", "k"},
		{"Doppelter Eintrag '8' für Schlüssel 'lm_u_code'", "lm_u_code"},
		{"'8' は索引 'lm_u_code' で重複しています。", "lm_u_code"},
		{"Zvojený klíč '8' (číslo klíče 'lm_u_code')", "lm_u_code"},
		{"Doppelter Eintrag '8' für Schlüssel 1", ""},
	} {
		if got := duplicateKey(c.msg); got != c.want {
			t.Errorf("duplicateKey(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
	for _, c := range []struct{ msg, want string }{
		{"Unknown column 'fence_token' in 'SET'", "fence_token"},
		{"Unknown column 'acc.version' in 'where clause'", "acc.version"},
		{"Unbekannte Tabellenspalte 'fence_token' in field list", "fence_token"},
		{"Table 'db.fencedsql_floor' doesn't exist", "db.fencedsql_floor"},
		{"Tabelle 'db.fencedsql_floor' existiert nicht", "db.fencedsql_floor"},
		{"no quote", ""},
	} {
		if got := firstQuoted(c.msg); got != c.want {
			t.Errorf("firstQuoted(%q) = %q, want %q", c.msg, got, c.want)
		}
	}
}
