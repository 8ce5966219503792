package plan

import (
	"slices"
	"testing"
)

// TestAbsentKey: the terms a PostgreSQL claim's WHERE pins its key with (red-team
// rt42e F1), and AbsentKey's verdict for an integer key (id) and a composite one
// ("Region", n): every key column pinned by a conjunct of the whole condition to a
// placeholder or a plain literal, the names compared as PostgreSQL names them.
func TestAbsentKey(t *testing.T) {
	id := []KeyColumn{{"id", "bigint"}}
	rn := []KeyColumn{{"Region", "text"}, {"n", "integer"}}
	cases := []struct {
		where string
		key   []KeyColumn
		want  []KeyTerm // nil: not pinned
	}{
		{"id = $1", id, []KeyTerm{{"id", 0, ""}}},
		{"$2 = id AND balance > $1", id, []KeyTerm{{"id", 1, ""}}},
		{"accounts.id = 7", id, []KeyTerm{{"id", -1, "7"}}},
		{"public.accounts.\"id\" = $1", id, []KeyTerm{{"id", 0, ""}}},
		{"ID = $1", id, []KeyTerm{{"id", 0, ""}}},
		{"(id = $1)", id, []KeyTerm{{"id", 0, ""}}},
		{"(balance > 0 AND (id = $1))", id, []KeyTerm{{"id", 0, ""}}},
		{"id = $1 AND (x = 1 OR y = 2)", id, []KeyTerm{{"id", 0, ""}}},
		{`n = $2 AND $1 = "Region"`, rn, []KeyTerm{{"Region", 0, ""}, {"n", 1, ""}}},
		{`"Region" = 'it''s' AND n = 3`, rn, []KeyTerm{{"Region", -1, "it's"}, {"n", -1, "3"}}},
		// Not pinned.
		{`region = $1 AND n = $2`, rn, nil}, // region is not "Region"
		{`"Region" = $1`, rn, nil},
		{"id > $1", id, nil},
		{"id = $1 OR id = $2", id, nil},
		{"(id = $1 OR id = 2)", id, nil},
		{"id = $1::bigint", id, nil},
		{"id = 1.5", id, nil},
		{"id = -1", id, nil},
		{"id = E'1'", id, nil},
		{`id = '1\'`, id, nil},
		{"id = $1 IS NOT NULL", id, nil},
		{"NOT id = $1", id, nil},
		{"id = ($1)", id, nil},
		{"id IN ($1, $2)", id, nil},
		{"0 BETWEEN id - 2 AND id = $1", id, nil},
		{"CASE WHEN id = $1 AND true THEN true END", id, nil},
		{"other = $1", id, nil},
	}
	rw := newTestRewriter(t, pgTest)
	for _, c := range cases {
		p, err := rw.Rewrite("SELECT n FROM accounts WHERE "+c.where+" FOR UPDATE", false)
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		got, ok := p.AbsentKey(c.key)
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("WHERE %s, key %v: %+v %v, want %+v (terms %+v)", c.where, c.key, got, ok, c.want, p.Absent)
		}
	}
	// MySQL/MariaDB claims get no absence terms (no recorder there).
	my := newTestRewriter(t, mysqlTest)
	if p, err := my.Rewrite("SELECT n FROM accounts WHERE id = ? FOR UPDATE", false); err != nil || p.Absent != nil {
		t.Errorf("MySQL claim: absence terms %v, err %v", p.Absent, err)
	}
}
