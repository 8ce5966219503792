package sqlite

import (
	"net/url"
	"strconv"
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

// safePragmas are the values CheckDSN accepts, by pragma name, and why any other is
// refused: the wrapper refuses the same PRAGMA statements (journal_mode, synchronous,
// writable_schema are protected settings), which a DSN would set on every connection
// unseen. Only exact spellings pass: SQLite reads journal_mode by prefix ("of" is
// OFF), synchronous "no" or "00" as OFF and writable_schema "2" as on. The values of
// journal_mode and synchronous are the planner's (dialect.SQLiteJournalModes,
// SQLiteSynchronousLevels: one list); their combination is judged by
// dialect.SQLiteDurable (CheckDSN: NORMAL with WAL is refused).
var safePragmas = map[string]struct {
	values []string
	why    string
}{
	"journal_mode":    {dialect.SQLiteJournalModes(), "OFF removes the rollback journal: a ROLLBACK no longer undoes a fenced transaction's writes"},
	"synchronous":     {dialect.SQLiteSynchronousLevels(), "OFF acknowledges commits the disk may not have: a crash forgets acknowledged writes (a tombstone, a raised floor)"},
	"writable_schema": {[]string{"0", "off", "false", "no"}, "it lets a write of sqlite_schema drop or rewrite the guards' triggers"},
}

// shorthandPragmas are modernc.org/sqlite's own DSN keys for the same settings.
var shorthandPragmas = map[string]string{
	"_journal_mode": "journal_mode", "_journal": "journal_mode",
	"_synchronous": "synchronous", "_sync": "synchronous",
}

// lockingVFS are the VFS names CheckDSN accepts for vfs=: the ones that lock the
// database file as SQLite's default does (unix: POSIX advisory locks; unix-excl: the
// same, held exclusively; unix-dotfile: a lock file; memdb: its own in-process locks;
// win32 and win32-longpath: LockFileEx). unix-none and win32-none take no lock at all,
// and a VFS registered by the program (modernc.org/sqlite/vfs: vfs<hex>) is not
// known to lock.
var lockingVFS = []string{"unix", "unix-excl", "unix-dotfile", "memdb", "win32", "win32-longpath"}

// falseSpellings are the values of nolock= that SQLite reads as false
// (sqlite3_uri_boolean): empty, 0, no, off, false. Any other value is read as true or
// as a number (nolock=2, nolock=1x), so CheckDSN refuses it.
var falseSpellings = []string{"", "0", "no", "off", "false"}

// lockingWhy is why a DSN may not turn SQLite's file locking off.
const lockingWhy = "SQLite then takes no file lock, so two connections write the file at once, each judging fences and tombstones against the pages it cached " +
	"(a stale write, or a deleted key written again under an older token, is accepted): every guarantee of the SQLite dialect rests on SQLite serialising writers"

// judgeLocking returns why the DSN parameter k=v (k lower-cased, both unescaped)
// turns SQLite's writer serialisation off, "" when it does not: nolock with any value
// SQLite does not read as false, and vfs naming a VFS outside lockingVFS. modernc.org/
// sqlite passes vfs= to sqlite3_open_v2 for a plain file name too, and SQLite reads
// both from a file: URI. SQLite matches parameter names exactly; CheckDSN matches them
// in any letter case (a spelling SQLite ignores is refused too, harmlessly).
func judgeLocking(k, v string) string {
	switch k {
	case "nolock":
		for _, f := range falseSpellings {
			if strings.EqualFold(v, f) {
				return ""
			}
		}
		return "nolock turns SQLite's file locking off: " + lockingWhy + "; remove it"
	case "vfs":
		for _, ok := range lockingVFS {
			if v == ok {
				return ""
			}
		}
		return "the VFS " + strconv.Quote(v) + " is not one known to lock the database file: " + lockingWhy +
			"; remove vfs= (the default VFS locks) or use one of " + strings.Join(lockingVFS, ", ")
	}
	return ""
}

// CheckDSN implements dialect.DSNChecker: modernc.org/sqlite runs each
// _pragma=name(value) (or name=value) of the DSN, and its _journal_mode/_journal and
// _synchronous/_sync keys, on every new connection, so a protected setting set there
// is never seen as a statement. It names the first parameter that sets journal_mode,
// synchronous or writable_schema to anything but a known safe spelling, or that
// mentions one of them in text it cannot read plainly (comments, quotes, a ';'). It
// also names a parameter that turns SQLite's file locking off (judgeLocking: nolock
// with a true value, vfs= other than a locking VFS), and a DSN that sets WAL and
// synchronous NORMAL, each safe alone (dialect.SQLiteDurable: a power loss rolls back
// acknowledged commits; red-team rt43b F2) — in any order, whichever of them a later
// parameter sets again. A file already in WAL mode (the mode persists in the file)
// opened with NORMAL is refused by the session check (CheckSession), per connection.
func (d dialectImpl) CheckDSN(dsn string) string {
	q, _ := d.QueryStart(dsn)
	if q < 0 {
		return ""
	}
	var set [2][]string // the values the DSN gives journal_mode and synchronous
	note := func(name, value string) {
		switch name {
		case "journal_mode":
			set[0] = append(set[0], value)
		case "synchronous":
			set[1] = append(set[1], value)
		}
	}
	for _, kv := range strings.Split(dsn[q+1:], "&") {
		k, v, _ := strings.Cut(kv, "=")
		if uk, err := url.QueryUnescape(k); err == nil {
			k = uk
		}
		if uv, err := url.QueryUnescape(v); err == nil {
			v = uv
		}
		k = strings.ToLower(k)
		if p := judgeLocking(k, v); p != "" {
			return k + "=" + v + ": " + p
		}
		if name, ok := shorthandPragmas[k]; ok {
			if p := judgePragma(name, strings.ToLower(strings.TrimSpace(v))); p != "" {
				return k + "=" + v + ": " + p
			}
			note(name, strings.ToLower(strings.TrimSpace(v)))
			continue
		}
		if k != "_pragma" {
			continue
		}
		lv := strings.ToLower(v)
		for name := range safePragmas {
			if !strings.Contains(lv, name) {
				continue
			}
			pn, val, plain := pragmaParts(lv)
			if !plain {
				return "_pragma=" + name + "…: " + name + " set in text the wrapper cannot read plainly (a comment, a quote, a ';'); write _pragma=" + name + "(value)"
			}
			if pn != name {
				continue
			}
			if p := judgePragma(name, val); p != "" {
				return "_pragma=" + name + "(" + val + "): " + p
			}
			note(name, val)
		}
	}
	for _, jm := range set[0] {
		for _, sy := range set[1] {
			if why := dialect.SQLiteDurable(jm, sy); why != "" {
				return "journal_mode " + jm + " with synchronous " + sy + ": " + why + " (the fenced pool refuses guarded writes on a connection that has both)"
			}
		}
	}
	return ""
}

// judgePragma returns why value is unsafe for the pragma name ("" when it is safe).
func judgePragma(name, value string) string {
	p := safePragmas[name]
	for _, ok := range p.values {
		if value == ok {
			return ""
		}
	}
	return p.why + "; remove it or use one of " + strings.Join(p.values, ", ") + " (the fenced pool refuses the same PRAGMA as a statement)"
}

// pragmaParts splits a lower-cased "name(value)" or "name=value" (blanks and a schema
// prefix "main." allowed) into the name and value; plain is false when the text holds
// anything else SQLite would read (a comment, a quote, a ';', a bracket).
func pragmaParts(s string) (name, value string, plain bool) {
	if strings.ContainsAny(s, "\"'`[;") || strings.Contains(s, "--") || strings.Contains(s, "/*") {
		return "", "", false
	}
	s = strings.TrimSpace(s)
	if i := strings.IndexAny(s, "(="); i >= 0 {
		name, value = s[:i], s[i+1:]
		value = strings.TrimSpace(value)
		if strings.HasSuffix(value, ")") != (s[i] == '(') {
			return "", "", false
		}
		value = strings.TrimSuffix(value, ")")
	} else {
		name = s
	}
	if j := strings.LastIndexByte(name, '.'); j >= 0 {
		name = name[j+1:]
	}
	return strings.TrimSpace(name), strings.TrimSpace(value), true
}

var _ dialect.DSNChecker = dialectImpl{}
