package plan

import (
	"slices"
	"strings"
	"testing"
)

// WithDeleteFence gives the planner a dialect's one-statement DELETE fragments: MARK(?)
// and CHECK(<schema>.<table>, <token column>, ?) with "\x00" for the token.
func WithDeleteFence() testOption {
	return func(c *PlannerConfig) {
		c.DeleteFence = func(schema, name, tokenCol string) (string, string) {
			return "MARK(" + tokenSlot + ")", "CHECK(" + schema + "." + name + ", " + tokenCol + ", " + tokenSlot + ")"
		}
	}
}

// The one-statement form of a DELETE (Plan.One): the caller's statement with the mark
// ANDed to its condition (or as its condition) and the check as its RETURNING list,
// placed after the last clause (before a ';' or a trailing comment); the arguments
// follow the placeholders in order; with the caller's own RETURNING list, the check is
// appended to it and hidden from the caller. None under ExpectVersion or without a
// dialect fence.
func TestDeleteOneStatement(t *testing.T) {
	cases := []struct {
		d    testDialect
		in   string
		want string
		args []ArgRef
	}{
		{pgTest, "DELETE FROM accounts WHERE id = $1",
			"DELETE FROM accounts WHERE (id = $1) AND MARK($2) RETURNING CHECK(.accounts, fence_token, $2)", refs(0, TOK)},
		{pgTest, "DELETE FROM accounts",
			"DELETE FROM accounts WHERE MARK($1) RETURNING CHECK(.accounts, fence_token, $1)", refs(TOK)},
		{pgTest, "DELETE FROM ONLY public.accounts AS a WHERE a.id = $2 OR a.note = $1;  -- done",
			"DELETE FROM ONLY public.accounts AS a WHERE (a.id = $2 OR a.note = $1) AND MARK($3) RETURNING CHECK(public.accounts, fence_token, $3);  -- done", refs(0, 1, TOK)},
		{pgTest, "delete from accounts where id = $1 /* c */",
			"delete from accounts where (id = $1) AND MARK($2) RETURNING CHECK(.accounts, fence_token, $2) /* c */", refs(0, TOK)},
		{mysqlTest, "DELETE FROM accounts WHERE id > ? ORDER BY id LIMIT ?",
			"DELETE FROM accounts WHERE (id > ?) AND MARK(?) ORDER BY id LIMIT ? RETURNING CHECK(.accounts, fence_token, ?)", refs(0, TOK, 1, TOK)},
		{mysqlTest, "DELETE FROM accounts LIMIT ?",
			"DELETE FROM accounts WHERE MARK(?) LIMIT ? RETURNING CHECK(.accounts, fence_token, ?)", refs(TOK, 0, TOK)},
		{mysqlTest, "DELETE QUICK FROM `accounts` WHERE id = ?;",
			"DELETE QUICK FROM `accounts` WHERE (id = ?) AND MARK(?) RETURNING CHECK(.accounts, fence_token, ?);", refs(0, TOK, TOK)},
	}
	for _, c := range cases {
		p, err := newTestRewriter(t, c.d, Guard("accounts"), WithDeleteFence()).Rewrite(c.in, false)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if p.Kind != KindDelete || p.Pre == nil || p.One == nil {
			t.Fatalf("%s: plan %+v, want a DELETE with a one-statement form", c.in, p)
		}
		if p.One.SQL != c.want || !slices.Equal(p.One.Args, c.args) || p.One.NUser != p.NUser || p.One.Guard != p.Guard {
			t.Errorf("%s:\n one  %q %v\n want %q %v", c.in, p.One.SQL, p.One.Args, c.want, c.args)
		}
	}
	// The caller's RETURNING list: the check is appended as its last column, which
	// the wrapper hides (Hidden); with the mark alone as the fence (no check), the
	// caller's list stays as written.
	for _, c := range []struct {
		d      testDialect
		in     string
		want   string
		hidden int
	}{
		{mysqlTest, "DELETE FROM accounts WHERE id = ? RETURNING id, balance",
			"DELETE FROM accounts WHERE (id = ?) AND MARK(?) RETURNING id, balance, CHECK(.accounts, fence_token, ?)", 1},
		{mysqlTest, "DELETE FROM accounts WHERE id > ? ORDER BY id LIMIT 2 RETURNING *;",
			"DELETE FROM accounts WHERE (id > ?) AND MARK(?) ORDER BY id LIMIT 2 RETURNING *, CHECK(.accounts, fence_token, ?);", 1},
	} {
		p, err := newTestRewriter(t, c.d, Guard("accounts"), WithDeleteFence()).Rewrite(c.in, false)
		if err != nil || p.One == nil || p.One.SQL != c.want || p.One.Hidden != c.hidden {
			t.Errorf("%s: one = %+v, err %v; want %q hiding %d", c.in, p.One, err, c.want, c.hidden)
		}
	}
	mark := func(c *PlannerConfig) {
		c.DeleteFence = func(_, _, _ string) (string, string) { return "MARK(" + tokenSlot + ")", "" }
	}
	if p, err := newTestRewriter(t, pgTest, Guard("accounts"), mark).Rewrite("DELETE FROM accounts WHERE id = $1 RETURNING *", false); err != nil ||
		p.One == nil || p.One.SQL != "DELETE FROM accounts WHERE (id = $1) AND MARK($2) RETURNING *" || p.One.Hidden != 0 {
		t.Errorf("mark only: one = %+v, err %v", p.One, err)
	}
	// A RETURNING that is not the last clause, or holds no list: two statements.
	for _, in := range []string{
		"DELETE FROM accounts WHERE id = ? RETURNING id LIMIT 1",
		"DELETE FROM accounts WHERE id = ? RETURNING",
	} {
		p, err := newTestRewriter(t, mysqlTest, Guard("accounts"), WithDeleteFence()).Rewrite(in, false)
		if err != nil || p.One != nil {
			t.Errorf("%s: one = %v, err %v; want none", in, p.One, err)
		}
	}
	// ExpectVersion: the fencing UPDATE checks the version, so two statements.
	if p, err := newTestRewriter(t, pgTest, Guard("accounts"), WithDeleteFence()).Rewrite("DELETE FROM accounts WHERE id = $1", true); err != nil || p.One != nil {
		t.Errorf("versioned: one = %v, err %v; want none", p.One, err)
	}
	// A dialect without a fence: none.
	if p, err := newTestRewriter(t, pgTest).Rewrite("DELETE FROM accounts WHERE id = $1", false); err != nil || p.One != nil {
		t.Errorf("no fence: one = %v, err %v; want none", p.One, err)
	}
}

// The mark is the wrapper's: a statement through the wrapper that sets it (to let a
// plain DELETE past the guard, or to change the token a tombstone records) is refused.
func TestDeleteMarkProtected(t *testing.T) {
	for _, c := range []struct {
		d  testDialect
		in string
	}{
		{pgTest, "SELECT set_config('fencedsql_guard.delete_token', '9/x', true)"},
		{pgTest, "SET LOCAL fencedsql_guard.delete_token = '9/x'"},
		{pgTest, `SET "fencedsql_guard"."delete_token" TO '9/x'`},
		{pgTest, "DELETE FROM accounts WHERE id = $1 AND set_config('fencedsql_guard.delete_token', '1/x', true) IS NOT NULL"},
		{pgTest, "SELECT set_config('fencedsql_' || 'guard.delete_token', '9/x', true)"},
		{mysqlTest, "SET @fencedsql_delete_token = '9/x'"},
		{mysqlTest, "SELECT @fencedsql_delete_token := '9/x'"},
		{mysqlTest, "DELETE FROM accounts WHERE id = ? AND (@fencedsql_delete_token := '1/x') IS NOT NULL"},
		{mysqlTest, "SET @`fencedsql_delete_token` = 1"},
		{mysqlTest, "SELECT @'fencedsql_delete_token' := 1"},
		{mysqlTest, `SELECT @"FENCEDSQL_DELETE_TOKEN"`},
		{mysqlTest, "SELECT id FROM other WHERE (@`fencedsql_delete_token` := 2) IS NOT NULL"},
		{pgTest, "SELECT set_config('FENCEDSQL_GUARD.delete_token', '9/x', true)"},
	} {
		_, err := newTestRewriter(t, c.d, Guard("accounts"), WithDeleteFence()).Rewrite(c.in, false)
		if !isRefusal(err) {
			t.Errorf("%s: %s: err = %v, want a refusal", c.d.name, c.in, err)
		}
	}
}

// Variables and settings without the reserved prefix stay the caller's.
func TestDeleteMarkOthersPass(t *testing.T) {
	for _, c := range []struct {
		d  testDialect
		in string
	}{
		{mysqlTest, "SELECT @B'ACCounts'"},
		{mysqlTest, "SELECT @X'41' FROM accounts"},
		{mysqlTest, "SELECT @x := 1"},
		{mysqlTest, "SET @fencedsqlx = 1"},
		{mysqlTest, "SELECT @@sql_mode"},
		{pgTest, "SELECT set_config('app.user', $1, true)"},
		{pgTest, "SELECT @ -5"},
		// PostgreSQL's @ is the absolute-value operator and SQLite's @name a parameter:
		// neither is a MySQL user variable (FuzzRewritePostgres found "@$$;$$" refused).
		// (A text that starts with @ is no statement: refused by protectHead since.)
		{pgTest, "SELECT @$$;$$"},
		{pgTest, "SELECT @$$fencedsql_x$$::int"},
		{pgTest, "SELECT @fencedsql_x FROM other"},
		{pgTest, "SELECT @'x'::int"},
		{sqliteTest, "SELECT x FROM other WHERE id = @fencedsql_id"},
		// An empty quoted name after @ is not the mark (FuzzRewriteMySQL: "SET\xe0@``").
		{mysqlTest, "SET @`` = 1"},
		{mysqlTest, "SELECT @'', @\"\""},
	} {
		if _, err := newTestRewriter(t, c.d, Guard("accounts"), WithDeleteFence()).Rewrite(c.in, false); err != nil {
			t.Errorf("%s: %s: %v", c.d.name, c.in, err)
		}
	}
}

// WithDeleteFenceCond gives the planner PostgreSQL's kind of fragments: the fence as
// the mark FENCE(<schema>.<table>, <token column>, ?) and no check.
func WithDeleteFenceCond() testOption {
	return func(c *PlannerConfig) {
		c.DeleteFence = func(schema, name, tokenCol string) (string, string) {
			return "FENCE(" + schema + "." + name + ", " + tokenCol + ", " + tokenSlot + ")", ""
		}
	}
}

// With the fence as the mark (no check), a DELETE whose condition is plain (or absent)
// gets it ANDed to its condition and no RETURNING list, the token bound once; any
// other has no one-statement form (the two statements): a subquery, a call of a
// function that is not a built-in scalar one, an operator not of a built-in spelling,
// a cast to a type not built in, ANY/SOME/ALL (an array's size is in its cost), a
// condition too long.
func TestDeleteOneStatementForms(t *testing.T) {
	cases := []struct {
		d    testDialect
		in   string
		want string
		args []ArgRef
	}{
		{pgTest, "DELETE FROM accounts WHERE id = $1",
			"DELETE FROM accounts WHERE (id = $1) AND FENCE(.accounts, fence_token, $2)", refs(0, TOK)},
		{pgTest, "DELETE FROM accounts",
			"DELETE FROM accounts WHERE FENCE(.accounts, fence_token, $1)", refs(TOK)},
		{pgTest, "DELETE FROM ONLY public.accounts AS a WHERE a.id = $2 OR a.note = $1;  -- done",
			"DELETE FROM ONLY public.accounts AS a WHERE (a.id = $2 OR a.note = $1) AND FENCE(public.accounts, fence_token, $3);  -- done", refs(0, 1, TOK)},
		{pgTest, "delete from accounts where id IN ($1, $2) AND NOT (lower(note) LIKE $3) /* c */",
			"delete from accounts where (id IN ($1, $2) AND NOT (lower(note) LIKE $3)) AND FENCE(.accounts, fence_token, $4) /* c */", refs(0, 1, 2, TOK)},
		{pgTest, "DELETE FROM accounts WHERE id = $1::bigint AND balance::numeric(10, 2) > -1 AND note IS NOT NULL",
			"DELETE FROM accounts WHERE (id = $1::bigint AND balance::numeric(10, 2) > -1 AND note IS NOT NULL) AND FENCE(.accounts, fence_token, $2)", refs(0, TOK)},
	}
	for _, c := range cases {
		p, err := newTestRewriter(t, c.d, Guard("accounts"), WithDeleteFenceCond()).Rewrite(c.in, false)
		if err != nil {
			t.Fatalf("%s: %v", c.in, err)
		}
		if p.One == nil {
			t.Fatalf("%s: no one-statement form", c.in)
		}
		if p.One.SQL != c.want || !slices.Equal(p.One.Args, c.args) {
			t.Errorf("%s:\n one  %q %v\n want %q %v", c.in, p.One.SQL, p.One.Args, c.want, c.args)
		}
	}
	long := "DELETE FROM accounts WHERE id = $1" + strings.Repeat(" OR id = 7", 70)
	for _, in := range []string{
		"DELETE FROM accounts WHERE id IN (SELECT id FROM other WHERE x = $1)",
		"DELETE FROM accounts WHERE EXISTS (SELECT 1 FROM other o WHERE o.id = accounts.id)",
		"DELETE FROM accounts WHERE id IN (VALUES ($1), ($2))",
		"DELETE FROM accounts WHERE id = $1 AND my_check(note)",
		`DELETE FROM accounts WHERE id = $1 AND "lower"(note) = 'x'`,
		"DELETE FROM accounts WHERE id === $1",
		"DELETE FROM accounts WHERE id =< $1",
		"DELETE FROM accounts WHERE id @> $1",
		"DELETE FROM accounts WHERE x OPERATOR(pg_catalog.=) $1",
		"DELETE FROM accounts WHERE note::mytype = $1",
		"DELETE FROM accounts WHERE CAST(note AS mytype) = $1",
		"DELETE FROM accounts WHERE note::public.text = $1",
		"DELETE FROM accounts WHERE id = ANY($1::bigint[])",
		"DELETE FROM accounts WHERE id = any ('{1,2,3}')",
		"DELETE FROM accounts WHERE id <> ALL($1)",
		"DELETE FROM accounts WHERE id = SOME($1)",
		long,
	} {
		p, err := newTestRewriter(t, pgTest, Guard("accounts"), WithDeleteFenceCond()).Rewrite(in, false)
		if err != nil {
			t.Fatalf("%s: %v", in, err)
		}
		if p.One != nil {
			t.Errorf("%s: one-statement form %q, want the two statements", in, p.One.SQL)
		}
	}
}

// A text whose parentheses do not balance is malformed: refused before any rewrite
// could wrap a part of it into a valid statement of another meaning.
func TestUnbalancedParenthesesRefused(t *testing.T) {
	for _, in := range []string{
		"DELETE FROM accounts WHERE id = $1) OR (true",
		"DELETE FROM accounts WHERE (id = $1",
		"UPDATE accounts SET balance = 1 WHERE id = $1) OR (true",
		"SELECT * FROM accounts WHERE id = $1) OR (true FOR UPDATE",
		"INSERT INTO accounts (id) VALUES ($1))",
	} {
		for _, d := range []testDialect{pgTest, mysqlTest} {
			_, err := newTestRewriter(t, d, Guard("accounts"), WithDeleteFence()).Rewrite(in, false)
			if !isRefusal(err) {
				t.Errorf("%s: %s: err = %v, want a refusal", d.name, in, err)
			}
		}
	}
}

// The fence functions are guard objects: a statement through the wrapper may not call
// one (the refusal of any reserved name), in any case or quoting. Text that only
// mentions the prefix in a comment passes (a string that mentions a reserved name is
// judged as the SQL it may be run as, and refused): PostgreSQL's row guard does not
// read a statement's text (it reads the one-statement DELETE's mark, which no
// statement through the wrapper may set).
func TestFenceFunctionsRefused(t *testing.T) {
	for _, c := range []struct {
		d  testDialect
		in string
	}{
		{pgTest, `SELECT "fencedsql_fence_accounts"(0, 0)`},
		{pgTest, `SELECT public.Fencedsql_Fence_accounts(0, 0)`},
		{pgTest, `SELECT "fencedsql_fenced_accounts"(0, 0)`},
		{pgTest, `DELETE FROM accounts WHERE id = $1 RETURNING "fencedsql_fence_accounts"(fence_token, 9)`},
		{pgTest, `DELETE FROM accounts WHERE id = $1 AND fencedsql_fence_accounts(fence_token, 99) IS NOT NULL`},
		{mysqlTest, "SELECT `fencedsql_fence_accounts`(fence_token, 9, 0) FROM accounts"},
	} {
		_, err := newTestRewriter(t, c.d, Guard("accounts"), WithDeleteFence()).Rewrite(c.in, false)
		if !isRefusal(err) {
			t.Errorf("%s: %s: err = %v, want a refusal", c.d.name, c.in, err)
		}
	}
	for _, in := range []string{`SELECT 1 FROM other /* "fencedsql_fence_accounts"( */`, `SELECT 1 FROM other -- fencedsql_fence_`} {
		if _, err := newTestRewriter(t, pgTest, Guard("accounts"), WithDeleteFence()).Rewrite(in, false); err != nil {
			t.Errorf("%s: %v", in, err)
		}
	}
}
