package dialect

import (
	"context"
	"fmt"
	"strings"
)

// CatalogQuery runs a read-only catalog query and returns its rows as text, each value
// rendered by CatalogText: NULL as "", booleans as "1"/"0", numbers in decimal.
type CatalogQuery func(ctx context.Context, query string, args ...any) ([][]string, error)

// CatalogBool reads a flag of a catalog query (a column's not-null flag, an "is it
// installed" answer): 1, true or t (any case, surrounding spaces ignored) is true;
// anything else, "" (NULL) included, is false. Integer and boolean flags arrive as "1"/"0" (CatalogText), text ones as
// the database spells them ("t"/"f", "true"/"false", "TRUE").
func CatalogBool(s string) bool {
	s = strings.TrimSpace(s)
	return s == "1" || strings.EqualFold(s, "t") || strings.EqualFold(s, "true")
}

// CatalogText renders a value of a catalog query as text: NULL as "", booleans as
// "1"/"0", bytes as their text.
func CatalogText(v any) string {
	switch v := v.(type) {
	case nil:
		return ""
	case []byte:
		return string(v)
	case string:
		return v
	case bool:
		if v {
			return "1"
		}
		return "0"
	default:
		return fmt.Sprint(v)
	}
}
