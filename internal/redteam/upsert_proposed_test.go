package redteam

import (
	"database/sql"
	"errors"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestUpsertReadOfProposedFenceColumnRefused (red-team rts F2): the wrapper writes its
// token and version 1 in the proposed row of an upsert in place of the caller's values,
// so a conflict branch reading the proposed row's version or token (EXCLUDED.version,
// MariaDB's VALUES(version)) would read those: the usual version-checked upsert
// silently did nothing (or applied a write whose check should fail when the stored
// version was 1). Such a statement is refused unsent (ErrUnsupported), the row is
// untouched; the way the refusal names, ExpectVersion with the plain upsert, gives the
// raw statement's result, and a version that is not the stored one fails loudly.
func TestUpsertReadOfProposedFenceColumnRefused(t *testing.T) {
	cases := []struct {
		b             backend
		checked, with string // the caller's version-checked upsert; the same with ExpectVersion
	}{
		{postgresBackend(),
			"INSERT INTO accounts (id, balance, version) VALUES (1, 9, 3) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance WHERE accounts.version = EXCLUDED.version",
			"INSERT INTO accounts (id, balance) VALUES (1, 9) ON CONFLICT (id) DO UPDATE SET balance = EXCLUDED.balance"},
		{sqliteBackend(),
			"INSERT INTO accounts (id, balance, version) VALUES (1, 9, 3) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance WHERE accounts.version = excluded.version",
			"INSERT INTO accounts (id, balance) VALUES (1, 9) ON CONFLICT (id) DO UPDATE SET balance = excluded.balance"},
		{mysqlBackend(),
			"INSERT INTO accounts (id, balance, version) VALUES (1, 9, 3) ON DUPLICATE KEY UPDATE balance = IF(version = VALUES(version), VALUES(balance), balance)",
			"INSERT INTO accounts (id, balance) VALUES (1, 9) ON DUPLICATE KEY UPDATE balance = VALUES(balance)"},
	}
	for _, c := range cases {
		t.Run(c.b.name, func(t *testing.T) {
			raw := freshDB(t, c.b, entry{})
			if _, err := raw.raw.ExecContext(raw.ctx, c.checked); err != nil {
				t.Fatalf("raw: %v", err)
			}
			rawBal, _, _ := rtsRow(t, raw, 1)

			d := freshDB(t, c.b, entry{})
			w, _ := d.open(true, nil)
			before := d.snap()
			ctx := fencedsql.WithToken(d.ctx, freshToken)
			for _, q := range []string{
				c.checked,
				"INSERT INTO accounts (id, balance) VALUES (1, 9) " + conflictBranch(c.b.name, "balance = "+proposed(c.b.name, "fence_token")),
			} {
				_, err := w.ExecContext(ctx, q)
				var ue *fencedsql.UnsupportedError
				if !errors.Is(err, fencedsql.ErrUnsupported) || !errors.As(err, &ue) || !ue.NotSent() {
					t.Errorf("%s: %v; want ErrUnsupported, not sent", q, err)
				}
			}
			if df := diff(before, d.snap()); df != "" {
				t.Errorf("refused upserts changed rows:\n%s", indent(df))
			}
			if _, err := w.ExecContext(fencedsql.ExpectVersion(ctx, 2), c.with); !errors.Is(err, fencedsql.ErrVersionConflict) {
				t.Errorf("ExpectVersion 2 (stored 3): %v; want ErrVersionConflict", err)
			}
			if _, err := w.ExecContext(fencedsql.ExpectVersion(ctx, 3), c.with); err != nil {
				t.Fatalf("ExpectVersion 3: %v", err)
			}
			bal, tok, _ := rtsRow(t, d, 1)
			if bal != rawBal || tok != freshToken {
				t.Errorf("ExpectVersion 3: balance %d, token %d; want the raw statement's balance %d, token %d", bal, tok, rawBal, freshToken)
			}
		})
	}
}

func proposed(backend, col string) string {
	if backend == "mariadb" {
		return "VALUES(" + col + ")"
	}
	return "EXCLUDED." + col
}

func conflictBranch(backend, set string) string {
	if backend == "mariadb" {
		return "ON DUPLICATE KEY UPDATE " + set
	}
	return "ON CONFLICT (id) DO UPDATE SET " + set
}

// rtsRow reads one row's balance and token on the raw pool.
func rtsRow(t *testing.T, d *dbs, id int) (bal, tok int64, ok bool) {
	t.Helper()
	q := "SELECT balance, fence_token FROM accounts WHERE id = ?"
	if d.b.name == "postgres" {
		q = "SELECT balance, fence_token FROM accounts WHERE id = $1"
	}
	err := d.raw.QueryRowContext(d.ctx, q, id).Scan(&bal, &tok)
	if errors.Is(err, sql.ErrNoRows) {
		return 0, 0, false
	}
	if err != nil {
		t.Fatalf("read row %d: %v", id, err)
	}
	return bal, tok, true
}
