package sqlite_test

import (
	"context"
	"errors"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/internal/testdb"
)

// Generated PRAGMA chains that lower durability (sqlGen.durabilityPragmas), sent
// through the pool on the connection that then writes, after the session check ran
// (a first guarded write): whenever a chain leaves the connection unsafe as read back
// (synchronous OFF, journal_mode OFF, WAL with synchronous NORMAL or lower), the next
// guarded write is refused with a *SessionError (ErrSchema) or ErrUnsupported
// (docs/design.md G14; TestWALWithSynchronousNormalThroughPool has the fixed
// spellings).
func TestGeneratedDurabilityPragmas(t *testing.T) {
	k, g, tp := startGen(t, 1500*time.Millisecond, genShapes["rowid"])
	i, unsafeChains := 0, 0
	for ; k.more(i); i++ {
		pre := g.durabilityPragmas()
		ctx, cancel := context.WithTimeout(context.Background(), 8*time.Second)
		db := testdb.Open(t, "fenced-sqlite", "file:"+filepath.ToSlash(copyGenFile(t, tp.guarded))+"?_pragma=busy_timeout(2000)&fenced_tables=accounts")
		conn, err := db.Conn(ctx)
		if err != nil {
			t.Fatal(err)
		}
		if _, err := conn.ExecContext(fencedsql.WithToken(ctx, 60), `UPDATE accounts SET balance = 1 WHERE id = 1`); err != nil {
			t.Fatal(err)
		}
		var ran []string
		for _, p := range pre {
			_, perr := conn.ExecContext(ctx, p)
			ran = append(ran, p+" -> "+errOrOK(perr))
		}
		var jm string
		var sy int
		qerr := conn.QueryRowContext(ctx, `SELECT (SELECT journal_mode FROM pragma_journal_mode), (SELECT synchronous FROM pragma_synchronous)`).Scan(&jm, &sy)
		unsafe := qerr == nil && (sy == 0 || strings.EqualFold(jm, "off") || strings.EqualFold(jm, "wal") && sy <= 1)
		_, werr := conn.ExecContext(fencedsql.WithToken(ctx, 61), `UPDATE accounts SET balance = 2 WHERE id = 1`)
		conn.Close()
		db.Close()
		cancel()
		if unsafe {
			unsafeChains++
			if !errors.Is(werr, fencedsql.ErrSchema) && !errors.Is(werr, fencedsql.ErrUnsupported) {
				t.Errorf("case %d: durability lowered through the pool (journal_mode %s, synchronous %d), then a guarded write: %v; want it refused\n  %s", i, jm, sy, werr, strings.Join(ran, "\n  "))
			}
		}
	}
	t.Logf("%d pragma chains, %d left the connection unsafe (each refused), in %v", i, unsafeChains, time.Since(k.start).Round(time.Millisecond))
}

// durabilityPragmas is a chain of one or two PRAGMAs setting journal_mode or
// synchronous, in the spellings SQLite accepts: quoted names ("x", [x], `x`, 'x'), a
// schema qualifier, the call form, values such as 'off', 0x0, -0, no, comments in
// the gaps.
func (g *sqlGen) durabilityPragmas() []string {
	var pre []string
	for k := 0; k <= g.r.Intn(2); k++ {
		name := g.pick("synchronous", "SYNCHRONOUS", "journal_mode", "Journal_Mode", `"synchronous"`, `"journal_mode"`, "[synchronous]", "`journal_mode`", "'synchronous'")
		val := g.pick("WAL", "wal", "'wal'", `"WAL"`, "OFF", "off", "'off'", "MEMORY", "TRUNCATE")
		if strings.Contains(strings.ToLower(name), "sync") {
			val = g.pick("0", "OFF", "off", "'off'", `"OFF"`, "1", "NORMAL", "'normal'", "false", "no", "+0", "-0", "0x0", "00")
		}
		schema := g.pick("", "", "main.", `"main".`, "[main].", "MAIN.", "main~.~")
		s := "PRAGMA~" + schema + name + "~=~" + val
		if g.r.Intn(3) == 0 {
			s = "PRAGMA~" + schema + name + "~(" + val + ")"
		}
		pre = append(pre, g.fill(s))
	}
	return pre
}

// errOrOK is err's text, or "ok".
func errOrOK(err error) string {
	if err == nil {
		return "ok"
	}
	return err.Error()
}
