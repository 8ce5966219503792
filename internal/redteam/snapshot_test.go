// Snapshots of a database's tables and the differences between them.

package redteam

import (
	"database/sql"
	"database/sql/driver"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/go-sql-driver/mysql"
)

// ---------------------------------------------------------------- snapshots

// snapshot is every row of every base table (sorted) and the catalog lines (sorted).
type snapshot struct {
	tables  map[string][]string
	catalog []string
}

// snap reads the database on a new pool, so that no cached plan outlives a schema
// change (PostgreSQL: "cached plan must not change result type"). A read whose fresh
// connection the server drops mid-query (MariaDB under load once answered the catalog
// query with EOF, "invalid connection") is read again on another new pool: the snapshot
// only observes, and reading twice changes nothing.
func (d *dbs) snap() snapshot {
	d.t.Helper()
	for attempt := 1; ; attempt++ {
		sn, what, err := d.snapOnce()
		if err == nil {
			return sn
		}
		if attempt < 3 && (errors.Is(err, driver.ErrBadConn) || errors.Is(err, mysqlInvalidConn)) {
			d.t.Logf("snapshot: %s: %v; reading again on a new pool", what, err)
			continue
		}
		d.t.Fatalf("snapshot: %s: %v", what, err)
	}
}

func (d *dbs) snapOnce() (sn snapshot, what string, err error) {
	c, err := d.b.connector(d.dsn)
	if err != nil {
		return sn, "connector", err
	}
	db := sql.OpenDB(c)
	defer db.Close()
	sn = snapshot{tables: map[string][]string{}}
	var names []string
	rows, err := db.QueryContext(d.ctx, d.b.tables)
	if err != nil {
		return sn, "tables", err
	}
	for rows.Next() {
		var n string
		if err := rows.Scan(&n); err != nil {
			rows.Close()
			return sn, "tables", err
		}
		names = append(names, n)
	}
	rows.Close()
	if err := rows.Err(); err != nil {
		return sn, "tables", err
	}
	for _, n := range names {
		r, err := db.QueryContext(d.ctx, "SELECT * FROM "+d.b.only+d.b.quote(n))
		if err != nil {
			return sn, "rows of " + n, err
		}
		lines, err := readRows(r)
		r.Close()
		if err != nil {
			return sn, "rows of " + n, err
		}
		slices.Sort(lines)
		sn.tables[n] = lines
	}
	for _, cq := range d.b.catalog {
		r, err := db.QueryContext(d.ctx, cq)
		if err != nil {
			return sn, "catalog: " + cq, err
		}
		for r.Next() {
			var line sql.NullString
			if err := r.Scan(&line); err != nil {
				r.Close()
				return sn, "catalog: " + cq, err
			}
			sn.catalog = append(sn.catalog, line.String)
		}
		r.Close()
		if err := r.Err(); err != nil {
			return sn, "catalog: " + cq, err
		}
	}
	slices.Sort(sn.catalog)
	return sn, "", nil
}

func (sn snapshot) String() string {
	var b strings.Builder
	names := make([]string, 0, len(sn.tables))
	for n := range sn.tables {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		fmt.Fprintf(&b, "table %s:\n", n)
		for _, r := range sn.tables[n] {
			fmt.Fprintf(&b, "  %s\n", r)
		}
	}
	b.WriteString("catalog:\n")
	for _, c := range sn.catalog {
		fmt.Fprintf(&b, "  %s\n", c)
	}
	return b.String()
}

// masked replaces the fencing columns' values of accounts (and its children) by "*".
func (sn snapshot) masked() snapshot {
	out := snapshot{tables: map[string][]string{}, catalog: sn.catalog}
	for n, rows := range sn.tables {
		m := make([]string, len(rows))
		for i, r := range rows {
			parts := strings.Split(r, "|")
			for j, p := range parts {
				// updated_at is the touch trigger's (a BEFORE UPDATE trigger): a claim is an
				// UPDATE, and every claim of a table with that trigger fires it.
				if strings.HasPrefix(p, "fence_token=") || strings.HasPrefix(p, "version=") || strings.HasPrefix(p, "updated_at=") {
					parts[j] = p[:strings.IndexByte(p, '=')+1] + "*"
				}
			}
			m[i] = strings.Join(parts, "|")
		}
		slices.Sort(m)
		out.tables[n] = m
	}
	return out
}

// diff describes how b differs from a, or "" when they are equal.
func diff(a, b snapshot) string { return diffOf(a, b, func(string) bool { return true }, true) }

// guardedDiff is diff restricted to the rows of accounts (and its inheritance children).
func guardedDiff(a, b snapshot) string { return diffOf(a, b, isGuarded, false) }

func isGuarded(table string) bool {
	return table == "accounts" || strings.HasPrefix(table, "accounts_child")
}

func diffOf(a, b snapshot, tables func(string) bool, catalog bool) string {
	var out []string
	names := map[string]bool{}
	for n := range a.tables {
		names[n] = true
	}
	for n := range b.tables {
		names[n] = true
	}
	sorted := make([]string, 0, len(names))
	for n := range names {
		sorted = append(sorted, n)
	}
	slices.Sort(sorted)
	for _, n := range sorted {
		if !tables(n) {
			continue
		}
		ra, oka := a.tables[n]
		rb, okb := b.tables[n]
		switch {
		case !oka:
			out = append(out, "table "+n+" appeared")
		case !okb:
			out = append(out, "table "+n+" disappeared")
		}
		for _, r := range ra {
			if !slices.Contains(rb, r) && okb {
				out = append(out, n+": - "+r)
			}
		}
		for _, r := range rb {
			if !slices.Contains(ra, r) && oka {
				out = append(out, n+": + "+r)
			}
		}
	}
	for _, c := range a.catalog {
		if !catalog {
			break
		}
		if !slices.Contains(b.catalog, c) {
			out = append(out, "catalog: - "+c)
		}
	}
	for _, c := range b.catalog {
		if !catalog {
			break
		}
		if !slices.Contains(a.catalog, c) {
			out = append(out, "catalog: + "+c)
		}
	}
	return strings.Join(out, "\n")
}

// unstamped lists the rows of guarded tables in after that are not in before (new or
// changed) and do not carry token.
func unstamped(before, after snapshot, token int) []string {
	var bad []string
	for n, rows := range after.tables {
		if !isGuarded(n) {
			continue
		}
		for _, r := range rows {
			if slices.Contains(before.tables[n], r) {
				continue
			}
			if !strings.Contains("|"+r+"|", fmt.Sprintf("|fence_token=%d|", token)) {
				bad = append(bad, n+": "+r)
			}
		}
	}
	return bad
}

// mysqlInvalidConn is go-sql-driver/mysql's error for a connection the server closed
// while a query was under way.
var mysqlInvalidConn = mysql.ErrInvalidConn
