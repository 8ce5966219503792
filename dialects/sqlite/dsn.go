package sqlite

import (
	"net/url"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// QueryStart implements dialect.DSNParser as modernc.org/sqlite reads a DSN: a file
// name or file: URI whose parameters follow the first '?' (not in the first position).
// A file name may hold '=' (/srv/env=prod/app.db): it is never keyword/value text.
func (dialectImpl) QueryStart(dsn string) (q int, keyValue bool) {
	if q = strings.IndexByte(dsn, '?'); q >= 1 {
		return q, false
	}
	return -1, false
}

var _ dialect.DSNParser = dialectImpl{}

// unsafePragmas are the _pragma= settings CheckDSN refuses, by pragma name, with the
// values that are unsafe and why: the wrapper refuses the same PRAGMA statements
// (journal_mode, synchronous, writable_schema are protected settings), which a DSN
// would set on every connection unseen.
var unsafePragmas = map[string]struct {
	values []string
	why    string
}{
	"journal_mode":    {[]string{"off"}, "OFF removes the rollback journal: a ROLLBACK no longer undoes a fenced transaction's writes"},
	"synchronous":     {[]string{"off", "0"}, "OFF acknowledges commits the disk may not have: a crash forgets acknowledged writes (a tombstone, a raised floor)"},
	"writable_schema": {[]string{"on", "1", "true", "yes"}, "it lets a write of sqlite_schema drop or rewrite the guards' triggers"},
}

// CheckDSN implements dialect.DSNChecker: modernc.org/sqlite runs each
// _pragma=name(value) (or name=value) of the DSN on every new connection, so a
// protected setting set there is never seen as a statement. It names the first
// parameter that sets one to an unsafe value.
func (d dialectImpl) CheckDSN(dsn string) string {
	q, _ := d.QueryStart(dsn)
	if q < 0 {
		return ""
	}
	for _, kv := range strings.Split(dsn[q+1:], "&") {
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if !strings.EqualFold(k, "_pragma") {
			continue
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		name, val := pragmaParts(v)
		p, ok := unsafePragmas[name]
		if !ok {
			continue
		}
		for _, bad := range p.values {
			if val == bad {
				return "_pragma=" + name + "(" + val + "): " + p.why + "; remove it (the fenced pool refuses the same PRAGMA as a statement)"
			}
		}
	}
	return ""
}

// pragmaParts splits "name(value)" or "name=value" (spaces and a schema prefix
// "main." allowed, quotes around the value dropped) into the lower-cased name and value.
func pragmaParts(s string) (name, value string) {
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "(="); i >= 0 {
		name, value = s[:i], s[i+1:]
		value = strings.TrimSuffix(strings.TrimSpace(value), ")")
	} else {
		name = s
	}
	if j := strings.LastIndexByte(name, '.'); j >= 0 {
		name = name[j+1:]
	}
	value = strings.Trim(strings.TrimSpace(value), `'"`)
	return strings.ToLower(strings.TrimSpace(name)), strings.ToLower(strings.TrimSpace(value))
}

var _ dialect.DSNChecker = dialectImpl{}
