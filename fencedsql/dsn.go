package fencedsql

import (
	"maps"
	"net/url"
	"slices"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/schema"
	"github.com/fencedsql/fencedsql/internal/secret"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// DSN parameters of this package. They are removed from the DSN before it reaches the
// real driver. Any other key that looks like one (ours: a misspelling, a near miss
// such as fence_tables, a url-encoded spelling) is an error, and so are the column
// parameters without fenced_tables.
const (
	ParamTables        = "fenced_tables"         // comma-separated guarded tables
	ParamStrict        = "fenced_strict"         // true: accept only strictly greater tokens
	ParamSchemaCheck   = "fenced_schema_check"   // false: skip the lazy schema/session checks (logged: WithSchemaCheck)
	ParamTokenColumn   = "fenced_token_column"   // token column name for the DSN's tables
	ParamVersionColumn = "fenced_version_column" // version column name for the DSN's tables
	ParamAllow         = "fenced_allow"          // comma-separated: ddl, dynamic_sql (WithDDL, WithDynamicSQL)
)

// splitDSN removes this package's parameters from dsn and returns the cleaned DSN and
// the options they stand for. It reads dsn the way d's driver does (dialect.DSNParser):
// URL-style query strings (…?a=b&c=d, as used by pgx URLs, go-sql-driver/mysql and
// SQLite file names and URIs, keys url-decoded before they are judged) and
// PostgreSQL's keyword/value form (host=… fenced_tables=a,b). Bytes that are not ours
// are kept as they are, and a DSN without a parameter of ours is returned unchanged. A
// parameter given twice, and one that looks like ours but is not (ours: fencedtables,
// fenced-tables, FENCED_TABLES, fenced_tabels, fence_tables, fencd_tables), is an
// error: it would otherwise reach the server, or a driver that ignores unknown
// parameters (modernc's SQLite), and leave a table unguarded without a word. So are
// fenced_token_column and fenced_version_column without fenced_tables: they name the
// columns of the DSN's tables, and would apply to none. So is a parameter of ours left
// in the cleaned DSN under any DSN form's reading (paramOfOurs over what is left):
// outside the keyword/value form, one where the driver does not read parameters (a
// '?' in the first position, a key cut short by a '?' in a path); in it, a URL-style
// query that the keyword/value reading took for part of one key (a dialect that does
// not match the driver). So is text that reads as a parameter of ours anywhere else in
// what is left, or in the values of ours: inside another parameter's value, after '#',
// in a path (paramOfOurs, dsn_misplaced.go: red-team rt43b F1). Errors never quote the
// DSN (it may hold a password).
func splitDSN(dsn string, d dialect.Dialect) (string, []Option, error) {
	// Every DSN is read: a key whose letters are percent-encoded (%66enced_tables)
	// shows "fenced" only once decoded, and a near miss (fence_tables) never does.
	q, keyValue := -1, false
	if p, ok := d.(dialect.DSNParser); ok {
		q, keyValue = p.QueryStart(dsn)
	} else if keyValue = secret.IsKeyValue(dsn); !keyValue {
		q = strings.LastIndexByte(dsn, '?')
	}
	params := map[string]string{}
	var clean string
	var err error
	if keyValue {
		clean, err = removeKeyValue(dsn, params)
	} else if q >= 0 {
		var kept []string
		for _, kv := range strings.Split(dsn[q+1:], "&") {
			k, v, _ := strings.Cut(kv, "=")
			if uk, uerr := url.QueryUnescape(k); uerr == nil {
				k = uk
			}
			if !ours(k) {
				kept = append(kept, kv)
				continue
			}
			if uv, uerr := url.QueryUnescape(v); uerr == nil {
				v = uv
			}
			if err = record(params, k, v); err != nil {
				break
			}
		}
		clean = dsn[:q]
		if len(kept) > 0 {
			clean += "?" + strings.Join(kept, "&")
		}
	}
	if err != nil {
		return "", nil, err
	}
	// What is left must hold no parameter of ours under any DSN form's reading, as a key
	// or anywhere else (paramOfOurs); nor may the values of ours hold one (fenced_tables=
	// a#fenced_strict=true would guard a table of that name, and make nothing strict).
	left := paramOfOurs(clean)
	if !keyValue && q < 0 {
		left = paramOfOurs(dsn)
	}
	if left.where != "" {
		return "", nil, misplacedErr(left)
	}
	for _, k := range slices.Sorted(maps.Keys(params)) {
		if w, _, ok := misplacedIn(params[k]); ok {
			return "", nil, configErr("the value of the DSN parameter %s holds text that reads as another parameter of this package (%s, or a spelling of it): separate parameters with '&' (in a keyword/value DSN, a blank), not ',', a percent-encoded '&' or '=', or '#'", k, foundParam{key: w}.param())
		}
	}
	if keyValue {
		if k := left.key; k != "" {
			// Read as keyword/value pairs, the DSN still holds a parameter of ours under
			// another DSN form's reading: a URL-style query (file:/…/t.db?fenced_tables=…)
			// taken for one key by a dialect whose driver reads keyword/value DSNs
			// (PostgreSQL's), the dialect not matching the driver. The driver would get
			// it, ignore it (modernc's SQLite), and a pool that guards nothing would open
			// (red-team rt37b F6).
			return "", nil, configErr("the DSN still holds a parameter of this package (%s, or a spelling of it) after its keyword/value pairs were read by the dialect's DSN rules: it is in another form (a URL-style query after '?'), so the dialect's driver would get it; check that the dialect (WithDialect) matches the driver, and give the parameters in the driver's DSN form", orDefault(nearest(k), ParamTables))
		}
	} else {
		if q < 0 {
			clean = dsn
		}
		if k := left.key; k != "" {
			// A parameter of ours where the driver does not read one: a '?' in the first
			// position (modernc's SQLite ignores it: os.Getenv("DB")+"?fenced_tables=…"
			// with the variable unset), or a key cut short by an earlier '?' (a '?' in a
			// directory name). The driver would take it as part of a file name and a
			// pool that guards nothing would open (red-team rt31d F3).
			return "", nil, configErr("the DSN holds a parameter of this package (%s, or a spelling of it) where its driver does not read parameters (before the DSN's query, or after a '?' in the first position or in a path: is the file name empty?): give the parameters after the first '?' of a non-empty name", orDefault(nearest(k), ParamTables))
		}
	}
	if len(params) == 0 {
		return dsn, nil, nil
	}
	var opts []Option
	tokCol, verCol := schema.DefaultTokenColumn, schema.DefaultVersionColumn
	for k, v := range params {
		switch k {
		case ParamTables:
		case ParamAllow:
			for _, a := range strings.Split(v, ",") {
				switch strings.TrimSpace(a) {
				case "ddl":
					opts = append(opts, WithDDL(true))
				case "dynamic_sql":
					opts = append(opts, WithDynamicSQL(true))
				case "":
				default:
					return "", nil, configErr("DSN parameter %s: unknown value %q (ddl, dynamic_sql)", k, a)
				}
			}
		case ParamTokenColumn:
			tokCol = v
		case ParamVersionColumn:
			verCol = v
		case ParamStrict, ParamSchemaCheck:
			b, err := strconv.ParseBool(v)
			if err != nil {
				return "", nil, configErr("DSN parameter %s: %q is not a boolean", k, v)
			}
			if k == ParamStrict {
				opts = append(opts, WithStrict(b))
			} else {
				opts = append(opts, WithSchemaCheck(b))
			}
		default:
			return "", nil, configErr("unknown DSN parameter %q (known: %s)", k, strings.Join(knownParams, ", "))
		}
	}
	_, tok := params[ParamTokenColumn]
	_, ver := params[ParamVersionColumn]
	if _, ok := params[ParamTables]; !ok && (tok || ver) {
		// Usually a template whose table list was lost: the columns would apply to no
		// table, and the tables meant to be guarded go unguarded without a word. (A
		// registered table's columns are the registry's.)
		return "", nil, configErr("DSN parameters %s and %s name the fencing columns of the DSN's tables, but the DSN has no %s: list the guarded tables, or leave the column parameters out", ParamTokenColumn, ParamVersionColumn, ParamTables)
	}
	if t, ok := params[ParamTables]; ok {
		named := 0
		for _, name := range strings.Split(t, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			named++
			opts = append(opts, Guard(name, TokenColumn(tokCol), VersionColumn(verCol)))
		}
		if named == 0 {
			// Usually an unset variable in a DSN template: the tables meant to be guarded
			// would go unguarded without a word.
			return "", nil, configErr("DSN parameter %s names no table: list the guarded tables, or leave the parameter out", ParamTables)
		}
	}
	return clean, opts, nil
}

// knownParams are this package's DSN parameters.
var knownParams = []string{ParamTables, ParamStrict, ParamSchemaCheck, ParamTokenColumn, ParamVersionColumn, ParamAllow}

// ours reports whether a DSN parameter key (url-decoded) is, or looks like, one of this
// package's. Such a key never reaches the driver: either it is one of knownParams,
// exactly, or splitDSN refuses it. A key looks like ours when its letters and digits,
// lower-cased (alnumFold), start with "fenc" (fenced_tables, fence_tables,
// fencing_tables, FENCED-TABLES), or begin with a near miss of "fenced" (one letter
// dropped, added, changed or two swapped: fencd_tables, fenecd_tables, fnced_tables),
// or when nearest names a parameter for it: ours is at least as wide as the
// suggestion a refusal gives. A driver that ignores unknown parameters (modernc's
// SQLite) would otherwise open a pool that guards nothing; the servers PostgreSQL and
// MySQL refuse an unknown one, so catching it here costs them nothing and names the
// parameter meant. No parameter of the supported drivers is that close.
func ours(key string) bool {
	k := alnumFold(key)
	if strings.HasPrefix(k, "fenc") {
		return true
	}
	for n := len("fenced") - 1; n <= len("fenced")+1 && n <= len(k); n++ {
		if editDistance(k[:n], "fenced") <= 1 {
			return true
		}
	}
	return nearest(key) != ""
}

// nearestParam returns the known parameter whose alnumFold is closest to k (already
// folded) and that distance (editDistance).
func nearestParam(k string) (string, int) {
	best, bestD := "", 1<<30
	for _, p := range knownParams {
		if d := editDistance(k, alnumFold(p)); d < bestD {
			best, bestD = p, d
		}
	}
	return best, bestD
}

// editDistance is the optimal string alignment distance of a and b (bytes): the
// insertions, deletions, substitutions and swaps of two adjacent bytes that turn a
// into b, no byte edited twice.
func editDistance(a, b string) int {
	prev2 := make([]int, len(b)+1)
	prev := make([]int, len(b)+1)
	cur := make([]int, len(b)+1)
	for j := range prev {
		prev[j] = j
	}
	for i := 1; i <= len(a); i++ {
		cur[0] = i
		for j := 1; j <= len(b); j++ {
			cost := 1
			if a[i-1] == b[j-1] {
				cost = 0
			}
			cur[j] = min(prev[j]+1, cur[j-1]+1, prev[j-1]+cost)
			if i > 1 && j > 1 && a[i-1] == b[j-2] && a[i-2] == b[j-1] {
				cur[j] = min(cur[j], prev2[j-2]+1)
			}
		}
		prev2, prev, cur = prev, cur, prev2
	}
	return prev[len(b)]
}

// record stores a parameter of ours, refusing a repeated or misspelled one.
func record(params map[string]string, k, v string) error {
	if !slices.Contains(knownParams, k) {
		if near := nearest(k); near != "" {
			return configErr("unknown DSN parameter %q: did you mean %s?", k, near)
		}
		return configErr("unknown DSN parameter %q (known: %s)", k, strings.Join(knownParams, ", "))
	}
	if _, dup := params[k]; dup {
		return configErr("DSN parameter %s given twice: give one value (a comma-separated list for %s)", k, ParamTables)
	}
	params[k] = v
	return nil
}

// nearest returns the known parameter k most likely stands for: the one whose letters
// and digits, lower-cased, are closest to k's (fenced-tables, fencedTables,
// FENCED_TABLES, fence_tables, fenced_tabels → fenced_tables), or "" when none is
// within a few edits.
func nearest(k string) string {
	f := alnumFold(k)
	p, d := nearestParam(f)
	if d > max(3, len(f)/3) {
		return ""
	}
	return p
}

func alnumFold(s string) string {
	var b strings.Builder
	for i := 0; i < len(s); i++ {
		c := s[i]
		if 'A' <= c && c <= 'Z' {
			c += 'a' - 'A'
		}
		if 'a' <= c && c <= 'z' || '0' <= c && c <= '9' {
			b.WriteByte(c)
		}
	}
	return b.String()
}

// removeKeyValue removes the fenced_* keywords (and the blank before each) from a
// keyword/value DSN, keeping every other byte, and records them in params. It reads
// the form as pgx does, with the module's one reader of it (secret.KeyValues): a
// keyword is the text before the next '=' with the blanks around it trimmed
// ("fenced_tables = accounts" is allowed, as libpq allows it), blanks after the '='
// are skipped, and a value runs to the next blank, or is single-quoted; in either, a
// backslash escapes the byte after it.
func removeKeyValue(dsn string, params map[string]string) (string, error) {
	var b strings.Builder
	last := 0 // start of the text not yet copied
	for _, kv := range secret.KeyValues(dsn) {
		if !ours(kv.Key) {
			continue
		}
		if err := record(params, kv.Key, kv.Value); err != nil {
			return "", err
		}
		// Drop the blank before the keyword, or after it when it comes first.
		from := kv.Start
		for from > last && isSpace(dsn[from-1]) {
			from--
		}
		to := kv.End
		if from == 0 {
			for to < len(dsn) && isSpace(dsn[to]) {
				to++
			}
		}
		b.WriteString(dsn[last:from])
		last = to
	}
	b.WriteString(dsn[last:])
	return b.String(), nil
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
