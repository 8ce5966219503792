package redteam

import (
	"context"
	"errors"
	"fmt"
	"strconv"
	"strings"
	"testing"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// Parameter limits (issue 22, item 4): an INSERT batch the raw driver accepts must not
// fail through the wrapper only because the wrapper binds the fencing token. Each case
// is first run raw (accepted; one parameter more is refused by the driver, so the
// limit is the driver's). Through the wrapper it is either accepted, with every row
// stamped, or refused with ErrUnsupported before anything is sent, nothing written,
// naming the largest batch of the same shape, which then goes through.

// limitCase is one batch shape: cols of the columns id, balance, n1, n2, and rows rows.
type limitCase struct {
	cols, rows int
	maxRows    int // 0: the wrapper accepts the batch; else it refuses it, proposing this many rows
}

func TestParamLimitPostgres(t *testing.T) {
	runParamLimit(t, postgresBackend(), 65535, []limitCase{
		{cols: 3, rows: 21845, maxRows: 21844}, // 65535: the token ($n, bound once) is one too many
		{cols: 4, rows: 16383},                 // 65532 + 1 token
	})
}

func TestParamLimitMariaDB(t *testing.T) {
	runParamLimit(t, mysqlBackend(), 65535, []limitCase{
		{cols: 2, rows: 32767, maxRows: 21845}, // 65534; ? cannot be reused: a token per row
		{cols: 4, rows: 16383, maxRows: 13107}, // 65532
	})
}

func TestParamLimitSQLite(t *testing.T) {
	runParamLimit(t, sqliteBackend(), 32766, []limitCase{
		{cols: 3, rows: 10922, maxRows: 10921}, // 32766: even one shared ?NNN token is too many
		{cols: 4, rows: 8191},                  // 32764: a token per row would be 40955; one shared ?NNN fits
	})
}

var limitCols = []string{"id", "balance", "n1", "n2"}

// limitInsert returns an INSERT of rows rows into cols of limitCols, ids from 1000, and
// its arguments.
func limitInsert(b backend, cols, rows int) (string, []any) {
	var sb strings.Builder
	sb.WriteString("INSERT INTO accounts (" + strings.Join(limitCols[:cols], ", ") + ") VALUES ")
	args := make([]any, 0, cols*rows)
	for r := range rows {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := range cols {
			if c > 0 {
				sb.WriteString(", ")
			}
			v := int64(c)
			if c == 0 {
				v = int64(1000 + r)
			}
			args = append(args, v)
			if b.dialect.NumberedParams() {
				sb.WriteString("$" + strconv.Itoa(len(args)))
			} else {
				sb.WriteByte('?')
			}
		}
		sb.WriteByte(')')
	}
	return sb.String(), args
}

func runParamLimit(t *testing.T, b backend, limit int, cases []limitCase) {
	d := freshDB(t, b, entry{setup: []string{
		"ALTER TABLE accounts ADD COLUMN n1 BIGINT NOT NULL DEFAULT 0",
		"ALTER TABLE accounts ADD COLUMN n2 BIGINT NOT NULL DEFAULT 0",
	}})
	fenced, rec := d.open(true, nil)
	// Batches of 32k-65k parameters are slow under -race (SQLite's C code most of all):
	// a longer deadline than the catalogue's.
	bg, cancel := context.WithTimeout(context.Background(), 10*time.Minute)
	t.Cleanup(cancel)
	count := func(where string) int {
		t.Helper()
		var n int
		if err := d.raw.QueryRowContext(bg, "SELECT COUNT(*) FROM accounts WHERE id >= 1000"+where).Scan(&n); err != nil {
			t.Fatal(err)
		}
		return n
	}
	clear := func() {
		t.Helper()
		if _, err := d.raw.ExecContext(bg, "DELETE FROM accounts WHERE id >= 1000"); err != nil {
			t.Fatal(err)
		}
	}
	stamped := fmt.Sprintf(" AND fence_token = %d AND version = 1", freshToken)
	ctx := tokenCtx(bg, freshToken)

	// The limit is the driver's: one parameter more is refused raw.
	q, args := limitInsert(b, 1, limit+1)
	if _, err := d.raw.ExecContext(bg, q, args...); err == nil {
		t.Fatalf("the raw driver accepted %d parameters: the limit under test is not %d", limit+1, limit)
	}
	clear()

	for _, c := range cases {
		t.Run(fmt.Sprintf("%dx%d", c.cols, c.rows), func(t *testing.T) {
			q, args := limitInsert(b, c.cols, c.rows)
			if _, err := d.raw.ExecContext(bg, q, args...); err != nil {
				t.Fatalf("raw driver, %d parameters: %v", len(args), err)
			}
			clear()

			rec.start()
			res, err := fenced.ExecContext(ctx, q, args...)
			log := rec.stop()
			if c.maxRows == 0 {
				if err != nil {
					t.Fatalf("fenced, %d parameters: %v", len(args), err)
				}
				if n, _ := res.RowsAffected(); n != int64(c.rows) {
					t.Errorf("fenced: %d rows affected, want %d", n, c.rows)
				}
				if n := count(stamped); n != c.rows {
					t.Errorf("fenced: %d rows stamped with token %d, want %d", n, freshToken, c.rows)
				}
				clear()
				return
			}
			var ue *fencedsql.UnsupportedError
			if !errors.Is(err, fencedsql.ErrUnsupported) || !errors.As(err, &ue) {
				t.Fatalf("fenced, %d parameters: err = %v, want ErrUnsupported", len(args), err)
			}
			for _, s := range []string{fmt.Sprintf("limit of %d per statement", limit), fmt.Sprintf("at most %d rows", c.maxRows)} {
				if !strings.Contains(err.Error(), s) {
					t.Errorf("error %q does not say %q", err, s)
				}
			}
			for _, l := range log {
				if strings.Contains(l, "INSERT") {
					t.Errorf("the refused INSERT reached the driver: %.120s…", l)
				}
			}
			if n := count(""); n != 0 {
				t.Errorf("refused, yet %d rows written", n)
			}
			// The batch the error proposes goes through.
			q, args = limitInsert(b, c.cols, c.maxRows)
			if _, err := fenced.ExecContext(ctx, q, args...); err != nil {
				t.Fatalf("fenced, the proposed %d rows: %v", c.maxRows, err)
			}
			if n := count(stamped); n != c.maxRows {
				t.Errorf("proposed batch: %d rows stamped, want %d", n, c.maxRows)
			}
			clear()
		})
	}
}
