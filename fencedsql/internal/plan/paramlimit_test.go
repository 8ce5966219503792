package plan

import (
	"errors"
	"fmt"
	"slices"
	"strconv"
	"strings"
	"testing"
)

// userRefs returns the argument references 0..n-1.
func userRefs(n int) []ArgRef {
	r := make([]ArgRef, n)
	for i := range r {
		r[i] = ArgRef(i)
	}
	return r
}

// wantLimitErr checks that err is the parameter-limit refusal naming limit and max rows.
func wantLimitErr(t *testing.T, err error, limit, maxRows int) {
	t.Helper()
	var ue *Refusal
	if !isRefusal(err) || !errors.As(err, &ue) {
		t.Fatalf("err = %v, want an *Refusal (ErrUnsupported)", err)
	}
	for _, s := range []string{
		fmt.Sprintf("limit of %d per statement", limit),
		fmt.Sprintf("at most %d row", maxRows),
	} {
		if !strings.Contains(ue.Reason, s) {
			t.Errorf("reason %q does not say %q", ue.Reason, s)
		}
	}
	if ue.Table != "accounts" {
		t.Errorf("table %q, want accounts", ue.Table)
	}
}

// TestParamLimitPostgres: the token is bound once ($n reused), so a batch fits while the
// caller's placeholders leave room for it; a batch of exactly 65,535 (what pgx accepts)
// is refused with the largest batch that fits, which then fits.
func TestParamLimitPostgres(t *testing.T) {
	rw := newTestRewriter(t, pgTest)
	// At the limit: 2 × 32767 = 65534 of the caller's + the token = 65535.
	pl, err := rw.Rewrite(batchInsert(2, 32767, true), false)
	if err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if len(pl.Args) != pgMaxParams || pl.Args[len(pl.Args)-1] != ArgToken {
		t.Fatalf("at the limit: %d args, last %v", len(pl.Args), pl.Args[len(pl.Args)-1])
	}
	if !strings.HasSuffix(pl.SQL, `, ($65533, $65534, $65535, 1)`) || !strings.HasPrefix(pl.SQL, `INSERT INTO accounts (c1, c2, "fence_token", "version") VALUES ($1, $2, $65535, 1), `) {
		t.Errorf("at the limit: sql %q…%q", pl.SQL[:90], pl.SQL[len(pl.SQL)-40:])
	}
	// Over: 3 × 21845 = 65535 of the caller's; + the token = 65536.
	_, err = rw.Rewrite(batchInsert(3, 21845, true), false)
	wantLimitErr(t, err, pgMaxParams, 21844)
	if _, err := rw.Rewrite(batchInsert(3, 21844, true), false); err != nil {
		t.Errorf("the batch the refusal proposes: %v", err)
	}
	// ExpectVersion on an upsert adds the version parameter too.
	up := batchInsert(2, 32767, true) + ` ON CONFLICT (c1) DO UPDATE SET c2 = excluded.c2`
	_, err = rw.Rewrite(up, true)
	wantLimitErr(t, err, pgMaxParams, 32766)
	// The caller's own statement over the limit is sent as written: the driver says no,
	// as it would raw (and a driver without the limit accepts it).
	if _, err := rw.Rewrite(batchInsert(1, pgMaxParams+1, true), false); err != nil {
		t.Errorf("caller over the limit: %v, want the plan (the driver judges it)", err)
	}
}

// TestParamLimitMySQL: ? cannot be reused, so the token costs one parameter per row;
// a batch over the limit because of it is refused with the largest that fits.
func TestParamLimitMySQL(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest)
	// At the limit: 21845 rows × (2 + token) = 65535.
	pl, err := rw.Rewrite(batchInsert(2, 21845, false), false)
	if err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if len(pl.Args) != mysqlMaxParams {
		t.Fatalf("at the limit: %d args", len(pl.Args))
	}
	if want := "INSERT INTO accounts (c1, c2, `fence_token`, `version`) VALUES (?, ?, ?, 1), (?, ?, ?, 1)"; !strings.HasPrefix(pl.SQL, want) {
		t.Errorf("at the limit: sql %q…", pl.SQL[:len(want)])
	}
	if !slices.Equal(pl.Args[:6], refs(0, 1, TOK, 2, 3, TOK)) {
		t.Errorf("at the limit: args %v…", pl.Args[:6])
	}
	// One row more: 65538.
	_, err = rw.Rewrite(batchInsert(2, 21846, false), false)
	wantLimitErr(t, err, mysqlMaxParams, 21845)
	// An ORM batch sized to the driver: 2 × 32767 = 65534 of the caller's.
	_, err = rw.Rewrite(batchInsert(2, 32767, false), false)
	wantLimitErr(t, err, mysqlMaxParams, 21845)
	// ON DUPLICATE KEY UPDATE with ExpectVersion: 4 more parameters outside the rows
	// (the token three times, the version once): (65535 - 4) / 3 = 21843.
	up := batchInsert(2, 32767, false) + " ON DUPLICATE KEY UPDATE c2 = VALUES(c2)"
	_, err = rw.Rewrite(up, true)
	wantLimitErr(t, err, mysqlMaxParams, 21843)
	if _, err := rw.Rewrite(batchInsert(2, 21843, false)+" ON DUPLICATE KEY UPDATE c2 = VALUES(c2)", true); err != nil {
		t.Errorf("the batch the refusal proposes: %v", err)
	}
}

// TestParamLimitSQLite: over the limit because of the per-row token, the statement is
// rewritten with ?NNN placeholders that bind the token once; a batch the caller already
// sized to the limit leaves no room for it and is refused.
func TestParamLimitSQLite(t *testing.T) {
	rw := newTestRewriter(t, sqliteTest)
	// At the limit, positional as usual: 10922 rows × (2 + token) = 32766.
	pl, err := rw.Rewrite(batchInsert(2, 10922, false), false)
	if err != nil {
		t.Fatalf("at the limit: %v", err)
	}
	if len(pl.Args) != sqliteMaxParams || strings.Contains(pl.SQL, "?1") {
		t.Fatalf("at the limit: %d args, numbered %v", len(pl.Args), strings.Contains(pl.SQL, "?1"))
	}
	// One row more: 32769 positional → 2 × 10923 + 1 = 21847 with the token shared.
	pl, err = rw.Rewrite(batchInsert(2, 10923, false), false)
	if err != nil {
		t.Fatalf("over the limit, shared token: %v", err)
	}
	if want := append(userRefs(2*10923), TOK); !slices.Equal(pl.Args, want) {
		t.Errorf("shared token: %d args, want %d (the caller's in order, then the token)", len(pl.Args), len(want))
	}
	if want := `INSERT INTO accounts (c1, c2, "fence_token", "version") VALUES (?1, ?2, ?21847, 1), (?3, ?4, ?21847, 1), `; !strings.HasPrefix(pl.SQL, want) {
		t.Errorf("shared token: sql %q…", pl.SQL[:len(want)])
	}
	if want := `, (?21845, ?21846, ?21847, 1)`; !strings.HasSuffix(pl.SQL, want) {
		t.Errorf("shared token: sql …%q", pl.SQL[len(pl.SQL)-len(want):])
	}
	// Sized to the limit by the caller: 2 × 16383 = 32766, + the token = 32767.
	_, err = rw.Rewrite(batchInsert(2, 16383, false), false)
	wantLimitErr(t, err, sqliteMaxParams, 16382)
	if _, err := rw.Rewrite(batchInsert(2, 16382, false), false); err != nil {
		t.Errorf("the batch the refusal proposes: %v", err)
	}
}

// TestShareTokens pins the ?NNN rewrite on small plans: the caller's arguments keep
// their order (those dropped with a fencing column the caller assigned are left out),
// and the token and version each get one number wherever they are used (ON CONFLICT
// uses the token three times and the version once per DO UPDATE).
func TestShareTokens(t *testing.T) {
	rw := newTestRewriter(t, sqliteTest)
	cases := []struct {
		name, in string
		ver      bool
		out      string
		args     []ArgRef
	}{
		{
			name: "rows",
			in:   `INSERT INTO accounts (a, b) VALUES (?, ?), (?, 'x')`,
			out:  `INSERT INTO accounts (a, b, "fence_token", "version") VALUES (?1, ?2, ?4, 1), (?3, 'x', ?4, 1)`,
			args: refs(0, 1, 2, TOK),
		},
		{
			name: "caller's fencing column dropped",
			in:   `INSERT INTO accounts (a, fence_token) VALUES (?, ?), (?, ?)`,
			out:  `INSERT INTO accounts (a, "fence_token", "version") VALUES (?1, ?3, 1), (?2, ?3, 1)`,
			args: refs(0, 2, TOK),
		},
		{
			name: "upsert with ExpectVersion",
			in:   `INSERT INTO accounts (a, b) VALUES (?, ?) ON CONFLICT (a) DO UPDATE SET b = ? WHERE b <> '?'`,
			ver:  true,
			out:  `INSERT INTO accounts (a, b, "fence_token", "version") VALUES (?1, ?2, ?4, 1) ON CONFLICT (a) DO UPDATE SET b = ?3, "version" = CASE WHEN accounts."version" = ?5 THEN accounts."version" + 1 WHEN accounts."fence_token" <= ?4 THEN NULL ELSE accounts."version" END, "fence_token" = CASE WHEN accounts."fence_token" <= ?4 THEN ?4 ELSE NULL END WHERE b <> '?'`,
			args: refs(0, 1, 2, TOK, VER),
		},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			pl, err := rw.Rewrite(c.in, c.ver)
			if err != nil {
				t.Fatal(err)
			}
			sp, ok := shareTokens(pl, rw.Syntax())
			if !ok {
				t.Fatalf("shareTokens refused %q", pl.SQL)
			}
			if sp.SQL != c.out {
				t.Errorf("sql\n got  %s\n want %s", sp.SQL, c.out)
			}
			if !slices.Equal(sp.Args, c.args) {
				t.Errorf("args %v, want %v", sp.Args, c.args)
			}
			if sp.NUser != pl.NUser || sp.Kind != KindInsert || pl.SQL == sp.SQL {
				t.Errorf("plan changed in place or lost its kind/nUser: %+v", sp)
			}
		})
	}
	// Text that does not lex back to the plan's placeholders is not rewritten.
	bad := &Plan{Kind: KindInsert, SQL: `INSERT INTO t VALUES (?1)`, Args: refs(0), NUser: 1}
	if _, ok := shareTokens(bad, rw.Syntax()); ok {
		t.Error("shareTokens accepted a numbered placeholder")
	}
	short := &Plan{Kind: KindInsert, SQL: `INSERT INTO t VALUES (?)`, Args: refs(0, TOK), NUser: 1}
	if _, ok := shareTokens(short, rw.Syntax()); ok {
		t.Error("shareTokens accepted fewer placeholders than arguments")
	}
}

// TestParamLimitSQLiteSET: MySQL's INSERT … SET form (one row) counts its placeholders
// like a row: over the limit only because of the token, it is refused with 0 rows.
func TestParamLimitMySQLSet(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest)
	var sb strings.Builder
	sb.WriteString("INSERT INTO accounts SET ")
	for i := range mysqlMaxParams {
		if i > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("c" + strconv.Itoa(i) + " = ?")
	}
	_, err := rw.Rewrite(sb.String(), false)
	wantLimitErr(t, err, mysqlMaxParams, 0)
}

// inList is "<head> WHERE id IN (?, …)" with n placeholders, numbered $1… when dollar.
func inList(head string, n int, dollar bool) string {
	var sb strings.Builder
	sb.WriteString(head + " WHERE id IN (")
	for i := range n {
		if i > 0 {
			sb.WriteString(", ")
		}
		if dollar {
			sb.WriteString("$" + strconv.Itoa(i+1))
		} else {
			sb.WriteByte('?')
		}
	}
	sb.WriteByte(')')
	return sb.String()
}

// TestParamLimitOtherStatements: an UPDATE, a DELETE (its fencing UPDATE) and a claimed
// locking read whose IN list fits the limit only without the token are refused before
// anything is sent, naming the limit; one parameter fewer fits; the caller's own
// statement over the limit is left to the driver.
func TestParamLimitOtherStatements(t *testing.T) {
	for _, c := range []struct {
		name  string
		test  testDialect
		limit int
		extra int // the wrapper's parameters: PostgreSQL binds the token once, ? twice
	}{{"postgres", pgTest, pgMaxParams, 1}, {"mysql", mysqlTest, mysqlMaxParams, 2}, {"sqlite", sqliteTest, sqliteMaxParams, 2}} {
		rw := newTestRewriter(t, c.test)
		for _, head := range []string{"UPDATE accounts SET balance = 0", "DELETE FROM accounts", "SELECT * FROM accounts"} {
			locking := strings.HasPrefix(head, "SELECT")
			if c.name == "sqlite" && locking {
				continue // SQLite has no locking read
			}
			q := func(n int) string {
				s := inList(head, n, c.name == "postgres")
				if locking {
					s += " FOR UPDATE"
				}
				return s
			}
			fit := c.limit - c.extra
			_, err := rw.Rewrite(q(fit+1), false)
			var ue *Refusal
			if !errors.As(err, &ue) || !strings.Contains(ue.Reason, "limit of "+strconv.Itoa(c.limit)) ||
				!strings.Contains(ue.Reason, "at most "+strconv.Itoa(fit)+" of the caller's") || ue.Table != "accounts" {
				t.Errorf("%s %q one over what fits: err = %v, want the parameter-limit refusal proposing %d", c.name, head, err, fit)
			}
			if _, err := rw.Rewrite(q(fit), false); err != nil {
				t.Errorf("%s %q the proposed size: %v", c.name, head, err)
			}
			if _, err := rw.Rewrite(q(c.limit+1), false); err != nil {
				t.Errorf("%s %q over the limit by itself: %v, want the plan (the driver judges it)", c.name, head, err)
			}
		}
	}
}
