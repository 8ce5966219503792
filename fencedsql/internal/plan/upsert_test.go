package plan

import (
	"strings"
	"testing"
)

// An upsert's conflict branch that reads the proposed row's token or version
// (EXCLUDED.col, VALUES(col), a row alias's alias.col) is refused: the wrapper writes
// its token and version 1 in the proposed row in place of the caller's values, so a
// version-checked upsert would compare with 1 (red-team rts F2).
func TestUpsertReadOfProposedFenceColumnRefused(t *testing.T) {
	for _, c := range []struct {
		d testDialect
		q string
	}{
		{pgTest, `INSERT INTO accounts (id, balance, version) VALUES (1, 9, 3) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance WHERE accounts.version = EXCLUDED.version`},
		{pgTest, `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = excluded.fence_token`},
		{pgTest, `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = "excluded"."version"`},
		{pgTest, `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = Excluded.VERSION + 1`},
		{pgTest, `INSERT INTO accounts AS a (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = 1 WHERE a.version < excluded . version`},
		{pgTest, `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = (excluded).version`},
		{pgTest, `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = (row_to_json(excluded)->>'version')::bigint`},
		{pgTest, `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = (SELECT excluded.version)`},
		{pgTest, `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET (balance) = ROW(excluded.version)`},
		{sqliteTest, `INSERT INTO accounts (id, balance, version) VALUES (1, 9, 3) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance WHERE accounts.version = excluded.version`},
		{sqliteTest, `INSERT INTO accounts (id) VALUES (?) ON CONFLICT (id) DO NOTHING ON CONFLICT DO UPDATE SET balance = EXCLUDED."fence_token"`},
		{mysqlTest, `INSERT INTO accounts (id, balance, version) VALUES (1, 9, 3) ON DUPLICATE KEY UPDATE balance = IF(version = VALUES(version), VALUES(balance), balance)`},
		{mysqlTest, "INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = values(`FENCE_TOKEN`)"},
		{mysqlTest, `INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = VALUE(accounts.version)`},
		{mysqlTest, `INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = VALUES ( version )`},
		{mysqlTest, `INSERT INTO accounts (id, balance) VALUES (?, ?) AS new ON DUPLICATE KEY UPDATE balance = new.version`},
		{mysqlTest, "INSERT INTO accounts (id, balance) VALUES (?, ?) AS `New` ON DUPLICATE KEY UPDATE balance = new.`fence_token`"},
		{mysqlTest, `INSERT INTO accounts SET id = 1, balance = 2 AS new ON DUPLICATE KEY UPDATE balance = new.version`},
		// A row alias's column list maps the caller's columns by position, and the
		// wrapper drops the caller's fencing columns and adds its own.
		{mysqlTest, `INSERT INTO accounts (id, balance, version) VALUES (?, ?, ?) AS new (i, b, v) ON DUPLICATE KEY UPDATE balance = IF(version = v, b, balance)`},
		{mysqlTest, `INSERT INTO accounts (id, balance) VALUES (?, ?) AS new (i, b, t, v) ON DUPLICATE KEY UPDATE balance = v`},
		{mysqlTest, `INSERT INTO accounts SET id = 1 AS new (i) ON DUPLICATE KEY UPDATE balance = i`},
	} {
		rw := newTestRewriter(t, c.d)
		p, err := rw.Rewrite(c.q, false)
		if !isRefusal(err) {
			t.Errorf("%s: Rewrite(%q) = %+v, %v; want a refusal", c.d.name, c.q, p, err)
			continue
		}
		if !strings.Contains(err.Error(), "ExpectVersion") && !strings.Contains(err.Error(), "row alias") {
			t.Errorf("%s: %q: refusal %q names no way out", c.d.name, c.q, err)
		}
	}
}

// Reads of the proposed row's other columns, of the stored row's fencing columns, and
// the caller's own assignments of the fencing columns (dropped: the wrapper assigns
// them) are fenced as before.
func TestUpsertReadsNotOfProposedFenceColumnsFenced(t *testing.T) {
	for _, c := range []struct {
		d      testDialect
		q, out string
	}{
		{pgTest, `INSERT INTO accounts (id, balance) VALUES ($1, $2) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance WHERE accounts.version = 3`,
			`INSERT INTO accounts (id, balance, "fence_token", "version") VALUES ($1, $2, $3, 1) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance, "version" = accounts."version" + 1, "fence_token" = CASE WHEN accounts."fence_token" <= $3 THEN $3::bigint ELSE NULL END WHERE accounts.version = 3`},
		{pgTest, `INSERT INTO "accounts" ("id","version") VALUES ($1,$2) ON CONFLICT ("id") DO UPDATE SET "version"="excluded"."version","fence_token"="excluded"."fence_token"`,
			`INSERT INTO "accounts" ("id", "fence_token", "version") VALUES ($1, $2, 1) ON CONFLICT ("id") DO UPDATE SET "version" = "accounts"."version" + 1, "fence_token" = CASE WHEN "accounts"."fence_token" <= $2 THEN $2::bigint ELSE NULL END`},
		{mysqlTest, `INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE balance = IF(version = 3, VALUES(balance), balance)`,
			"INSERT INTO accounts (id, balance, `fence_token`, `version`) VALUES (?, ?, ?, 1) ON DUPLICATE KEY UPDATE balance = IF(version = 3, VALUES(balance), balance), `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"},
		{mysqlTest, `INSERT INTO accounts SET id = ?, balance = ? AS new ON DUPLICATE KEY UPDATE balance = new.balance`,
			"INSERT INTO accounts SET id = ?, balance = ?, `fence_token` = ?, `version` = 1 AS new ON DUPLICATE KEY UPDATE balance = new.balance, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"},
		{mysqlTest, `INSERT INTO accounts (id, balance) VALUES (?, ?) AS new ON DUPLICATE KEY UPDATE balance = new.balance`,
			"INSERT INTO accounts (id, balance, `fence_token`, `version`) VALUES (?, ?, ?, 1) AS new ON DUPLICATE KEY UPDATE balance = new.balance, `version` = `version` + 1, `fence_token` = CASE WHEN `fence_token` <= ? THEN ? ELSE NULL END"},
	} {
		rw := newTestRewriter(t, c.d)
		p, err := rw.Rewrite(c.q, false)
		if err != nil {
			t.Errorf("%s: Rewrite(%q): %v", c.d.name, c.q, err)
			continue
		}
		if p.SQL != c.out {
			t.Errorf("%s: Rewrite(%q)\n got %s\nwant %s", c.d.name, c.q, p.SQL, c.out)
		}
	}
}

// An ON DUPLICATE KEY UPDATE whose every assignment sets a column to itself (GORM's
// and ent's DoNothing: `id`=`id`) is planned as ON CONFLICT DO NOTHING is: the insert
// branch carries the token and version 1, the conflict branch is the caller's no-op,
// and Stamped holds the form with the fencing assignments for a table whose guard is
// installed (red-team rts F5).
func TestUpsertSelfAssignmentIsDoNothing(t *testing.T) {
	const ins = "INSERT INTO `accounts` (`id`,`balance`, `fence_token`, `version`) VALUES (?,?, ?, 1) ON DUPLICATE KEY UPDATE "
	for _, c := range []struct{ q, odku string }{
		{"INSERT INTO `accounts` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE `id`=`id`", "`id`=`id`"},
		{"INSERT INTO `accounts` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE id = ID", "id = ID"},
		{"INSERT INTO `accounts` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE `id` = accounts.`id`, balance = `Accounts`.balance", "`id` = accounts.`id`, balance = `Accounts`.balance"},
		{"INSERT INTO `accounts` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE shop.accounts.id = id", "shop.accounts.id = id"},
		{"INSERT INTO `accounts` (`id`,`balance`) VALUES (?,?) ON DUPLICATE KEY UPDATE version = version", "version = version"},
	} {
		rw := newTestRewriter(t, mysqlTest)
		p, err := rw.Rewrite(c.q, false)
		if err != nil {
			t.Errorf("Rewrite(%q): %v", c.q, err)
			continue
		}
		if want := ins + c.odku; p.SQL != want || len(p.Args) != 3 || p.Args[2] != ArgToken {
			t.Errorf("Rewrite(%q)\n got %s %v\nwant %s", c.q, p.SQL, p.Args, want)
		}
		if p.Stamped == nil || !strings.Contains(p.Stamped.SQL, "CASE WHEN `fence_token` <= ?") || p.Stamped.NUser != p.NUser {
			t.Errorf("Rewrite(%q): Stamped = %+v, want the stamping form", c.q, p.Stamped)
		}
	}
	// Anything else is a write of the row, fenced as before, with no second form.
	for _, q := range []string{
		"INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = VALUES(id)",
		"INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = id, balance = balance + 1",
		"INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = balance",
		"INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = ledger.id",
		"INSERT INTO accounts (id, balance) VALUES (?, ?) AS new ON DUPLICATE KEY UPDATE id = new.id",
		"INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = (id)",
		"INSERT INTO accounts (id, balance) VALUES (?, ?) ON DUPLICATE KEY UPDATE id = ?",
	} {
		rw := newTestRewriter(t, mysqlTest)
		p, err := rw.Rewrite(q, false)
		if err != nil {
			t.Errorf("Rewrite(%q): %v", q, err)
			continue
		}
		if p.Stamped != nil || !strings.Contains(p.SQL, "CASE WHEN `fence_token` <= ?") {
			t.Errorf("Rewrite(%q) = %s (Stamped %v): want the conflict branch fenced", q, p.SQL, p.Stamped != nil)
		}
	}
	// ExpectVersion: the stamping form checks the version; the no-op writes nothing.
	rw := newTestRewriter(t, mysqlTest)
	p, err := rw.Rewrite("INSERT INTO accounts (id) VALUES (?) ON DUPLICATE KEY UPDATE id = id", true)
	if err != nil || p.Stamped == nil || !strings.Contains(p.Stamped.SQL, "CASE WHEN `version` = ?") {
		t.Errorf("versioned: %+v, %v", p, err)
	}
}

// A self-assignment is judged by ASCII folding only, as MariaDB tells s from ſ (U+017F)
// and µ from μ in column names: "s = ſ" copies one column into another and is fenced
// like any write (a red-team pass had it sent unfenced as a do-nothing form).
func TestSelfAssignmentFoldsASCIIOnly(t *testing.T) {
	rw := newTestRewriter(t, mysqlTest)
	for q, noop := range map[string]bool{
		"INSERT INTO accounts (id, s) VALUES (1, 0) ON DUPLICATE KEY UPDATE s = S":                true,
		"INSERT INTO accounts (id, s) VALUES (1, 0) ON DUPLICATE KEY UPDATE s = \u017f":           false,
		"INSERT INTO accounts (id, s) VALUES (1, 0) ON DUPLICATE KEY UPDATE `\u00b5` = `\u03bc`":  false,
		"INSERT INTO accounts (id, s) VALUES (1, 0) ON DUPLICATE KEY UPDATE s = ACCOUNTS.s":       true,
		"INSERT INTO accounts (id, s) VALUES (1, 0) ON DUPLICATE KEY UPDATE s = accounts\u017f.s": false,
	} {
		p, err := rw.Rewrite(q, false)
		if err != nil {
			if noop {
				t.Errorf("%s: %v", q, err)
			}
			continue
		}
		if got := p.Stamped != nil; got != noop {
			t.Errorf("%s: do-nothing form %v, want %v", q, got, noop)
		}
	}
}
