package mysql

import (
	"reflect"
	"testing"
)

// TestNamedLibraryVars: every spelling the server takes for one of the library's user
// variables is found (red-team rt58e F2's class), and others are not.
func TestNamedLibraryVars(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string
	}{
		{"SET @fencedsql_replace_mark_4a0d := '9/1'", []string{"fencedsql_replace_mark_4a0d"}},
		{"SET @FencedSQL_Delete_Mark = 1", []string{"fencedsql_delete_mark"}},
		{"SET @`fencedsql_delete_mark` := 1", []string{"fencedsql_delete_mark"}},
		{"SELECT 1 INTO @'fencedsql_x'", []string{"fencedsql_x"}},
		{`SET @"fencedsql_x" := 1`, []string{"fencedsql_x"}},
		{`SET @'\fencedsql\_x' := 1`, []string{"fencedsql_x"}},
		{"SET @x := 1 /*!50000 , @fencedsql_y := 2 */", []string{"fencedsql_y"}},
		{"PREPARE s FROM 'SET @''fencedsql_z'' := 1'", []string{"fencedsql_z"}},
		{"SET @@fencedsql_w := 1", []string{"fencedsql_w"}},
		{"SET @ｆencedsql_v := 1", []string{"fencedsql_v"}}, // a fold the server's collation may make
		{"SET NEW.updated_at := NOW(), @audit_user := CURRENT_USER()", nil},
		{"SET @fenced := 1, @fencedsq := 2", nil},
	} {
		if got := namedLibraryVars(c.src); !reflect.DeepEqual(got, c.want) {
			t.Errorf("namedLibraryVars(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}

// TestGuardReadVars: only the variables a guard reads are doors (strangeVars): the
// DELETE mark and any table's REPLACE mark, in any spelling; the library's other
// variables — lockclient/sqllock's lease procedures set @fencedsql_sqllock_primary_until
// beside the guarded tables (the drill's sqllock runs), the wrapper's claim variables —
// are not.
func TestGuardReadVars(t *testing.T) {
	for _, c := range []struct {
		src  string
		want []string
	}{
		{"SET @fencedsql_sqllock_primary_until := NOW(6) + INTERVAL 1 SECOND", nil},
		{"SELECT @fencedsql_claim, @fencedsql_claimed", nil},
		{"SET @`FencedSQL_Delete_Mark` := 1", []string{"@fencedsql_delete_mark"}},
		{`SET @'\fencedsql_replace_mark_00ff' := '1/2:AB'`, []string{"@fencedsql_replace_mark_00ff"}},
		{"SET @fencedsql_replace_mark_" + replaceMarkVar("ledger")[len("@fencedsql_replace_mark_"):] + " := 1", nil}, // own
	} {
		if got := strangeVars(c.src, map[string]bool{replaceMarkVar("ledger")[1:]: true}); !reflect.DeepEqual(got, c.want) {
			t.Errorf("strangeVars(%q) = %q, want %q", c.src, got, c.want)
		}
	}
}

// TestOwnMarkVars: the guards' own trigger names, and their shadows, allow the DELETE
// mark and the REPLACE mark of the table they are named for; nothing else is allowed.
func TestOwnMarkVars(t *testing.T) {
	rep := replaceMarkVar("ledger")[1:]
	for _, name := range []string{"fencedsql_tombrep_ledger", "fencedsql_tombdel_ledger", "fencedsql_next_fencedsql_tombrep_ledger"} {
		own := ownMarkVars(name, "ledger")
		if !own[rep] || !own["fencedsql_delete_mark"] || len(own) != 2 {
			t.Errorf("ownMarkVars(%s) = %v", name, own)
		}
	}
	if own := ownMarkVars("audit_ins", "ledger"); len(own) != 0 {
		t.Errorf("ownMarkVars(audit_ins) = %v, want none", own)
	}
	if own := ownMarkVars("fencedsql_tombrep_other", "ledger"); own[rep] {
		t.Errorf("a trigger named for other allows ledger's REPLACE mark: %v", own)
	}
}
