package postgres

import (
	"crypto/sha256"
	"encoding/hex"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestGuardFunctionTextPinned: guardFunctions compares the installed functions with
// this version's text whole, so a change to the text that keeps the markers would
// report every guard the release before installed as changed (ErrSchema until
// reinstalled). A changed text must come with a new guardVersion (the trigger
// function) or oneStepMarker (the fences); then update the pin below.
func TestGuardFunctionTextPinned(t *testing.T) {
	pins := map[string]string{
		guardVersion + " / " + oneStepMarker: "23985c3b05ba8a30cfced386039c78dbdba021333bf23f69c692687e8eab6fc9",
	}
	ddl := dialectImpl{}.guardFunctionDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	sum := sha256.Sum256([]byte(strings.Join(ddl, "\n")))
	got := hex.EncodeToString(sum[:])
	key := guardVersion + " / " + oneStepMarker
	if want, ok := pins[key]; !ok || want != got {
		t.Fatalf("the guard's function text for %q hashes to %s, pinned %q: a changed text needs a new guardVersion or oneStepMarker (installed guards of the release before would be reported as changed), then a new pin", key, got, pins[key])
	}
	// The previous version's trigger function, which the guard-writer check still
	// recognises by its exact text (ownGuardTextSQL, red-team rt58b): guard v7 as the
	// release before installed it.
	prev := dialectImpl{}.guardTriggerDDL(guardVersionNumber-1, dialect.TableName{Name: "accounts"}, "fence_token", "version")
	sum = sha256.Sum256([]byte(prev))
	if got, want := hex.EncodeToString(sum[:]), "25d2651bae2d3a1adb6c6323671e1852cea9e4bfba1ffa9f92b338b7454cd2cd"; got != want {
		t.Fatalf("the previous guard function's text hashes to %s, pinned %s: it must stay the text the release before installed", got, want)
	}
}

// TestOwnFunctionText: the template with its placeholders replaced for any schema
// spelling (as quote_ident writes it; the floor's copy in a quote_literal string) is
// recognised with that schema; one character changed anywhere is not.
func TestOwnFunctionText(t *testing.T) {
	ddl := dialectImpl{}.guardFunctionDDL(dialect.TableName{Name: "accounts"}, "fence_token", "version")
	for _, create := range ddl {
		tmpl := createBody(create)
		if tmpl == "" {
			t.Fatalf("createBody found no body in %q", create)
		}
		for _, schema := range []string{"public", `"odd'sch\ema"`, `"a""b"`, `"x.fencedsql_floor"`} {
			src := strings.ReplaceAll(tmpl, floorPlaceholder, schema+"."+dialect.FloorTable)
			src = strings.ReplaceAll(src, floorSeqPlaceholder, quoteLiteral(schema+"."+floorSeq))
			src = strings.ReplaceAll(src, schemaPlaceholder, schema)
			if got, ok := ownFunctionText(src, tmpl); !ok || got != schema {
				t.Errorf("schema %s: ownFunctionText = %q, %v", schema, got, ok)
			}
			for _, i := range []int{0, len(src) / 3, len(src) / 2, len(src) - 1} {
				changed := src[:i] + "X" + src[i+1:]
				if _, ok := ownFunctionText(changed, tmpl); ok {
					t.Errorf("schema %s: a text changed at %d is taken for the guard's", schema, i)
				}
			}
			if _, ok := ownFunctionText(src+" ", tmpl); ok {
				t.Errorf("schema %s: a text with a character appended is taken for the guard's", schema)
			}
		}
	}
	// A schema position holding anything but one identifier is not the guard's text,
	// even where the text repeats it consistently.
	tmpl := createBody(ddl[0])
	for _, schema := range []string{"(SELECT 1) AS x, public", "public f, public", `"a"b"`, "Public", ""} {
		src := strings.ReplaceAll(tmpl, floorPlaceholder, schema+"."+dialect.FloorTable)
		src = strings.ReplaceAll(src, floorSeqPlaceholder, quoteLiteral(schema+"."+floorSeq))
		src = strings.ReplaceAll(src, schemaPlaceholder, schema)
		if _, ok := ownFunctionText(src, tmpl); ok {
			t.Errorf("schema %q: a text with an expression for the schema is taken for the guard's", schema)
		}
	}
	for _, s := range []string{"public.fencedsql_floor_seq", `"odd'sch\ema".x`, `a\\b`, "''"} {
		if got, ok := unquoteLiteral(quoteLiteral(s)); !ok || got != s {
			t.Errorf("unquoteLiteral(quoteLiteral(%q)) = %q, %v", s, got, ok)
		}
	}
	for _, q := range []string{"'a", "a'", "'a'b'", `E'a\b'`, "Eab"} {
		if _, ok := unquoteLiteral(q); ok {
			t.Errorf("unquoteLiteral(%q) accepted a text quote_literal does not write", q)
		}
	}
}
