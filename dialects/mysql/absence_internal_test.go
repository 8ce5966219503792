package mysql

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The side-door check recognises the recorder's exact text only (ownAbsence), built
// from the catalog's key (never a list read out of the text, red-team rt45a F3): this
// version's, whatever the token column's name, and the earlier ones' (v1, v2, kept by
// an upgraded database until the Fix); an altered text, or one with the key's columns
// in another order, is a user's routine.
func TestMySQLOwnAbsenceExactText(t *testing.T) {
	d := dialectImpl{}
	table := dialect.TableName{Name: "pair"}
	key := []dialect.KeyColumn{{Name: "Region", Type: "varchar(8)", Collation: "utf8mb4_general_ci"}, {Name: "n", Type: "int(11)"}}
	swapped := []dialect.KeyColumn{key[1], key[0]}
	for _, tokenCol := range []string{"fence_token", `it's \ tok`} {
		src := d.absenceBody(absenceVersion, table, key, tokenCol)
		if d.ownAbsence(src, table, key, tokenCol) != absenceVersion {
			t.Fatalf("own recorder (token column %q) not recognised:\n%s", tokenCol, src)
		}
		if d.ownAbsence(d.absenceBody(absenceVersion, table, swapped, tokenCol), table, key, tokenCol) != 0 {
			t.Errorf("recorder with the key's columns swapped recognised as own")
		}
		for _, bad := range []string{
			strings.Replace(src, "IF(fence_token > VALUES(fence_token), NULL, VALUES(fence_token))", "VALUES(fence_token)", 1),
			strings.Replace(src, "END IF;\nEND", "END IF;\n  DELETE FROM "+tombTable(table).Quote(d.QuoteIdent)+";\nEND", 1),
			strings.Replace(src, "FIND_IN_SET('STRICT_ALL_TABLES', @@SESSION.sql_mode) = 0", "FALSE", 1),
			strings.Replace(src, " < fencedsql_tok) FOR UPDATE", " < 0) FOR UPDATE", 1),
		} {
			if bad == src || d.ownAbsence(bad, table, key, tokenCol) != 0 {
				t.Errorf("altered recorder recognised as own:\n%s", bad)
			}
		}
	}
	for v := 1; v < absenceVersion; v++ {
		if old := d.absenceBody(v, table, key, "fence_token"); d.ownAbsence(old, table, key, "fence_token") != v {
			t.Errorf("recorder v%d not recognised:\n%s", v, old)
		}
	}
	if d.ownAbsence(d.absenceBody(absenceVersion, table, key, "fence_token"), dialect.TableName{Name: "other"}, key, "fence_token") != 0 {
		t.Error("recorder of another tombstone table recognised")
	}
}

// The recorder's parameters are judged against the catalog's key (red-team rt45a F3):
// each key value of its own type in key order, then the token.
func TestMySQLAbsenceParamsMatch(t *testing.T) {
	key := []dialect.KeyColumn{{Name: "Region", Type: "varchar(8)", Collation: "utf8mb4_unicode_ci"}, {Name: "n", Type: "bigint(20)"}, {Name: "b", Type: "varbinary(4)"}}
	good := [][]string{
		{"fencedsql_k1", "IN", "longtext", "utf8mb4", "utf8mb4_unicode_ci"},
		{"fencedsql_k2", "IN", "longtext", "utf8mb4", "utf8mb4_general_ci"},
		{"fencedsql_k3", "IN", "longblob", "", ""},
		{"fencedsql_tok", "IN", "bigint(20)", "", ""},
	}
	if !absenceParamsMatch(absenceVersion, key, good) {
		t.Fatal("own parameters refused")
	}
	change := func(i, j int, v string) [][]string {
		rows := make([][]string, len(good))
		for k := range good {
			rows[k] = append([]string(nil), good[k]...)
		}
		rows[i][j] = v
		return rows
	}
	for _, bad := range [][][]string{
		change(1, 2, "double"),
		change(0, 4, "utf8mb4_general_ci"),
		change(0, 3, "latin1"),
		change(3, 2, "bigint(20) unsigned"),
		change(2, 1, "INOUT"),
		{good[3], good[0], good[1], good[2]},
		good[:3],
		append(append([][]string(nil), good...), []string{"x", "IN", "int(11)", "", ""}),
	} {
		if absenceParamsMatch(absenceVersion, key, bad) {
			t.Errorf("parameters %v accepted", bad)
		}
	}
}

// An over-long claimed value records nothing only under a collation where no longer
// value equals a storable key (red-team rt45a F2); otherwise the recorder refuses it.
func TestMySQLAbsenceOverlongByCollation(t *testing.T) {
	d := dialectImpl{}
	table := dialect.TableName{Name: "k"}
	for coll, faithful := range map[string]bool{
		"": true, "utf8mb4_bin": true, "utf8mb4_nopad_bin": true, "utf8mb4_general_ci": true, "latin1_swedish_ci": true, "utf8mb4_general_nopad_ci": true,
		"utf8mb4_unicode_ci": false, "utf8mb4_unicode_520_ci": false, "utf8mb4_uca1400_ai_ci": false, "latin1_german2_ci": false, "utf8mb4_german2_ci": false,
	} {
		body := d.absenceBody(absenceVersion, table, []dialect.KeyColumn{{Name: "name", Type: "varchar(4)", Collation: coll}}, "fence_token")
		if got := !strings.Contains(body, dialect.AbsenceUnsupportedMark); got != faithful {
			t.Errorf("collation %q: records nothing for an over-long value: %v, want %v", coll, got, faithful)
		}
	}
}

// The recorder's COMMENT names its version (ownRecorder requires the body's version's
// marker), and its sql_mode must be strict.
func TestMySQLAbsenceMarkerAndStrictMode(t *testing.T) {
	if absenceMarkerOf(absenceVersion) != absenceMarker || markerVersion(absenceMarker) != absenceVersion {
		t.Fatalf("marker of version %d: %q, want %q", absenceVersion, absenceMarkerOf(absenceVersion), absenceMarker)
	}
	for v := 1; v <= absenceVersion; v++ {
		if markerVersion(absenceMarkerOf(v)) != v {
			t.Errorf("marker of v%d not recognised", v)
		}
	}
	if markerVersion("fencedsql absence recorder v9") != 0 || markerVersion("") != 0 {
		t.Error("an unknown marker recognised")
	}
	for mode, want := range map[string]bool{
		"STRICT_TRANS_TABLES,ERROR_FOR_DIVISION_BY_ZERO,NO_AUTO_CREATE_USER,NO_ENGINE_SUBSTITUTION": true,
		"NO_ENGINE_SUBSTITUTION,STRICT_ALL_TABLES":                                                  true,
		"":                       false,
		"NO_ENGINE_SUBSTITUTION": false,
		"STRICT_TRANS_TABLESX,A": false,
		"ANSI,NOT_STRICT_TABLES": false,
	} {
		if strictMode(mode) != want {
			t.Errorf("strictMode(%q) = %v, want %v", mode, !want, want)
		}
	}
}
