package schema_test

import (
	"context"
	"errors"
	"path/filepath"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// A customisation of the stock dialect by embedding, layered (each layer adding a
// method override in real code): ten struct levels. The stock dialect, embedded as its
// dialect.Dialect interface at the bottom, is beyond dialect.Complete's walk, and the
// value bears the stock Name "sqlite".
type deepL0 struct{ dialect.Dialect }
type deepL1 struct{ deepL0 }
type deepL2 struct{ deepL1 }
type deepL3 struct{ deepL2 }
type deepL4 struct{ deepL3 }
type deepL5 struct{ deepL4 }
type deepL6 struct{ deepL5 }
type deepL7 struct{ deepL6 }
type deepL8 struct{ deepL7 }
type deepL9 struct{ deepL8 }

func deepStock() dialect.Dialect {
	return deepL9{deepL8{deepL7{deepL6{deepL5{deepL4{deepL3{deepL2{deepL1{deepL0{sqlite.Dialect}}}}}}}}}}
}

// Package schema holds a dialect to the name rule the wrapper applies
// (dialect.CompleteRegistered, red-team rt46c F1): a dialect bearing the stock Name
// whose stock base is out of the walk's sight (deeper than its bound) is refused —
// before, MaxToken answered the rows' largest token, skipping tombstones and the token
// floor, and Check reported no side door, with a nil error. A map-held stock dialect
// bearing the stock Name is refused too.
func TestSchemaHoldsDialectToNameRule(t *testing.T) {
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	d := deepStock()
	if d.Name() != "sqlite" {
		t.Fatalf("setup: Name %q", d.Name())
	}
	if err := dialect.Complete(d, sqlite.Dialect); err == nil {
		t.Fatalf("control: dialect.Complete with the name rule accepts the deep wrapper")
	}
	raw, spec := maxTokenFixture(t, ctx, "nr_acc",
		"CREATE TABLE nr_other (id INTEGER PRIMARY KEY, v INTEGER)",
		"CREATE TRIGGER nr_door AFTER UPDATE ON nr_other BEGIN UPDATE nr_acc SET balance = NEW.v WHERE id = NEW.id; END")
	got, err := schema.MaxToken(ctx, raw, d, spec)
	if err == nil {
		t.Errorf("MaxToken with a dialect bearing the stock Name and hiding its capabilities = %d, nil error (stock answer 1999); want a *schema.ConfigError as fencedsql.Open gives", got)
	}
	reps, err := schema.Check(ctx, raw, d, spec)
	if err == nil {
		doors := 0
		for _, r := range reps {
			doors += len(r.SideDoors)
		}
		t.Errorf("schema.Check with that dialect: nil error, %d side doors reported (the stock dialect reports the trigger door); want a *schema.ConfigError", doors)
	}
}

// mapHeld holds the stock dialect in a map, out of the walk's sight, and bears its Name.
type mapHeld struct{ m map[string]dialect.Dialect }

func (h mapHeld) Name() string                       { return h.m["d"].Name() }
func (h mapHeld) Syntax() dialect.Syntax             { return h.m["d"].Syntax() }
func (h mapHeld) NumberedParams() bool               { return h.m["d"].NumberedParams() }
func (h mapHeld) QuoteIdent(s string) string         { return h.m["d"].QuoteIdent(s) }
func (h mapHeld) Classify(e error) dialect.ErrorInfo { return h.m["d"].Classify(e) }
func (h mapHeld) SessionQuery() string               { return h.m["d"].SessionQuery() }
func (h mapHeld) CheckSession(s string) error        { return h.m["d"].CheckSession(s) }
func (h mapHeld) ColumnsQuery(t dialect.TableName) (string, []any) {
	return h.m["d"].ColumnsQuery(t)
}
func (h mapHeld) GuardColumnsDDL(t dialect.TableName, a, b string, c, d bool) []string {
	return h.m["d"].GuardColumnsDDL(t, a, b, c, d)
}

func TestSchemaHoldsMapHeldDialectToNameRule(t *testing.T) {
	d := mapHeld{map[string]dialect.Dialect{"d": sqlite.Dialect}}
	raw := testdb.Open(t, "sqlite", "file:"+filepath.ToSlash(filepath.Join(t.TempDir(), "m.db")))
	_, err := schema.MaxToken(context.Background(), raw, d, schema.GuardSpec{Table: "nr_acc"})
	var ce *schema.ConfigError
	var ie *dialect.IncompleteError
	if !errors.As(err, &ce) || !errors.As(err, &ie) || !ie.Named {
		t.Errorf("MaxToken with a map-held stock dialect bearing its Name: %v; want a *schema.ConfigError wrapping a named *dialect.IncompleteError", err)
	}
}
