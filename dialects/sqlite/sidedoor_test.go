package sqlite

import "testing"

func TestMentions(t *testing.T) {
	for s, want := range map[string]bool{
		"UPDATE accounts SET x = 1":            true,
		`UPDATE "Accounts" SET x = 1`:          true,
		"UPDATE [accounts] SET x = 1":          true,
		"UPDATE main.accounts SET x = 1":       true,
		"UPDATE accounts_log SET x = 1":        false,
		"UPDATE my_accounts SET x = 1":         false,
		"UPDATE accounts2 SET x = 1; accounts": true,
		"":                                     false,
	} {
		if got := mentions(s, "accounts"); got != want {
			t.Errorf("mentions(%q) = %v, want %v", s, got, want)
		}
	}
}
