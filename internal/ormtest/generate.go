package ormtest

// The ent client of the ent tests (./ent) is generated from ./entschema and checked in;
// scripts/test.sh fails in CI when regenerating it changes anything. The version is
// go.mod's entgo.io/ent: change both together.
//go:generate go run entgo.io/ent/cmd/ent@v0.14.5 generate --feature sql/lock --target ./ent ./entschema
