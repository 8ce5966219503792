package plan

import (
	"strconv"
	"strings"
	"testing"
)

// BenchmarkRewriteInsert is one full rewrite of a small INSERT and of an ORM-sized
// batch (1000 rows of 4 columns), per dialect: planning costs time linear in the
// statement's length, and the parameter-limit check adds nothing to a statement within
// the limit.
func BenchmarkRewriteInsert(b *testing.B) {
	for _, d := range []testDialect{pgTest, mysqlTest, sqliteTest} {
		for _, rows := range []int{1, 1000} {
			q := batchInsert(4, rows, d.NumberedParams())
			b.Run(d.Name()+"/"+map[int]string{1: "1row", 1000: "1000rows"}[rows], func(b *testing.B) {
				rw := newTestRewriter(b, d)
				b.ReportAllocs()
				for b.Loop() {
					if _, err := rw.Rewrite(q, false); err != nil {
						b.Fatal(err)
					}
				}
			})
		}
	}
}

// batchInsert returns a multi-row INSERT of cols columns (c1, c2, …) and rows rows, with
// positional ? placeholders, or $n ones when numbered.
func batchInsert(cols, rows int, numbered bool) string {
	var sb strings.Builder
	sb.WriteString("INSERT INTO accounts (")
	for c := range cols {
		if c > 0 {
			sb.WriteString(", ")
		}
		sb.WriteString("c" + strconv.Itoa(c+1))
	}
	sb.WriteString(") VALUES ")
	n := 0
	for r := range rows {
		if r > 0 {
			sb.WriteString(", ")
		}
		sb.WriteByte('(')
		for c := range cols {
			if c > 0 {
				sb.WriteString(", ")
			}
			n++
			if numbered {
				sb.WriteString("$" + strconv.Itoa(n))
			} else {
				sb.WriteByte('?')
			}
		}
		sb.WriteByte(')')
	}
	return sb.String()
}
