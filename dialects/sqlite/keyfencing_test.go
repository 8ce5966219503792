package sqlite

import (
	"reflect"
	"testing"
)

// TestKeyFencingForms (red-team rt60b F1) judges keyFencing's reading of a table's
// declaration, without a database: a generated column computed through another (SQLite
// allows it), names case-folded and quoted, an index whose text cannot be lexed
// counted as naming the column, and the index's own and its table's names (before its
// column list) not counted. A key that does not involve the fencing column is not
// reported.
func TestKeyFencingForms(t *testing.T) {
	const table = `CREATE TABLE accounts (k INTEGER PRIMARY KEY, id BIGINT NOT NULL, email TEXT, g1 BIGINT AS ("ID" * 2), g2 BIGINT AS (g1 + 1) STORED, g3 TEXT AS (lower(email)))`
	dec := func(keys map[string]string, exprKeys map[string]string) declaration {
		return declaration{found: true, sql: table, keys: keys, exprKeys: exprKeys, generated: map[string]string{"g1": "g1", "g2": "g2", "g3": "g3"}}
	}
	cases := []struct {
		name string
		dec  declaration
		want []string
	}{
		{"a unique key on a generated column through another", dec(map[string]string{"g2": "g2_key"}, nil), []string{"g2_key, through the generated column g2"}},
		{"a unique key on a generated column of another column", dec(map[string]string{"g3": "g3_key"}, nil), nil},
		{"an expression index naming a quoted generated column", dec(nil, map[string]string{"x": `CREATE UNIQUE INDEX x ON accounts (abs("G1"))`}), []string{"x, through an index expression or predicate, through the generated column g1"}},
		{"an expression index on another column", dec(nil, map[string]string{"id": `CREATE UNIQUE INDEX id ON accounts (lower(email))`}), nil},
		{"a partial index naming the column", dec(nil, map[string]string{"p": `CREATE UNIQUE INDEX p ON accounts (email) WHERE Id > 0`}), []string{"p, through an index expression or predicate"}},
		{"an index text that cannot be lexed", dec(nil, map[string]string{"bad": `CREATE UNIQUE INDEX bad ON accounts (lower('email))`}), []string{"bad, through an index expression or predicate"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			got := keyFencing(c.dec, "id")
			if len(got) == 0 && len(c.want) == 0 {
				return
			}
			if !reflect.DeepEqual(got, c.want) {
				t.Errorf("keyFencing: %q; want %q", got, c.want)
			}
		})
	}
}
