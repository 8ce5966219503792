package mysql

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The guards' own trigger bodies — of the table and of another guarded table of the
// database — are no guard writers (guardTables): they read the floor and write only
// their own table's tombstone table, so no guarded database is refused for its guards.
func TestGuardTriggersWriteNoOtherGuardTable(t *testing.T) {
	d := dialectImpl{}
	key := []dialect.KeyColumn{{Name: "id", Type: "bigint(20)"}}
	for _, table := range []string{"accounts", "other", "accounts2", strings.Repeat("x", 70)} {
		tn := dialect.TableName{Schema: "app", Name: table}
		ddl := append(d.GuardDDL(tn, "fence_token", "version"), d.TombstoneDDL(tn, key, "fence_token")...)
		for _, q := range ddl {
			if !strings.HasPrefix(q, "CREATE TRIGGER ") {
				continue
			}
			_, body, ok := strings.Cut(q, " FOR EACH ROW\n")
			if !ok {
				t.Fatalf("no body in %q", q)
			}
			if dialect.WritesTable(body, dialect.MySQLSyntax, dialect.FloorTable) {
				t.Errorf("%s: a guard trigger counts as writing the floor: %s", table, body)
			}
			if own := tombTable(tn).Name; table != "accounts" && dialect.WritesTable(body, dialect.MySQLSyntax, tombTable(dialect.TableName{Name: "accounts"}).Name) {
				t.Errorf("%s (tombstone table %s): a guard trigger counts as writing accounts' tombstone table: %s", table, own, body)
			}
		}
	}
}
