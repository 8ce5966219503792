package plan

import (
	"reflect"
	"testing"
)

// A pass-through statement that holds a locking clause and names no guarded table
// carries the relations it reads (Plan.LockThrough), so that the wrapper can refuse a
// locking read through a view over a guarded table when it carries a token; every
// other plan carries none.
func TestLockThroughRelations(t *testing.T) {
	cases := []struct {
		d    testDialect
		sql  string
		want []string
	}{
		{pgTest, "SELECT id, balance FROM av WHERE id = 1 FOR UPDATE", []string{"av"}},
		{pgTest, `SELECT id FROM "Public"."Av" x FOR SHARE`, []string{`"Public"."Av"`}},
		{pgTest, "SELECT * FROM ONLY av, bv b JOIN cv ON b.id = cv.id, LATERAL dv FOR NO KEY UPDATE", []string{"av", "bv", "dv", "cv"}},
		{pgTest, "SELECT * FROM other WHERE id IN (SELECT id FROM av) FOR UPDATE", []string{"other", "av"}},
		{pgTest, "SELECT * FROM (SELECT * FROM av) s, other FOR UPDATE", []string{"other", "av"}},
		{pgTest, "WITH x AS (SELECT * FROM av) SELECT * FROM x FOR UPDATE", []string{"av", "x"}},
		{pgTest, "SELECT * FROM lockrows(1) r, av FOR UPDATE", []string{"av"}},
		{pgTest, "TABLE av FOR UPDATE", []string{"av"}},
		{pgTest, "(SELECT * FROM av FOR UPDATE)", []string{"av"}},
		{mysqlTest, "SELECT id FROM av WHERE id = ? LOCK IN SHARE MODE", []string{"av"}},
		{mysqlTest, "SELECT id FROM `db`.`av` a STRAIGHT_JOIN bv FOR UPDATE", []string{"`db`.`av`", "bv"}},
		{mysqlTest, "SELECT * FROM av FOR UPDATE; SELECT 1", []string{"av"}},
		// no locking clause, or a guarded table named (claimed or refused): none
		{pgTest, "SELECT id, balance FROM av WHERE id = 1", nil},
		{pgTest, "SELECT * FROM accounts WHERE id = 1 FOR UPDATE", nil},
		{mysqlTest, "SELECT * FROM av", nil},
	}
	for _, c := range cases {
		p, err := newTestRewriter(t, c.d).Rewrite(c.sql, false)
		if err != nil {
			t.Errorf("%s: %q: %v", c.d.name, c.sql, err)
			continue
		}
		var got []string
		for _, r := range p.LockThrough {
			got = append(got, r.Text)
		}
		if !reflect.DeepEqual(got, c.want) {
			t.Errorf("%s: %q: LockThrough %q, want %q", c.d.name, c.sql, got, c.want)
		}
		if got != nil && p.Kind != KindPass {
			t.Errorf("%s: %q: LockThrough on a %v plan", c.d.name, c.sql, p.Kind)
		}
	}
	// Decoded parts: quotes removed, the qualifier kept.
	p, _ := newTestRewriter(t, mysqlTest).Rewrite("SELECT 1 FROM `d``b`.av FOR UPDATE", false)
	if len(p.LockThrough) != 1 || !reflect.DeepEqual(p.LockThrough[0].Parts, []string{"d`b", "av"}) {
		t.Errorf("parts: %+v", p.LockThrough)
	}
	// The mark changes nothing else: a text that names no guarded table is not judged
	// ambiguous for it (no session check before it is sent, as before).
	p, _ = newTestRewriter(t, pgTest).Rewrite(`SELECT * FROM "Other" FOR UPDATE`, false)
	if len(p.LockThrough) != 1 || p.LockThrough[0].Text != `"Other"` || p.Ambiguous || p.Kind != KindPass {
		t.Errorf("quoted name: %+v", p)
	}
	// A pool without guarded tables plans nothing.
	p, _ = newTestRewriter(t, pgTest, WithDDL(false)).Rewrite("SELECT * FROM av FOR UPDATE", false)
	if p.LockThrough != nil {
		t.Errorf("no guarded tables: LockThrough %+v", p.LockThrough)
	}
}
