// The pre-filter of protect: the words that send a statement to it, found without tokenizing.

package plan

import (
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/internal/sqllex"
)

// protectNeedles are the words whose presence (ASCII case-insensitively) sends a
// statement to protect; the pre-filter scans for them in one pass.
var protectNeedles = func() []string {
	n := []string{guardPrefix, "pg_settings", "set_config", "setval", "nextval", "search_path"}
	for _, s := range protectedSettings {
		n = append(n, s.name)
	}
	return n
}()

// protectFirst marks the bytes (both cases) that start a needle.
var protectFirst = func() (t [256]bool) {
	for _, n := range protectNeedles {
		t[n[0]] = true
		t[n[0]&^0x20] = true
	}
	return t
}()

// mayProtect is the pre-filter of protect: false when the statement cannot be refused
// by it, so that the statement can pass without being tokenized. It does not allocate.
func (rw *Planner) mayProtect(sql string) bool {
	if len(rw.names) == 0 {
		return false
	}
	if rw.syn.ExecComments && strings.Contains(sql, "/*") {
		return true // an executable comment is judged by its content
	}
	if rw.syn == sqllex.MySQL && hasFoldablePrefix(sql, guardPrefix) {
		return true // a routine name that may fold to the reserved prefix (isGuardName)
	}
	if rw.syn == sqllex.MySQL && (strings.Contains(sql, "@'") || strings.Contains(sql, `@"`)) {
		// A user variable named by a string: escapes in it (@'fencedsq\l_…') spell a
		// name no needle finds in the raw text (protectMark judges it).
		return true
	}
	if hasProtectNeedle(sql) {
		return true
	}
	if len(rw.catalogViewKeys) > 0 && rw.mayNameCatalogView(sql) {
		return true // a relation through which a write reaches a catalog (protect_catalogview.go)
	}
	if rw.syn.DollarQuotes && ContainsFold(sql, "uescape") {
		return true // a Unicode-escape spelling (protectUnicodeEscapes)
	}
	if rw.syn.ExecComments && (ContainsFold(sql, "x'") || ContainsFold(sql, "b'") || ContainsFold(sql, "0x") || ContainsFold(sql, "0b") || ContainsFold(sql, "_utf") || ContainsFold(sql, "_ucs")) {
		return true // a literal spelled in hexadecimal, bits or a wide character set (literalText)
	}
	// A system catalog a write may reach (protectCatalogWrites).
	if rw.syn.DollarQuotes && (ContainsFold(sql, "pg_") || ContainsFold(sql, "information_schema")) {
		return true
	}
	if rw.syn == sqllex.SQLite && ContainsFold(sql, "sqlite_") {
		return true
	}
	if rw.syn.ExecComments && (ContainsFold(sql, "mysql") || ContainsFold(sql, "_schema") || ContainsFold(sql, "sys")) {
		return true
	}
	for _, f := range sqlTextFuncs {
		if ContainsFold(sql, f) {
			return true
		}
	}
	for _, f := range surgeryFuncs {
		if ContainsFold(sql, f) {
			return true
		}
	}
	return false
}

// hasProtectNeedle reports whether sql holds one of protectNeedles, ASCII
// case-insensitively.
func hasProtectNeedle(sql string) bool {
	for i := 0; i < len(sql); i++ {
		if !protectFirst[sql[i]] {
			continue
		}
		for _, n := range protectNeedles {
			if hasPrefixFold(sql[i:], n) {
				return true
			}
		}
	}
	return false
}

// hasPrefixFold reports whether s starts with prefix (ASCII lower case) ignoring ASCII case.
func hasPrefixFold(s, prefix string) bool {
	if len(s) < len(prefix) {
		return false
	}
	for j := 0; j < len(prefix); j++ {
		c := s[j]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if c != prefix[j] {
			return false
		}
	}
	return true
}
