package postgres

import "testing"

// TestBodyReadingsStandardConformingStrings: every body reader judges an SQL or
// PL/pgSQL body under standard_conforming_strings on and off and keeps the worse
// verdict (red-team rt47a F1): a statement between two literals of one quote escaped
// by a backslash, which the "on" reading takes for a string and the server with the
// setting off runs, is seen by keepsRow, bodyWrites and guardWrites; a body whose
// backslashes read the same either way (a regular expression, an E'…' literal) keeps
// its verdict.
func TestBodyReadingsStandardConformingStrings(t *testing.T) {
	in := func(stmt string) string {
		return `DECLARE x text; BEGIN x := '\''; ` + stmt + `; x := '\''; RETURN NEW; END`
	}
	if len(bodyReadings("BEGIN RETURN NEW; END")) != 1 || len(bodyReadings(in("NULL"))) != 2 {
		t.Fatalf("bodyReadings: one reading without a backslash, two with one")
	}
	for _, c := range []struct {
		name, src string
		keepsNew  bool // plpgsqlKeepsNew
		keepsIns  bool // plpgsqlKeepsInsert
	}{
		{"ReturnOldHidden", in("RETURN OLD"), false, true},
		{"NewReplacedHidden", in("NEW := ROW(NEW.id, 1)"), false, false},
		{"NullHidden", in("RETURN NULL"), false, true},
		{"Harmless", in("NEW.balance := 1"), true, true},
		{"Regex", `BEGIN IF NEW.code !~ '^\d+$' THEN RAISE EXCEPTION 'bad code'; END IF; RETURN NEW; END`, true, true},
		{"EString", `BEGIN NEW.note := E'a\'b'; RETURN NEW; END`, true, true},
	} {
		if got := plpgsqlKeepsNew(c.src); got != c.keepsNew {
			t.Errorf("%s: plpgsqlKeepsNew(%q) = %v, want %v", c.name, c.src, got, c.keepsNew)
		}
		if got := plpgsqlKeepsInsert(c.src); got != c.keepsIns {
			t.Errorf("%s: plpgsqlKeepsInsert(%q) = %v, want %v", c.name, c.src, got, c.keepsIns)
		}
	}

	names := []string{"accounts"}
	for _, c := range []struct {
		name, src string
		writes    bool
	}{
		{"DeleteHidden", in("DELETE FROM accounts"), true},
		{"UpdateHidden", in("UPDATE public.accounts SET balance = 0"), true},
		{"DynamicPlainEscape", `BEGIN EXECUTE 'DELETE FROM ' || quote_ident('\x61ccounts'); RETURN NULL; END`, true},
		{"DynamicUnicodeInDollar", `BEGIN EXECUTE $q$DELETE FROM U&"\0061ccounts"$q$; RETURN NULL; END`, true},
		{"RegexNoExecute", `BEGIN IF NEW.code !~ '^\d+$' THEN RAISE EXCEPTION 'bad'; END IF; PERFORM 1 FROM accounts; RETURN NEW; END`, false},
		{"OtherTable", in("DELETE FROM audit"), false},
	} {
		if _, got := bodyWrites(c.src, "plpgsql", names); got != c.writes {
			t.Errorf("%s: bodyWrites(%q) = %v, want %v", c.name, c.src, got, c.writes)
		}
	}

	for _, c := range []struct {
		name, src string
		wrote     int
	}{
		{"TombHidden", in("DELETE FROM public.fencedsql_tomb_accounts"), 1},
		{"FloorHidden", in("UPDATE fencedsql_floor SET floor = 0"), 1},
		{"SeqHidden", in(`PERFORM setval(U&"\0066encedsql_floor_seq"::regclass, 0)`), 1},
		{"Neither", in("DELETE FROM audit"), 0},
	} {
		if got := guardWrites(c.src, "fencedsql_tomb_accounts", guardFunctionNames("accounts")); len(got) != c.wrote {
			t.Errorf("%s: guardWrites(%q) = %q, want %d objects", c.name, c.src, got, c.wrote)
		}
	}
	if !namesUnderEveryReading(in(`NEW.x := 1; NEW.U&"\0066ence_token" := 9`), "fence_token") {
		t.Errorf("namesUnderEveryReading: a U&\"…\" column name hidden by '\\'' not seen")
	}
}
