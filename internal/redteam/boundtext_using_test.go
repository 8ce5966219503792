package redteam

import (
	"context"
	"errors"
	"fmt"
	"math/rand"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// TestBoundTextAfterUsingMariaDB (red-team rt56d F2, generator): a placeholder whose
// value becomes statement text — EXECUTE IMMEDIATE CONCAT(…, ?), PREPARE s FROM
// CONCAT(…, ?), a compound statement's variable, the USING value of an EXECUTE
// IMMEDIATE whose text runs EXECUTE IMMEDIATE ? itself — after a USING that is not an
// execution's (CONVERT(… USING cs), CHAR(n USING cs), a join's USING (col)) is judged
// as its literal is, with interpolateParams on and off. Oracle: where the literal form
// is refused (ErrUnsupported), the bound form is refused too and the tombstones are
// kept (a key deleted under a newer token is not re-inserted under an older one).
func TestBoundTextAfterUsingMariaDB(t *testing.T) {
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	const bad = "DELETE FROM fencedsql_tomb_accounts"
	// a USING before the placeholder: a character-set conversion, a join's USING
	// (subqueries only inside a compound statement: EXECUTE IMMEDIATE and PREPARE
	// refuse them, error 1970).
	prefixes := []string{
		"CONVERT('' USING utf8mb4)",
		"CHAR(32 USING ascii)",
		"CONVERT(CHAR(32) USING latin1)",
	}
	subqueries := []string{
		"(SELECT '' FROM ledger a JOIN ledger b USING (id) LIMIT 1)",
		"IF(EXISTS(SELECT 1 FROM ledger x JOIN ledger y USING (id, account_id)), '', '')",
	}
	heads := []string{"EXECUTE IMMEDIATE CONCAT(%s, %s)", "PREPARE rt56s FROM CONCAT(%s, %s)",
		"BEGIN NOT ATOMIC DECLARE q TEXT DEFAULT CONCAT(%s, %s); EXECUTE IMMEDIATE q; END",
		"BEGIN NOT ATOMIC DECLARE q TEXT; SET q = CONCAT(%s, %s); EXECUTE IMMEDIATE q; END",
		"BEGIN NOT ATOMIC DECLARE q TEXT; BEGIN NOT ATOMIC SET q = CONCAT(%s, %s); END; EXECUTE IMMEDIATE q; END",
		"EXECUTE IMMEDIATE 'IF 1 THEN EXECUTE IMMEDIATE ?; END IF' USING CONCAT(%s, %s)"}
	for i := 0; i < 2*len(heads); i++ {
		head := heads[i%len(heads)] // every head, interpolated and not
		pre := prefixes[rng.Intn(len(prefixes))]
		if strings.HasPrefix(head, "BEGIN") && rng.Intn(2) == 0 {
			pre = subqueries[rng.Intn(len(subqueries))]
		}
		lit := fmt.Sprintf(head, pre, "'"+bad+"'")
		bound := fmt.Sprintf(head, pre, "?")
		interpolate := i < len(heads)
		t.Run(fmt.Sprintf("%d_interpolate_%v", i, interpolate), func(t *testing.T) {
			d := freshDB(t, mysqlBackend(), entry{dsn: fmt.Sprintf("interpolateParams=%v", interpolate)})
			ctx0, cancel := context.WithTimeout(context.Background(), 40*time.Second)
			defer cancel()
			d.ctx = ctx0
			guardWithTombstones(d, "bigint(20)")
			w := dynamicPool(t, d)
			if _, err := w.ExecContext(tokenCtx(ctx0, freshToken), "DELETE FROM accounts WHERE id = 2"); err != nil {
				t.Fatal(err)
			}
			ctx := tokenCtx(ctx0, staleToken)
			conn, err := w.Conn(ctx)
			if err != nil {
				t.Fatal(err)
			}
			defer conn.Close()
			_, lerr := conn.ExecContext(ctx, lit)
			if !errors.Is(lerr, fencedsql.ErrUnsupported) {
				t.Fatalf("control, the literal form %s: %v; want ErrUnsupported", lit, lerr)
			}
			_, err = conn.ExecContext(ctx, bound, bad)
			if err == nil && strings.HasPrefix(head, "PREPARE") {
				_, err = conn.ExecContext(ctx, "EXECUTE rt56s")
			}
			var tombs int
			_ = d.raw.QueryRowContext(ctx0, "SELECT COUNT(*) FROM fencedsql_tomb_accounts").Scan(&tombs)
			if tombs != 1 {
				t.Errorf("FAIL-OPEN: %s with %q bound erased the tombstones (err=%v)", bound, bad, err)
			}
			if !errors.Is(err, fencedsql.ErrUnsupported) {
				t.Errorf("%s: err = %v, want ErrUnsupported (its literal form is refused)", bound, err)
			}
			// the key deleted under 100 comes back under 10?
			if tombs == 0 {
				_, ierr := conn.ExecContext(ctx, "INSERT INTO accounts (id, balance) VALUES (2, 7)")
				var n int
				_ = d.raw.QueryRowContext(ctx0, "SELECT COUNT(*) FROM accounts WHERE id = 2").Scan(&n)
				if n != 0 {
					t.Errorf("FAIL-OPEN: key 2, deleted under token %d, re-inserted under %d (err=%v)", freshToken, staleToken, ierr)
				}
			}
		})
	}
}
