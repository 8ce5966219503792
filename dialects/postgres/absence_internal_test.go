package postgres

import (
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The recorder's call casts each key value to its column's type without modifiers,
// and an integer literal outside the column's type records nothing (rt44a F2, F3).
func TestAbsenceCallTypesItsArguments(t *testing.T) {
	for in, want := range map[string]string{
		"bigint": "bigint", "character varying(10)": "character varying", "character varying(10)[]": "character varying[]",
		"numeric(10,2)": "numeric", "timestamp(3) with time zone": "timestamp with time zone", `"my(3)type"`: `"my(3)type"`,
		`app."T(1)"(4)`: `app."T(1)"`,
		// rt45b F6: lengthless character and bit mean a length of 1 in a cast.
		"character(3)": "bpchar", "character(3)[]": "bpchar[]", "bit(3)": `"bit"`, "bit(3)[]": `"bit"[]`,
		"bit varying(3)": "bit varying", `"char"`: `"char"`,
	} {
		if got := baseType(in); got != want {
			t.Errorf("baseType(%q) = %q, want %q", in, got, want)
		}
	}
	key := []dialect.KeyColumn{{Name: "Region", Type: "character varying(8)"}, {Name: "n", Type: "integer"}}
	q, args, ok := dialectImpl{}.AbsenceCall(dialect.TableName{Schema: "shop", Name: "Pair"}, key, []any{"eu", "7"}, 60, true)
	if !ok || q != `SELECT "shop"."fencedsql_tombclaim_pair"($1::character varying, $2::integer, $3::pg_catalog.int8, $4::pg_catalog.bool)` || len(args) != 4 || args[2] != int64(60) || args[3] != true {
		t.Fatalf("AbsenceCall: %q %v %v", q, args, ok)
	}
	for _, v := range []string{"2147483648", "-2147483649", "99999999999999999999999"} {
		if _, _, ok := (dialectImpl{}).AbsenceCall(dialect.TableName{Name: "pair"}, key, []any{"eu", v}, 60, false); ok {
			t.Errorf("integer key value %s records", v)
		}
	}
	if _, _, ok := (dialectImpl{}).AbsenceCall(dialect.TableName{Name: "pair"}, key, []any{"eu", int64(1) << 40}, 60, false); !ok {
		t.Error("a bound value is the server's to judge")
	}
}

// The guard-writer check recognises the recorder's exact text only (ownAbsence), built
// from the catalog's key (red-team rt45a F3): a text with the key's columns in another
// order, or another table's, is not the guard's own.
func TestOwnAbsenceExactText(t *testing.T) {
	d := dialectImpl{}
	table := dialect.TableName{Schema: "shop", Name: "pair"}
	key := []dialect.KeyColumn{{Name: "Region", Type: "text", Equals: "public.="}, {Name: "n", Type: "integer"}}
	tomb, tbl, tok := tombTable(table).Quote(d.QuoteIdent), table.Quote(d.QuoteIdent), d.QuoteIdent("fence_token")
	ddl := d.absenceDDL(table, key, tomb, tbl, tok)
	src := ddl[1][strings.Index(ddl[1], "$fencedsql$")+len("$fencedsql$") : strings.LastIndex(ddl[1], "$fencedsql$")]
	if !d.ownAbsence(src, key, tomb, tbl, tok) {
		t.Fatalf("own recorder not recognised:\n%s", src)
	}
	for _, bad := range []string{
		strings.Replace(src, "RETURN 1;", "DELETE FROM "+tomb+"; RETURN 1;", 1),
		strings.Replace(src, `x."n" = $2`, `x."n" = $2 OR true`, 1),
		strings.Replace(src, "IF NOT pg_catalog.has_any_column_privilege", "IF false AND pg_catalog.has_any_column_privilege", 1),
		strings.Replace(src, "IF fencedsql_newer > $3 THEN", "IF false THEN", 1),                                            // rt44e F2's fence
		strings.Replace(src, "AND NOT c.collisdeterministic", "AND false", 1),                                               // rt45a F2's rule
		strings.Replace(src, "IF pg_catalog.row_security_active(", "IF false AND pg_catalog.row_security_active(", 1),       // rt48h F2's refusal
		strings.ReplaceAll(src, `("Region", "n"`, `("n", "Region"`),                                                         // rt45a F3: the key list swapped
		d.absenceBodyFor(absenceVersionNumber, []dialect.KeyColumn{key[1], key[0]}, tomb, tbl, tok),                         // the same, throughout
		d.absenceBodyFor(absenceVersionNumber, []dialect.KeyColumn{{Name: "Region", Type: "text"}, key[1]}, tomb, tbl, tok), // another equality
	} {
		if bad == src || d.ownAbsence(bad, key, tomb, tbl, tok) {
			t.Errorf("altered recorder recognised as own:\n%s", bad)
		}
	}
	// The earlier versions' texts are the guard's own until the Fix re-creates them.
	for v := 2; v < absenceVersionNumber; v++ {
		if old := d.absenceBodyFor(v, key, tomb, tbl, tok); old == src || !d.ownAbsence(old, key, tomb, tbl, tok) {
			t.Errorf("recorder v%d not recognised:\n%s", v, old)
		}
	}
	if d.ownAbsence(src, key, tombTable(dialect.TableName{Schema: "shop", Name: "other"}).Quote(d.QuoteIdent), tbl, tok) {
		t.Error("recorder of another tombstone table recognised")
	}
}
