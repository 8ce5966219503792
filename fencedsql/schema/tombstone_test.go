package schema_test

import (
	"context"
	"errors"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
)

// noTombstoner is a dialect with the guard but without tombstones (nor the other
// capabilities of the dialect it embeds, which it says it leaves out:
// dialect.Reduced).
type noTombstoner struct {
	dialect.Dialect
	dialect.Guarder
}

func (noTombstoner) OmittedCapabilities() []string {
	return dialect.MissingCapabilities(noTombstoner{}, sqlite.Dialect)
}

func TestCheckTombstones(t *testing.T) {
	ctx := context.Background()
	db := schemaDB(t)
	schemaExec(t, db,
		"CREATE TABLE fit (id INTEGER PRIMARY KEY, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
		"CREATE TABLE nokey (id BIGINT, fence_token BIGINT NOT NULL DEFAULT 0, version BIGINT NOT NULL DEFAULT 0)",
	)
	g := sqlite.Dialect.(dialect.Guarder)
	ts := sqlite.Dialect.(dialect.Tombstoner)
	schemaExec(t, db, g.GuardDDL(dialect.TableName{Name: "fit"}, "fence_token", "version")...)
	schemaExec(t, db, g.GuardDDL(dialect.TableName{Name: "nokey"}, "fence_token", "version")...)

	reps, err := schema.Check(ctx, db, sqlite.Dialect, schema.GuardSpec{Table: "fit"}, schema.GuardSpec{Table: "nokey"}, schema.GuardSpec{Table: "missing"})
	if err != nil {
		t.Fatal(err)
	}
	fit, nokey, missing := reps[0], reps[1], reps[2]
	want := ts.TombstoneDDL(dialect.TableName{Name: "fit"}, []dialect.KeyColumn{{Name: "id", Type: "INTEGER"}}, "fence_token")
	if fit.OK() || fit.Tombstoned || !slices.Equal(fit.PrimaryKey, []string{"id"}) || len(fit.Problems) != 1 || !slices.Equal(fit.Fix, want) {
		t.Errorf("fit = %+v", fit)
	}
	if nokey.OK() || len(nokey.Fix) != 0 || len(nokey.Problems) != 1 || !strings.HasPrefix(nokey.Problems[0], "no primary key") {
		t.Errorf("nokey = %+v", nokey)
	}
	if missing.Exists || len(missing.Problems) != 1 {
		t.Errorf("missing = %+v", missing)
	}
	schemaExec(t, db, fit.Fix...)
	reps, err = schema.Check(ctx, db, sqlite.Dialect, schema.GuardSpec{Table: "fit"})
	if err != nil || !reps[0].OK() || !reps[0].Tombstoned {
		t.Fatalf("after Fix: %+v, %v", reps, err)
	}

	// A plain DELETE leaves a tombstone that refuses a plain INSERT with an older token.
	schemaExec(t, db, "INSERT INTO fit (id, fence_token) VALUES (1, 7)", "DELETE FROM fit WHERE id = 1")
	_, err = db.Exec("INSERT INTO fit (id, fence_token) VALUES (1, 6)")
	if info := sqlite.Dialect.Classify(err); info.Kind != dialect.ErrorNotNull || info.Column != "fence_token" || info.Table != "fit" {
		t.Fatalf("stale INSERT: %v, classified %+v", err, info)
	}
	schemaExec(t, db, "INSERT INTO fit (id, fence_token) VALUES (1, 7)")
	if n, err := schema.PurgeTombstones(ctx, db, sqlite.Dialect, 0, "fit"); err != nil || n != 1 {
		t.Fatalf("PurgeTombstones = %d, %v", n, err)
	}

	// A dialect without Tombstoner.
	reps, err = schema.Check(ctx, db, noTombstoner{sqlite.Dialect, g}, schema.GuardSpec{Table: "fit"})
	if err != nil || reps[0].OK() || len(reps[0].Problems) != 1 || !strings.Contains(reps[0].Problems[0], "no tombstone guard available") {
		t.Fatalf("no Tombstoner: %+v, %v", reps, err)
	}
	var ce *schema.ConfigError
	if _, err := schema.PurgeTombstones(ctx, db, noTombstoner{sqlite.Dialect, g}, time.Hour); !errors.As(err, &ce) {
		t.Errorf("PurgeTombstones without Tombstoner: %v", err)
	}
	if _, err := schema.PurgeTombstones(ctx, db, sqlite.Dialect, time.Hour, "a;b"); !errors.As(err, &ce) {
		t.Errorf("PurgeTombstones with a bad schema: %v", err)
	}
}
