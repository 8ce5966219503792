package mysql

import (
	"context"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestKeyFencingForms (red-team rt60b F1) judges lintKeyFencing's reading of the
// catalog rows, without a server: the forms a MariaDB test server does not have
// (MySQL 8 functional key parts, read by a second query) and the name rules (a
// generated column computed through another, names case-folded, an expression that
// cannot be lexed counted as naming the column). A key that does not involve the
// fencing columns is not reported.
func TestKeyFencingForms(t *testing.T) {
	lt := dialect.LintTable{Table: dialect.TableName{Name: "accounts"}, TokenColumn: "id", VersionColumn: "version"}
	cases := []struct {
		name        string
		rows        [][]string          // keyFencingQuery's rows
		functional  map[string][]string // functionalKeyQuery's rows: index → expressions
		wantKeys    []string            // substrings of the problems, in order ("" none)
		wantQueries int
	}{
		{"the token column as the server names it", [][]string{{"key token", "ID", "PRIMARY"}}, nil, []string{"fencing column id is in the unique key PRIMARY:"}, 0},
		{"a key on another column", [][]string{{"key", "email", "email_key"}}, nil, nil, 0},
		{"a generated column through another", [][]string{{"generated", "g1", "`Id` * 2"}, {"generated", "g2", "`g1` + 1"}, {"key", "g2", "g2_key"}}, nil,
			[]string{"unique key g2_key, through the generated column g2"}, 0},
		{"a generated column of another column", [][]string{{"generated", "g1", "lower(`email`)"}, {"key", "g1", "g1_key"}}, nil, nil, 0},
		{"a generated column whose expression cannot be lexed", [][]string{{"generated", "g1", "`email"}, {"key", "g1", "g1_key"}}, nil,
			[]string{"fencing column id is in the unique key g1_key, through the generated column g1", "fencing column version is in the unique key g1_key, through the generated column g1"}, 0},
		{"a MySQL 8 functional key on the version", [][]string{{"key", "", "fk"}}, map[string][]string{"fk": {"(`version` + 0)"}},
			[]string{"fencing column version is in the unique key fk, through a functional key part's expression"}, 1},
		{"a MySQL 8 functional key on another column", [][]string{{"key", "", "fk"}, {"key", "email", "fk"}}, map[string][]string{"fk": {"lower(`email`)"}}, nil, 1},
		{"a MySQL 8 functional key the catalog does not show", [][]string{{"key", "", "fk"}}, map[string][]string{},
			[]string{"fencing column id is in the unique key fk, a functional key", "fencing column version is in the unique key fk, a functional key"}, 1},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			queries := 0
			query := func(ctx context.Context, q string, args ...any) ([][]string, error) {
				queries++
				if q != functionalKeyQuery {
					t.Fatalf("unexpected query %q", q)
				}
				var out [][]string
				for index, exprs := range c.functional {
					for _, e := range exprs {
						out = append(out, []string{index, e})
					}
				}
				return out, nil
			}
			got, err := dialectImpl{}.lintKeyFencing(context.Background(), query, lt, c.rows)
			if err != nil {
				t.Fatal(err)
			}
			if queries != c.wantQueries {
				t.Errorf("%d catalog queries; want %d (the functional keys' expressions only when there is one)", queries, c.wantQueries)
			}
			if len(got) != len(c.wantKeys) {
				t.Fatalf("problems %+v; want %d: %q", got, len(c.wantKeys), c.wantKeys)
			}
			for i, w := range c.wantKeys {
				if !strings.Contains(got[i].Problem, w) {
					t.Errorf("problem %d: %q; want it to contain %q", i, got[i].Problem, w)
				}
			}
		})
	}
}
