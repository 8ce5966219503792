package schema_test

import (
	"context"
	"slices"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
)

// WithoutTombstones leaves out the tombstone guard and nothing else (red-team rt44b
// F1: -tombstones=false hid the dialect's Tombstoner behind a wrapper that also hid
// the lint, the replication report and the lost-floor check). Whatever the other
// checks find on the same tables — the missing guard, an updatable view, a cascading
// foreign key, a table without a primary key — is reported alike; only the tombstone
// problems and fixes go, and a note says that the tombstone guard was not checked.
func TestWithoutTombstonesKeepsEveryOtherCheck(t *testing.T) {
	ctx := context.Background()
	db := schemaDB(t)
	schemaExec(t, db,
		`CREATE TABLE acc (id INTEGER PRIMARY KEY, fence_token BIGINT, version BIGINT)`,
		`CREATE VIEW acc_v AS SELECT * FROM acc`,
		`CREATE TRIGGER acc_v_upd INSTEAD OF UPDATE ON acc_v BEGIN UPDATE acc SET id = NEW.id WHERE id = OLD.id; END`,
		`CREATE TABLE line (id INTEGER PRIMARY KEY, acc_id INTEGER REFERENCES acc(id) ON DELETE CASCADE, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`,
		`CREATE TABLE nokey (x INTEGER, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)`)
	specs := []schema.GuardSpec{{Table: "acc"}, {Table: "nokey"}}
	full, err := schema.Check(ctx, db, sqlite.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	without, err := schema.Check(schema.WithoutTombstones(ctx), db, sqlite.Dialect, specs...)
	if err != nil {
		t.Fatal(err)
	}
	tomb := func(s string) bool {
		s = strings.ToLower(s)
		return strings.Contains(s, "tomb") || strings.Contains(s, "primary key") || strings.Contains(s, "resurrect")
	}
	for i := range full {
		f, w := full[i], without[i]
		var kept []string
		for _, p := range f.Problems {
			if !tomb(p) {
				kept = append(kept, p)
			}
		}
		if !slices.Equal(kept, w.Problems) {
			t.Errorf("%s: problems without tombstones\n%q\nwant the full check's other than the tombstone ones\n%q", f.Table, w.Problems, kept)
		}
		var keptFix []string
		for _, s := range f.Fix {
			if !strings.Contains(strings.ToLower(s), "tomb") {
				keptFix = append(keptFix, s)
			}
		}
		if !slices.Equal(keptFix, w.Fix) {
			t.Errorf("%s: fix without tombstones\n%q\nwant\n%q", f.Table, w.Fix, keptFix)
		}
		if len(w.SideDoors) != len(f.SideDoors) {
			t.Errorf("%s: %d side doors without tombstones, %d with", f.Table, len(w.SideDoors), len(f.SideDoors))
		}
		if !slices.ContainsFunc(w.Notes, func(n string) bool { return strings.Contains(n, "tombstone guard not checked") }) {
			t.Errorf("%s: no note that the tombstone guard was not checked: %q", f.Table, w.Notes)
		}
	}
	if len(full[0].Problems) <= len(without[0].Problems) || len(full[0].SideDoors) == 0 {
		t.Fatalf("the set-up should give tombstone problems and side doors: %+v", full[0])
	}
}
