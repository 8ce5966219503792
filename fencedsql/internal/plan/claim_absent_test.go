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
		{"id = $1", id, []KeyTerm{{"id", 0, "", false}}},
		{"$2 = id AND balance > $1", id, []KeyTerm{{"id", 1, "", false}}},
		{"accounts.id = 7", id, []KeyTerm{{"id", -1, "7", false}}},
		{"public.accounts.\"id\" = $1", id, []KeyTerm{{"id", 0, "", false}}},
		{"ID = $1", id, []KeyTerm{{"id", 0, "", false}}},
		{"(id = $1)", id, []KeyTerm{{"id", 0, "", false}}},
		{"(balance > 0 AND (id = $1))", id, []KeyTerm{{"id", 0, "", false}}},
		{"id = $1 AND (x = 1 OR y = 2)", id, []KeyTerm{{"id", 0, "", false}}},
		{`n = $2 AND $1 = "Region"`, rn, []KeyTerm{{"Region", 0, "", false}, {"n", 1, "", false}}},
		{`"Region" = 'it''s' AND n = 3`, rn, []KeyTerm{{"Region", -1, "it's", true}, {"n", -1, "3", false}}},
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
		got, ok := p.AbsentKey(c.key, func(int) (any, bool) { return nil, true })
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("WHERE %s, key %v: %+v %v, want %+v (terms %+v)", c.where, c.key, got, ok, c.want, p.Absent)
		}
	}
}

// TestAbsentKeyMySQL: the MySQL/MariaDB spellings of a claim that pins the whole
// primary key (? placeholders by position, backquoted or bare columns, compared as
// the server compares names, one or two qualifiers, integer and '…' literals), and
// the kinds a term must match: an integer column with an integer, a string column
// with a string (the server compares the other pairings as doubles).
func TestAbsentKeyMySQL(t *testing.T) {
	id := []KeyColumn{{"id", "bigint(20)"}}
	rn := []KeyColumn{{"Region", "varchar(8)"}, {"n", "int(11)"}}
	bin := []KeyColumn{{"uid", "binary(16)"}}
	dec := []KeyColumn{{"id", "decimal(10,0)"}}
	args := []any{int64(7), "eu", []byte("0123456789abcdef"), 1.5, uint64(9), nil}
	arg := func(i int) (any, bool) {
		if i >= len(args) || args[i] == nil {
			return nil, false
		}
		return args[i], true
	}
	cases := []struct {
		where string
		key   []KeyColumn
		want  []KeyTerm // nil: not pinned
	}{
		{"id = ?", id, []KeyTerm{{"id", 0, "", false}}},
		{"? = `ID` AND balance > 0", id, []KeyTerm{{"ID", 0, "", false}}},
		{"db.accounts.id = 12", id, []KeyTerm{{"id", -1, "12", false}}},
		{"`accounts`.`id` = ?", id, []KeyTerm{{"id", 0, "", false}}},
		{"(balance > 0 AND (id = ?))", id, []KeyTerm{{"id", 0, "", false}}},
		{"n = ? AND region = ?", []KeyColumn{{"n", "int"}, {"region", "char(2)"}}, []KeyTerm{{"n", 0, "", false}, {"region", 1, "", false}}},
		{"`Region` = 'it''s' AND n = ?", rn, []KeyTerm{{"Region", -1, "it's", true}, {"n", 0, "", false}}},
		{"x = ? AND `Region` = ? AND n = 3 AND (id = ? OR 1 AND 2)", rn, []KeyTerm{{"Region", 1, "", false}, {"n", -1, "3", false}}},
		{"uid = ? AND balance = ?", []KeyColumn{{"uid", "varbinary(16)"}}, nil}, // arg 0 is an int
		{"x = ? AND x = ? AND uid = ?", bin, []KeyTerm{{"uid", 2, "", false}}},
		{"x = ? AND x = ? AND x = ? AND x = ? AND id = ?", id, []KeyTerm{{"id", 4, "", false}}},
		// Not pinned.
		{"id = '7'", id, nil},                                                 // a string against an integer column
		{"`Region` = 5 AND n = 1", rn, nil},                                   // an integer against a string column
		{"x = ? AND `Region` = ? AND n = ?", rn, nil},                         // Region's argument is an int
		{"x = ? AND x = ? AND x = ? AND id = ?", id, nil},                     // a float
		{"x = ? AND x = ? AND x = ? AND x = ? AND x = ? AND id = ?", id, nil}, // NULL
		{"id = 7", dec, nil},
		{"id = ? OR id = ?", id, nil},
		{"id = ? XOR 1", id, nil},
		{"id = ? || 1", id, nil},
		{"id = ? && 1", id, nil},
		{"id = (@v := ?)", id, nil},
		{"id = ? COLLATE utf8mb4_bin", id, nil},
		{"`Region` = _utf8mb4'eu' AND n = 1", rn, nil},
		{"`Region` = 'e\\u' AND n = 1", rn, nil},
		{`Region = "eu" AND n = 1`, rn, nil},
		{`"Region" = ? AND n = 1`, rn, nil},
		{"id = -1", id, nil},
		{"id = 0x10", id, nil},
		{"id <=> ?", id, nil},
		{"id IN (?)", id, nil},
		{"NOT id = ?", id, nil},
		{"NULL = id", id, nil},
	}
	my := newTestRewriter(t, mysqlTest)
	for _, c := range cases {
		p, err := my.Rewrite("SELECT n FROM accounts WHERE "+c.where+" FOR UPDATE", false)
		if err != nil {
			t.Errorf("%s: %v", c.where, err)
			continue
		}
		got, ok := p.AbsentKey(c.key, arg)
		if ok != (c.want != nil) || !slices.Equal(got, c.want) {
			t.Errorf("WHERE %s, key %v: %+v %v, want %+v (terms %+v)", c.where, c.key, got, ok, c.want, p.Absent)
		}
	}
}
