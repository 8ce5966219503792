package mysql_test

import (
	"context"
	"encoding/hex"
	"fmt"
	"math/rand"
	"os"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/fencetest"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// hexTwinLedger creates ledger in a database named name (dropped at the end), guarded
// and tombstoned by -apply, rows 1..3 at token 10, row 3's e-mail x@example.com.
func hexTwinLedger(t *testing.T, ctx context.Context, admin, name string) (string, func(...string)) {
	t.Helper()
	dsn := oddDatabase(t, ctx, admin, name)
	raw := testdb.Open(t, "mysql", dsn, replaceLedger,
		"INSERT INTO ledger (id, fence_token, version) VALUES (1, 10, 1), (2, 10, 1), (3, 10, 1)")
	raw.SetMaxOpenConns(1)
	reps, err := fencetest.ApplyRounds(ctx, raw, mysql.Dialect, false, schema.GuardSpec{Table: "ledger"})
	if err != nil || len(fencetest.ReportProblems(reps)) > 0 {
		t.Fatalf("apply in %s: %v %q", name, err, fencetest.ReportProblems(reps))
	}
	testdb.Exec(t, raw, "UPDATE ledger SET email = 'x@example.com', version = version + 1 WHERE id = 3")
	return dsn, func(q ...string) { testdb.Exec(t, raw, q...) }
}

// TestReplaceMarkPreviousVersionInHexTwinDatabase (red-team rt58e F1): mark version 1
// wrote "<token>/<time>/<database>", and version 2 first compared "<time>/<HEX(database)>"
// in the same variable: a version-1 tombstone guard (accepted as the guard's own until
// re-installed) in a database B named by the hex digits of A's name wrote exactly the
// text A's version-2 tombstone trigger took for its own, through a user trigger on
// A.ledger that inserts into B.ledger (the rt39b F2 set-up), and the row a REPLACE
// displaced in A was recorded at its own token. Version 2 compares "<time>:<hex>",
// which no version-1 text equals (mark.go).
//
// Generator: seeded names for A, the REPLACE's token, a stale token below it; trial 0
// with B re-installed (version 2). Oracle: key 3, displaced by a REPLACE under T, is
// recorded at >= T (or the REPLACE is refused and changes nothing), and a stale holder
// below T cannot re-insert it.
func TestReplaceMarkPreviousVersionInHexTwinDatabase(t *testing.T) {
	admin := testdb.NeedServer(t, testdb.EnvMySQL, "MySQL/MariaDB")
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	bases := []string{"hextwinA", "hextwin_a", "HexTwinMix", "hextwin1"}
	for trial := 0; trial < 3; trial++ {
		prevB := trial > 0 // trial 0: the control, B re-installed (v2): held
		nameA := fmt.Sprintf("%s%d_%d", bases[rng.Intn(len(bases))], os.Getpid()%1000, trial)
		nameB := strings.ToUpper(hex.EncodeToString([]byte(nameA)))
		repTok := 40 + rng.Int63n(20)
		stale := 11 + rng.Int63n(repTok-11)
		t.Run(nameA, func(t *testing.T) {
			ctx, cancel := context.WithTimeout(context.Background(), 50*time.Second)
			defer cancel()
			dsnA, execA := hexTwinLedger(t, ctx, admin, nameA)
			_, execB := hexTwinLedger(t, ctx, admin, nameB)
			// B: a tombstone guard installed by the previous version (not yet re-installed).
			if prevB {
				execB(mysql.PreviousTombstoneTriggerDDL(dialect.TableName{Name: "ledger"}, []dialect.KeyColumn{{Name: "id", Type: "int(11)"}}, "fence_token")...)
			}
			execA("CREATE TRIGGER archive BEFORE INSERT ON ledger FOR EACH ROW " +
				"INSERT INTO `" + nameB + "`.ledger (id, balance) VALUES (NEW.id + 100, NEW.balance)")
			rawA := testdb.Open(t, "mysql", dsnA)
			rawA.SetMaxOpenConns(1)
			if reps, err := schema.Check(ctx, rawA, mysql.Dialect, schema.GuardSpec{Table: "ledger"}); err == nil {
				t.Logf("schema.Check of %s with the user trigger: OK=%v problems %q", nameA, reps[0].OK(), fencetest.ReportProblems(reps))
			}
			_, err := rawA.ExecContext(ctx, fmt.Sprintf("REPLACE INTO ledger (id, email, balance, fence_token, version) VALUES (5, 'x@example.com', 1, %d, 1)", repTok))
			if err != nil {
				var n int
				if qerr := rawA.QueryRowContext(ctx, "SELECT COUNT(*) FROM ledger WHERE id = 3 AND fence_token = 10").Scan(&n); qerr != nil || n != 1 {
					t.Fatalf("the refused REPLACE (%v) changed key 3: %d rows, %v", err, n, qerr)
				}
				t.Logf("REPLACE refused (held): %v", err)
				return
			}
			var tomb int64
			if err := rawA.QueryRowContext(ctx, "SELECT fence_token FROM fencedsql_tomb_ledger WHERE id = 3").Scan(&tomb); err != nil {
				t.Fatal(err)
			}
			_, ierr := rawA.ExecContext(ctx, fmt.Sprintf("INSERT INTO ledger (id, balance, fence_token, version) VALUES (3, 666, %d, 1)", stale))
			var n int
			if err := rawA.QueryRowContext(ctx, "SELECT COUNT(*) FROM ledger WHERE id = 3").Scan(&n); err != nil {
				t.Fatal(err)
			}
			if tomb < repTok || n != 0 {
				t.Errorf("seed %d: database %s (mark v2) beside database %s (= HEX of its name, previous mark version %v): key 3 displaced by a REPLACE under %d recorded at %d; stale re-insert under %d: err %v, rows %d; want the tombstone at >= %d and no row",
					seed, nameA, nameB, prevB, repTok, tomb, stale, ierr, n, repTok)
			}
		})
	}
}
