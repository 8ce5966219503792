package fencedsql_test

import (
	"testing"

	msqlite "modernc.org/sqlite"

	"github.com/fencedsql/fencedsql/dialects/sqlite"
	"github.com/fencedsql/fencedsql/fencedsql"
)

// rt30aRegisterTwice registers name with first, then with second, and returns what the
// second Register panicked with (nil for none).
func rt30aRegisterTwice(name string, first, second []fencedsql.Option) (p any) {
	fencedsql.Register(name, &msqlite.Driver{}, first...)
	defer func() { p = recover() }()
	fencedsql.Register(name, &msqlite.Driver{}, second...)
	return nil
}

// TestRTrt30aRegisterGuardOrder (over-refusal). Two packages (or one building its
// options from a map, whose iteration order is random) register the same name with the
// same guarded tables given in another order: Guard("accounts"), Guard("orders") and
// Guard("orders"), Guard("accounts"). The pools they open guard exactly the same
// tables, yet sameRegistration compares the guards slice element by element and the
// second Register panics with a *ConfigError ("configuration fields that differ:
// guards").
//
// Right behaviour: the guards are a set (keyed by table); the same set in another order
// (or a Guard repeated) is the same registration and the second Register does nothing.
func TestRTrt30aRegisterGuardOrder(t *testing.T) {
	d := fencedsql.WithDialect(sqlite.Dialect)
	p := rt30aRegisterTwice("rt30a-sqlite-order",
		[]fencedsql.Option{d, fencedsql.Guard("accounts"), fencedsql.Guard("orders")},
		[]fencedsql.Option{d, fencedsql.Guard("orders"), fencedsql.Guard("accounts")})
	if p != nil {
		t.Errorf("second Register with the same guards in another order panicked: %v; want it accepted as the same registration", p)
	}
}

// TestRTrt30aRegisterExplicitDefault (over-refusal). One package registers a name with
// WithDialect only; another, with the same dialect and WithStrict(false),
// WithSchemaCheck(true), WithDDL(false), WithDynamicSQL(false) — each the default. Every
// field that decides what is fenced resolves to the same value, but the bookkeeping
// field "explicit" (which settings an option named) differs, so the second Register
// panics ("configuration fields that differ: explicit").
//
// Right behaviour: options that resolve to the same configuration are the same
// registration (the doc comment of Register); at most, the explicit bits should be
// merged (they only make a contradicting DSN parameter an error).
func TestRTrt30aRegisterExplicitDefault(t *testing.T) {
	d := fencedsql.WithDialect(sqlite.Dialect)
	p := rt30aRegisterTwice("rt30a-sqlite-explicit",
		[]fencedsql.Option{d},
		[]fencedsql.Option{d, fencedsql.WithStrict(false), fencedsql.WithSchemaCheck(true), fencedsql.WithDDL(false), fencedsql.WithDynamicSQL(false)})
	if p != nil {
		t.Errorf("second Register with the defaults spelled out panicked: %v; want it accepted as the same registration", p)
	}
}
