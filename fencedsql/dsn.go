package fencedsql

import (
	"net/url"
	"strconv"
	"strings"
)

// DSN parameters of this package. They are removed from the DSN before it reaches the
// real driver. Any other parameter starting with "fenced_" is an error.
const (
	ParamTables        = "fenced_tables"         // comma-separated guarded tables
	ParamStrict        = "fenced_strict"         // true: accept only strictly greater tokens
	ParamSchemaCheck   = "fenced_schema_check"   // false: skip the lazy schema/session checks
	ParamTokenColumn   = "fenced_token_column"   // token column name for the DSN's tables
	ParamVersionColumn = "fenced_version_column" // version column name for the DSN's tables
	ParamAllow         = "fenced_allow"          // comma-separated: ddl, dynamic_sql (WithDDL, WithDynamicSQL)
)

// splitDSN removes this package's parameters from dsn and returns the cleaned DSN and
// the options they stand for. It understands URL-style query strings (…?a=b&c=d, as
// used by pgx URLs, go-sql-driver/mysql and SQLite file: URIs) and PostgreSQL's
// keyword/value form (host=… fenced_tables=a,b). Bytes that are not ours are kept as
// they are. Errors never quote the DSN (it may hold a password).
func splitDSN(dsn string) (string, []Option, error) {
	if !strings.Contains(dsn, "fenced_") {
		return dsn, nil, nil
	}
	params := map[string]string{}
	var clean string
	if isKeyValue(dsn) {
		clean = removeKeyValue(dsn, params)
	} else if q := strings.LastIndexByte(dsn, '?'); q >= 0 {
		var kept []string
		for _, kv := range strings.Split(dsn[q+1:], "&") {
			k, v, _ := strings.Cut(kv, "=")
			if strings.HasPrefix(k, "fenced_") {
				if uv, err := url.QueryUnescape(v); err == nil {
					v = uv
				}
				params[k] = v
				continue
			}
			kept = append(kept, kv)
		}
		clean = dsn[:q]
		if len(kept) > 0 {
			clean += "?" + strings.Join(kept, "&")
		}
	}
	if len(params) == 0 {
		return dsn, nil, nil
	}
	var opts []Option
	tokCol, verCol := DefaultTokenColumn, DefaultVersionColumn
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
			return "", nil, configErr("unknown DSN parameter %q", k)
		}
	}
	if t, ok := params[ParamTables]; ok {
		for _, name := range strings.Split(t, ",") {
			name = strings.TrimSpace(name)
			if name == "" {
				continue
			}
			opts = append(opts, Guard(name, TokenColumn(tokCol), VersionColumn(verCol)))
		}
	}
	return clean, opts, nil
}

// isKeyValue reports PostgreSQL's keyword/value form ("host=h dbname=d"): no URL
// scheme, and its first '=' comes before any '?'.
func isKeyValue(dsn string) bool {
	if strings.Contains(dsn, "://") {
		return false
	}
	eq := strings.IndexByte(dsn, '=')
	q := strings.IndexByte(dsn, '?')
	return eq >= 0 && (q < 0 || eq < q)
}

// removeKeyValue removes the fenced_* keywords (and the blank before each) from a
// keyword/value DSN, keeping every other byte, and records them in params. Values may
// be single-quoted with backslash escapes, as libpq allows.
func removeKeyValue(dsn string, params map[string]string) string {
	var b strings.Builder
	last := 0 // start of the text not yet copied
	i := 0
	for i < len(dsn) {
		for i < len(dsn) && isSpace(dsn[i]) {
			i++
		}
		ts := i
		for i < len(dsn) && dsn[i] != '=' && !isSpace(dsn[i]) {
			i++
		}
		key := dsn[ts:i]
		var val strings.Builder
		if i < len(dsn) && dsn[i] == '=' {
			i++
			if i < len(dsn) && dsn[i] == '\'' {
				i++
				for i < len(dsn) && dsn[i] != '\'' {
					if dsn[i] == '\\' && i+1 < len(dsn) {
						i++
					}
					val.WriteByte(dsn[i])
					i++
				}
				i++ // closing quote
			} else {
				for i < len(dsn) && !isSpace(dsn[i]) {
					val.WriteByte(dsn[i])
					i++
				}
			}
		}
		te := min(i, len(dsn))
		if !strings.HasPrefix(key, "fenced_") {
			continue
		}
		params[key] = val.String()
		// Drop the blank before the keyword, or after it when it comes first.
		from := ts
		for from > last && isSpace(dsn[from-1]) {
			from--
		}
		to := te
		if from == 0 {
			for to < len(dsn) && isSpace(dsn[to]) {
				to++
			}
		}
		b.WriteString(dsn[last:from])
		last = to
	}
	b.WriteString(dsn[last:])
	return b.String()
}

func isSpace(c byte) bool {
	return c == ' ' || c == '\t' || c == '\n' || c == '\r' || c == '\f' || c == '\v'
}
