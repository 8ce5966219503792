package schema

import (
	"errors"
	"fmt"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// GuardSpec names one guarded table and its fencing columns.
type GuardSpec struct {
	Table         string // "accounts" or "schema.accounts"
	TokenColumn   string // default "fence_token"
	VersionColumn string // default "version"
}

// Default fencing column names.
const (
	DefaultTokenColumn   = "fence_token"
	DefaultVersionColumn = "version"
)

// parse validates a guard spec as given (empty column names are refused, not
// defaulted) and returns its table name, or the problem in words. It is the one check
// behind Guard, the DSN's fenced_tables and Check.
func (gs GuardSpec) parse() (dialect.TableName, string) {
	t, err := dialect.ParseTableName(gs.Table)
	if ne := (*dialect.NameError)(nil); errors.As(err, &ne) {
		return t, ne.Problem
	}
	for _, id := range []string{gs.TokenColumn, gs.VersionColumn} {
		if !dialect.PlainIdent(id) {
			return t, fmt.Sprintf("%q is not a valid identifier", id)
		}
	}
	if gs.TokenColumn == "" || gs.VersionColumn == "" || strings.EqualFold(gs.TokenColumn, gs.VersionColumn) {
		return t, "table, token and version column names must be non-empty and distinct"
	}
	return t, ""
}

// Validate checks s as Guard, the DSN's fenced_tables and Check do (empty column
// names are refused, not defaulted) and returns its table name; a bad name is a
// *dialect.NameError naming the table.
func (s GuardSpec) Validate() (dialect.TableName, error) {
	t, problem := s.parse()
	if problem != "" {
		return t, &dialect.NameError{Name: s.Table, Problem: problem}
	}
	return t, nil
}

// withDefaults returns s with DefaultTokenColumn and DefaultVersionColumn for the
// column names it leaves empty.
func (s GuardSpec) withDefaults() GuardSpec {
	if s.TokenColumn == "" {
		s.TokenColumn = DefaultTokenColumn
	}
	if s.VersionColumn == "" {
		s.VersionColumn = DefaultVersionColumn
	}
	return s
}
