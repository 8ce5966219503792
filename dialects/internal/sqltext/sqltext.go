// Package sqltext holds the small text builders the dialects share when they write DDL.
package sqltext

import "strings"

// Each applies f to every column name in cols and joins the results with sep: the
// "t.a = NEW.a AND t.b = NEW.b" and "OLD.a, OLD.b" of a composite key.
func Each(cols []string, sep string, f func(col string) string) string {
	out := make([]string, len(cols))
	for i, c := range cols {
		out[i] = f(c)
	}
	return strings.Join(out, sep)
}
