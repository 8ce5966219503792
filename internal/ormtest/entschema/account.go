// Package entschema is the ent schema of the ORM suite's ent tests: the guarded
// accounts table (with the fencing columns and a unique email) and an unguarded
// customers table with a unique email. The generated client is ../ent; regenerate it
// with `go generate ./internal/ormtest/...` (CI checks that this changes nothing).
package entschema

import (
	"entgo.io/ent"
	"entgo.io/ent/schema/field"
)

// Account maps the suite's accounts table (created by the tests' DDL, not by ent's
// migrations). fence_token and version are declared as an application would declare
// NOT NULL DEFAULT 0 columns: ent sends their defaults on create and whatever a caller
// sets on update, and the fenced driver replaces both.
type Account struct{ ent.Schema }

// Fields of Account.
func (Account) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("id"),
		field.String("owner").Optional(),
		field.Int64("balance").Optional(),
		field.String("email").Optional().Nillable().Unique(),
		field.Int64("fence_token").Default(0),
		field.Int64("version").Default(0),
	}
}

// Customer maps an unguarded table with a unique column: duplicates there must look
// the same to ent as on guarded tables.
type Customer struct{ ent.Schema }

// Fields of Customer.
func (Customer) Fields() []ent.Field {
	return []ent.Field{
		field.Int64("id"),
		field.String("email").Unique(),
	}
}
