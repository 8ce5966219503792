package sqllock

import (
	"fmt"
	"strings"
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

func parseTable(s string) (tableName, error) {
	parts := strings.Split(s, ".")
	if len(parts) > 2 {
		return tableName{}, fmt.Errorf("sqllock: table name %q: at most one '.'", s)
	}
	for _, p := range parts {
		if !isIdent(p) {
			return tableName{}, fmt.Errorf("sqllock: table name %q: each part must be 1 to %d letters, digits or '_', not starting with a digit", s, maxNamePart)
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
