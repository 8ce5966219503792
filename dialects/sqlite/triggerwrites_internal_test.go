package sqlite

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestMayNameNeverHidesAWrite: mayName is only a shortcut of dialect.WritesTable; for
// every spelling SQLite accepts of a write to the table (any case, any quoting, a
// string read as a name, dynamic text) it must not answer false where the full test
// answers true, and it answers false for a text that cannot name the table.
func TestMayNameNeverHidesAWrite(t *testing.T) {
	bodies := []string{
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM fencedsql_tomb_Acc; END`,
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM "FENCEDSQL_TOMB_ACC"; END`,
		"CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM `fencedsql_tomb_acc`; END",
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM [fencedsql_tomb_acc]; END`,
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM 'fencedsql_tomb_acc'; END`,
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM main.fencedsql_tomb_acc WHERE 1; END`,
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN UPDATE/**/fencedsql_tomb_acc SET fence_token=0; END`,
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM fencedsql_tomb_ACC; SELECT 'é'; END`,
		"CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM fencedsql_tomb_\u212Acc; END", // Kelvin sign: not SQLite's name, left to the full test
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM other; END`,
		`CREATE TRIGGER x AFTER INSERT ON a BEGIN DELETE FROM fencedsql_tomb_ac; END`,
	}
	for _, name := range []string{"fencedsql_tomb_acc", "fencedsql_floor", `we"ird`, "t$1"} {
		for _, b := range bodies {
			full := dialect.WritesTable(triggerBody(b), dialect.SQLiteSyntax, name)
			if full && !mayName(b, name) {
				t.Errorf("mayName(%q, %q) = false, but the body writes it", b, name)
			}
			if got := triggerWrites(b, name); got != full {
				t.Errorf("triggerWrites(%q, %q) = %v, the full test %v", b, name, got, full)
			}
		}
	}
	for _, c := range []struct {
		src, name string
		want      bool
	}{
		{`DELETE FROM other`, "fencedsql_tomb_acc", false},
		{`DELETE FROM fencedsql_tomb_ac`, "fencedsql_tomb_acc", false},
		{`DELETE FROM "FencedSQL_Tomb_Acc"`, "fencedsql_tomb_acc", true},
		{`DELETE FROM other -- é`, "fencedsql_tomb_acc", true}, // a byte outside ASCII: the full test decides
		{`DELETE FROM other`, `we"ird`, true},                  // a name with a quote character: the full test decides
		{`DELETE FROM other`, "", false},
	} {
		if got := mayName(c.src, c.name); got != c.want {
			t.Errorf("mayName(%q, %q) = %v, want %v", c.src, c.name, got, c.want)
		}
	}
}
