package postgres

import (
	"context"
	"database/sql"
	"strconv"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestOwnGuardTextSQL: the guard-writer check's condition "the guard's own trigger
// function, for some fencing columns and floor schema" holds for the text the guard
// installs — fencing columns of any spelling PostgreSQL allows, in a schema whose name
// needs quoting — and for nothing else: one character changed, or a column position
// holding an expression instead of one identifier, makes it false. The previous
// version's text is recognised as well (red-team rt58b: an upgraded database's guards
// of guard v7 must not stop every guarded table's writes until each is re-installed).
func TestOwnGuardTextSQL(t *testing.T) {
	db := testdb.Open(t, "pgx", testdb.Postgres(t))
	ctx := context.Background()
	d := dialectImpl{}
	_, n := d.ownGuardTextSQL("", 1)
	cond, args := d.ownGuardTextSQL("$"+strconv.Itoa(len(n)+1)+"::text", 1)
	holds := func(src string) bool {
		t.Helper()
		var ok sql.NullBool
		if err := db.QueryRowContext(ctx, "SELECT "+cond, append(args, src)...).Scan(&ok); err != nil {
			t.Fatal(err)
		}
		return ok.Valid && ok.Bool
	}
	for _, c := range []struct {
		v                int
		tok, ver, schema string
	}{
		{guardVersionNumber, "fence_token", "version", "public"},
		{guardVersionNumber, "Tok", "V", `"odd'sch\ema"`},
		{guardVersionNumber, `a"b`, "ver sion", `"We""ird"`},
		{guardVersionNumber - 1, "fence_token", "version", "public"},
		{guardVersionNumber - 1, `a"b`, "ver sion", `"We""ird"`},
	} {
		text := createBody(d.guardTriggerDDL(c.v, dialect.TableName{Name: "acc"}, c.tok, c.ver))
		text = strings.ReplaceAll(text, floorPlaceholder, c.schema+"."+dialect.FloorTable)
		text = strings.ReplaceAll(text, floorSeqPlaceholder, quoteLiteral(c.schema+"."+floorSeq))
		text = strings.ReplaceAll(text, schemaPlaceholder, c.schema)
		if !holds(text) {
			t.Errorf("columns %q/%q, schema %s: the guard's own text is not recognised", c.tok, c.ver, c.schema)
		}
		for _, i := range []int{1, len(text) / 4, len(text) / 2, len(text) - 2} {
			if holds(text[:i] + "X" + text[i+1:]) {
				t.Errorf("columns %q/%q: a text changed at %d is taken for the guard's", c.tok, c.ver, i)
			}
		}
		// An expression where the token column goes, the same in every place.
		q := d.QuoteIdent(c.tok)
		if holds(strings.ReplaceAll(text, q, q+" OPERATOR(pg_catalog.+) 0")) {
			t.Errorf("columns %q/%q: an expression in the token column's places is taken for the guard's", c.tok, c.ver)
		}
	}
	if holds("BEGIN /* " + guardVersion + " */ RETURN NEW; END") {
		t.Error("a text carrying only the marker is taken for the guard's")
	}
}
