package sqllock

import (
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/lockclient"
)

// The lease table's name: parsed and validated once, quoted per dialect, and the names
// of the objects derived from it.

// maxNamePart bounds each part of the table name, so that the derived names
// (<table>_token_seq, <table>_token, <table>_grant_v1) fit PostgreSQL's 63- and MySQL's
// 64-character identifier limits.
const maxNamePart = 48

type tableName struct {
	schema string // optional
	name   string
}

func (t tableName) String() string {
	if t.schema != "" {
		return t.schema + "." + t.name
	}
	return t.name
}

// with returns the name of an object that lives next to the table.
func (t tableName) with(suffix string) tableName {
	return tableName{schema: t.schema, name: t.name + suffix}
}

// parseTable validates a lease table's name, the one check of it for every entry point
// (New's WithTable, DDL, DropDDL, CreateTable): a name that is not [schema.]name with
// each part 1 to maxNamePart letters, digits or '_', not starting with a digit, is an
// error wrapping lockclient.ErrInvalidConfig, and nothing is sent (red-team rt43e F2:
// DDL, DropDDL and CreateTable returned it untyped).
func parseTable(s string) (tableName, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return tableName{}, fmt.Errorf("sqllock: %w: table name %q: at most one '.'", lockclient.ErrInvalidConfig, s)
	}
	for _, p := range parts {
		if !isIdent(p) {
			return tableName{}, fmt.Errorf("sqllock: %w: table name %q: each part must be 1 to %d letters, digits or '_', not starting with a digit", lockclient.ErrInvalidConfig, s, maxNamePart)
		}
	}
	if len(parts) == 2 {
		return tableName{schema: parts[0], name: parts[1]}, nil
	}
	return tableName{name: parts[0]}, nil
}

func isIdent(s string) bool {
	if s == "" || len(s) > maxNamePart {
		return false
	}
	for i, r := range s {
		switch {
		case r == '_', r >= 'a' && r <= 'z', r >= 'A' && r <= 'Z':
		case r >= '0' && r <= '9' && i > 0:
		default:
			return false
		}
	}
	return true
}

// quotePG quotes an identifier that isIdent accepted.
func quotePG(s string) string { return `"` + s + `"` }

func quoteMy(s string) string { return "`" + s + "`" }

func (t tableName) quoted(d Dialect) string {
	q := quotePG
	if d == MySQL {
		q = quoteMy
	}
	if t.schema != "" {
		return q(t.schema) + "." + q(t.name)
	}
	return q(t.name)
}

// Names of the version 2 objects next to the lease table.
func (t tableName) waiters() tableName { return t.with("_waiters") }
