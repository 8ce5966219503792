package plan

import "testing"

// TestPointClaim: the conjuncts a MySQL/MariaDB claim's WHERE fixes, and FixesKey's
// verdict for an integer key (id) and a composite one (k, id), with the arguments
// given. A selection is a point only when every key column is fixed, by a conjunct
// of the whole condition, to an integer.
func TestPointClaim(t *testing.T) {
	id := []KeyColumn{{"id", "bigint(20) unsigned"}}
	kid := []KeyColumn{{"k", "smallint(6)"}, {"ID", "int(11)"}}
	ints := []any{int64(1), uint64(2)}
	cases := []struct {
		where string
		key   []KeyColumn
		args  []any
		point bool
	}{
		{"id = ?", id, ints, true},
		{"? = id", id, ints, true},
		{"accounts.id = 7", id, nil, true},
		{"`id` = ? AND balance > 0", id, ints, true},
		{"balance > ? AND `accounts`.`Id` = ? AND NOT flag", id, ints, true},
		{"id = ? AND (x = 1 OR y = 2)", id, ints, true},
		{"k = ? AND id = ?", kid, ints, true},
		{"id = 3 AND k = 4", kid, nil, true},
		// Not a point: not every key column fixed, or not to an integer.
		{"k = ?", kid, ints, false},
		{"id = ?", id, []any{"1"}, false},
		{"id = ?", id, []any{1.0}, false},
		{"id = ?", id, []any{nil}, false},
		{"id = ?", []KeyColumn{{"id", "decimal(20,0)"}}, ints, false},
		{"id = ?", []KeyColumn{{"id", "varchar(10)"}}, ints, false},
		{"id = ?", []KeyColumn{{"id", "double"}}, ints, false},
		{"id = '1'", id, nil, false},
		{"id = 1.0", id, nil, false},
		{"id = 0x1", id, nil, false},
		{"id = -1", id, nil, false},
		{"id = 1234567890123456789", id, nil, true},   // 19 digits (red-team rt47e F2)
		{"id = 18446744073709551615", id, nil, true},  // the largest BIGINT UNSIGNED
		{"id = 18446744073709551616", id, nil, false}, // beyond 64 bits
		{"other = ?", id, ints, false},
		{"a.b.id = ?", id, ints, false},
		{"\"id\" = ?", id, ints, false},
		{"current_date = 1", []KeyColumn{{"current_date", "int"}}, nil, false},
		// Not a conjunct of the whole condition.
		{"id = ? OR id = 2", id, ints, false},
		{"id = ? AND 1 OR id = 2", id, ints, false},
		{"id = ? AND 1 XOR id = 2", id, ints, false},
		{"id = ? AND 1 || id = 2", id, ints, false},
		{"0 BETWEEN id - 2 AND id = ?", id, ints, false},
		{"CASE WHEN id <> 2 AND id = ? AND 1 THEN 1 ELSE 1 END", id, ints, false},
		{"id = ? AND 1 /*!00000 OR id = 2 */", id, ints, false},
		{"(id = ? OR id = 2)", id, ints, false},
		{"id = ? IS NOT NULL", id, ints, false},
		{"id = ? = 0", id, ints, false},
		{"id = ? COLLATE utf8mb4_bin", id, ints, false},
		{"NOT id = ?", id, ints, false},
		{"id = (?)", id, ints, false},
	}
	rw := newTestRewriter(t, mysqlTest)
	for _, c := range cases {
		p, err := rw.Rewrite("SELECT n FROM accounts WHERE "+c.where+" FOR UPDATE", false)
		if err != nil {
			if c.point {
				t.Errorf("%s: %v", c.where, err)
			}
			continue // refused: no claim at all
		}
		arg := func(i int) (any, bool) {
			if i >= len(c.args) {
				return nil, false
			}
			return c.args[i], true
		}
		if got := p.FixesKey(c.key, arg); got != c.point {
			t.Errorf("WHERE %s, key %v, args %v: point %v, want %v (terms %+v)", c.where, c.key, c.args, got, c.point, p.Point)
		}
	}
	// PostgreSQL's claims are one statement or by locator: no point terms.
	pg := newTestRewriter(t, pgTest)
	if p, err := pg.Rewrite("SELECT n FROM accounts WHERE id = $1 FOR UPDATE", false); err != nil || p.Point != nil {
		t.Errorf("PostgreSQL claim: point terms %v, err %v", p.Point, err)
	}
}
