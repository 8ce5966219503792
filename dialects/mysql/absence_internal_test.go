package mysql

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The side-door check recognises the recorder's exact text only (ownAbsence): this
// version's, whatever the token column's name, and the previous one's (v1, kept by an
// upgraded database until the Fix); an altered text is a user's routine.
func TestMySQLOwnAbsenceExactText(t *testing.T) {
	d := dialectImpl{}
	table := dialect.TableName{Name: "pair"}
	key := []dialect.KeyColumn{{Name: "Region", Type: "varchar(8)"}, {Name: "n", Type: "int(11)"}}
	tomb, list := tombTable(table).Quote(d.QuoteIdent), d.keyList(key)
	for _, tokenCol := range []string{"fence_token", `it's \ tok`} {
		src := absenceBody(tomb, list, len(key), table.Name, tokenCol)
		if !d.ownAbsence(src, table) {
			t.Fatalf("own recorder (token column %q) not recognised:\n%s", tokenCol, src)
		}
		for _, bad := range []string{
			strings.Replace(src, "IF(fence_token > VALUES(fence_token), NULL, VALUES(fence_token))", "VALUES(fence_token)", 1),
			strings.Replace(src, "END IF;\nEND", "END IF;\n  DELETE FROM "+tomb+";\nEND", 1),
			strings.Replace(src, "FIND_IN_SET('STRICT_ALL_TABLES', @@SESSION.sql_mode) = 0", "FALSE", 1),
		} {
			if bad == src || d.ownAbsence(bad, table) {
				t.Errorf("altered recorder recognised as own:\n%s", bad)
			}
		}
	}
	if old := absenceBodyOf(1, tomb, list, len(key), table.Name, ""); !d.ownAbsence(old, table) {
		t.Errorf("previous recorder not recognised:\n%s", old)
	}
	if d.ownAbsence(absenceBody(tomb, list, len(key), table.Name, "fence_token"), dialect.TableName{Name: "other"}) {
		t.Error("recorder of another tombstone table recognised")
	}
}
