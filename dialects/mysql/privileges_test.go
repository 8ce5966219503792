package mysql

import (
	"strings"
	"testing"
)

func TestParseAccount(t *testing.T) {
	for in, want := range map[string]account{
		"app":                  {"app", "%"},
		"app@localhost":        {"app", "localhost"},
		"'app'@'10.0.0.%'":     {"app", "10.0.0.%"},
		"`app`@`%`":            {"app", "%"},
		" app@127.0.0.1 ":      {"app", "127.0.0.1"},
		"'o''brien'@'h'":       {"o'brien", "h"},
		"user@with@at@example": {"user@with@at", "example"},
	} {
		if got := parseAccount(in); got != want {
			t.Errorf("parseAccount(%q) = %+v, want %+v", in, got, want)
		}
	}
	if got := accountSQL(parseAccount("o'brien@h")); got != `'o''brien'@'h'` {
		t.Errorf("accountSQL = %s", got)
	}
}

func TestOwnedDDL(t *testing.T) {
	ddl := Dialect.(interface {
		OwnedDDL([]string, string) []string
	}).OwnedDDL([]string{
		"DROP TRIGGER IF EXISTS `fencedsql_guard_t`",
		"CREATE TRIGGER `fencedsql_guard_t` BEFORE UPDATE ON `t` FOR EACH ROW\nBEGIN END",
		"CREATE TABLE IF NOT EXISTS `fencedsql_tomb_t` (id BIGINT)",
	}, "fencedsql_owner")
	if ddl[0] != "DROP TRIGGER IF EXISTS `fencedsql_guard_t`" || ddl[2] != "CREATE TABLE IF NOT EXISTS `fencedsql_tomb_t` (id BIGINT)" {
		t.Errorf("OwnedDDL changed other statements: %q", ddl)
	}
	if !strings.HasPrefix(ddl[1], "CREATE DEFINER = 'fencedsql_owner'@'%' TRIGGER `fencedsql_guard_t` BEFORE UPDATE") {
		t.Errorf("OwnedDDL: %q", ddl[1])
	}
	if !recreated(ddl, "`fencedsql_guard_t`") || recreated(ddl, "`fencedsql_tombdel_t`") {
		t.Error("recreated")
	}
}
