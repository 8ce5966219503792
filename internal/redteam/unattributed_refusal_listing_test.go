// A guard refusal of a statement the wrapper cannot attribute, on a pool listing the
// table qualified or in capitals (red-team rt56d, held).

package redteam

import (
	"context"
	"errors"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestUnattributedGuardRefusalQualifiedListing: the tombstone guard's refusal of a
// dynamic re-insert (DO … EXECUTE, a function) on a pool that lists the table
// schema-qualified, in another schema than public, or in capitals: ErrFenced.
func TestUnattributedGuardRefusalQualifiedListing(t *testing.T) {
	for _, listing := range []string{"public.accounts", "PUBLIC.ACCOUNTS", "Accounts"} {
		t.Run(listing, func(t *testing.T) {
			d := freshDB(t, postgresBackend(), entry{})
			ctx0, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			d.ctx = ctx0
			guardWithTombstones(d, "bigint")
			c, err := d.b.connector(d.dsn)
			if err != nil {
				t.Fatal(err)
			}
			w := fencedsql.OpenDB(c, fencedsql.WithDialect(d.b.dialect), fencedsql.Guard(listing), fencedsql.WithDynamicSQL(true))
			defer w.Close()
			if _, err := w.ExecContext(tokenCtx(ctx0, freshToken), "DELETE FROM accounts WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			d.must("CREATE FUNCTION revive() RETURNS int LANGUAGE sql AS $$ INSERT INTO accounts (id, balance, fence_token) VALUES (2, 7, 10) RETURNING 1 $$")
			for _, q := range []string{"DO $$BEGIN EXECUTE 'INSERT INTO acc' || 'ounts (id, balance, fence_token) VALUES (2, 7, 10)'; END$$", "SELECT revive()"} {
				_, err := w.ExecContext(tokenCtx(ctx0, staleToken), q)
				if !errors.Is(err, fencedsql.ErrFenced) {
					t.Errorf("%s on a pool listing %s: %v (%T), want ErrFenced", q, listing, err, err)
				}
			}
		})
	}
}
