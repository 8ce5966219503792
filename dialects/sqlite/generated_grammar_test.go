package sqlite_test

// The fragments of the SQLite statement generator (generated_sql_test.go): writes of
// accounts (insert, update, delete, next) and session compositions (session).

import (
	"math/rand"
	"strconv"
	"strings"
)

// sqlGen composes statements from fragments (generated_sql_test.go).
type sqlGen struct {
	r *rand.Rand
}

func (g *sqlGen) pick(xs ...string) string { return xs[g.r.Intn(len(xs))] }

var genGaps = []string{"/**/", " /* x */ ", "\n-- c\n", "\t", "\n", " /*;*/ ", "--\n", " /* ' */ ", "\f", "\r\n"}

// fill replaces every ~ with a blank or a comment.
func (g *sqlGen) fill(s string) string {
	var b strings.Builder
	for _, c := range s {
		if c == '~' {
			if g.r.Intn(4) == 0 {
				b.WriteString(genGaps[g.r.Intn(len(genGaps))])
			} else {
				b.WriteByte(' ')
			}
			continue
		}
		b.WriteRune(c)
	}
	return b.String()
}

func (g *sqlGen) name() string {
	return g.pick("accounts", "accounts", `"accounts"`, "[accounts]", "`accounts`", "'accounts'", "main.accounts", `"main"."accounts"`,
		"MAIN.ACCOUNTS", "[main].[Accounts]", "main~.~accounts", "`main`.'accounts'", "Accounts", `"ACCOUNTS"`)
}

func (g *sqlGen) key() string {
	return g.pick("1", "2", "4", "9", "3", "'4'", "4.0", "'4.0'", "0x4", "4e0", "+4", "CAST('4' AS BLOB)", "'2'", "(1+1)")
}

func (g *sqlGen) where(alias string, cte bool) string {
	p := ""
	if alias != "" && g.r.Intn(2) == 0 {
		p = alias + "."
	}
	ws := []string{p + "id~=~" + g.key(), p + "rowid~=~" + g.key(), p + "_rowid_~IN~(1,~2)", p + "oid~=~" + g.key(), "true", p + "id~>~1",
		p + "\"id\"~=~1", p + "[rowid]~=~2", p + "id~=~(SELECT~max(account_id)~FROM~ledger)", p + "email~=~'b@x'", "1"}
	if cte {
		ws = append(ws, p+"id~IN~(SELECT~n~FROM~x)", p+"rowid~IN~x")
	}
	return g.pick(ws...)
}

func (g *sqlGen) set(excluded bool) string {
	ss := []string{"balance~=~0", "balance~=~balance~-~1", "rowid~=~rowid~+~100", "_rowid_~=~7", "oid~=~8", "id~=~9", "id~=~4",
		"(balance,~version)~=~(0,~0)", "fence_token~=~999", "fence_token~=~10", "fence_token~=~10,~version~=~version~+~1", "version~=~version~+~1", "email~=~'b@x'", "\"balance\"~=~0", "[balance]~=~0",
		"balance~=~0,~email~=~'c@x'", "rowid~=~2", "fence_token~=~1,~balance~=~1", "(id)~=~(SELECT~9)", "balance~=~(SELECT~amount~FROM~ledger~WHERE~id~=~1)"}
	if excluded {
		ss = append(ss, "balance~=~excluded.balance", "balance~=~EXCLUDED.balance,~email~=~excluded.email", "id~=~excluded.id~+~10", "fence_token~=~excluded.fence_token")
	}
	return g.pick(ss...)
}

func (g *sqlGen) cte() (string, bool) {
	switch g.r.Intn(6) {
	case 0:
		return "WITH~x(n)~AS~(SELECT~1~UNION~ALL~SELECT~2)~", true
	case 1:
		return "WITH~RECURSIVE~x(n)~AS~(SELECT~1~UNION~ALL~SELECT~n+1~FROM~x~WHERE~n<4)~", true
	case 2:
		return "WITH~accounts~AS~(SELECT~1~AS~id,~1~AS~n),~x~AS~(SELECT~id~AS~n~FROM~accounts)~", true
	case 3:
		return "WITH~x~AS~MATERIALIZED~(SELECT~2~AS~n)~", true
	default:
		return "", false
	}
}

func (g *sqlGen) ret() string {
	return g.pick("", "", "", "~RETURNING~*", "~RETURNING~id,~fence_token", "~RETURNING~rowid", "~RETURNING~(SELECT~count(*)~FROM~accounts)")
}

func (g *sqlGen) orClause() string {
	return g.pick("", "", "~OR~REPLACE", "~OR~IGNORE", "~OR~ROLLBACK", "~OR~ABORT", "~OR~FAIL")
}

func (g *sqlGen) insert() genCase {
	with, cte := g.cte()
	verb := "INSERT" + g.orClause()
	if g.r.Intn(6) == 0 {
		verb = "REPLACE"
	}
	as := ""
	if g.r.Intn(4) == 0 {
		as = "~AS~a"
	}
	k := g.key()
	cols, vals := "(id,~balance)", k+",~0"
	switch g.r.Intn(6) {
	case 0:
		cols, vals = "(id,~balance,~email)", k+",~0,~'"+g.pick("b@x", "c@x", "z@x")+"'"
	case 1:
		cols, vals = "(id,~balance,~fence_token,~version)", k+",~0,~"+g.pick("999", "10", "50")+",~"+g.pick("999", "1", "3")
	case 2:
		cols, vals = "(rowid,~balance)", k+",~0"
	case 3:
		cols, vals = "(balance,~email)", "0,~'"+g.pick("b@x", "z@x")+"'"
	case 4:
		cols, vals = "(\"id\",~[balance])", k+",~0"
	}
	src := "VALUES~(" + vals + ")"
	switch g.r.Intn(5) {
	case 0:
		src = "SELECT~" + vals + "~WHERE~true"
	case 1:
		if cte {
			src = "SELECT~" + strings.Replace(vals, k, "n", 1) + "~FROM~x~WHERE~true"
		}
	case 2:
		src = "VALUES~(" + vals + "),~(" + strings.Replace(vals, k, g.key(), 1) + ")"
	}
	up := ""
	if strings.HasPrefix(verb, "INSERT") && g.r.Intn(2) == 0 {
		w := ""
		if g.r.Intn(3) == 0 {
			w = "~WHERE~" + g.pick("id~=~1", "excluded.balance~=~0", "fence_token~<~1000", "true", "a.id~>~0")
		}
		switch g.r.Intn(6) {
		case 0:
			up = "~ON~CONFLICT~DO~NOTHING"
		case 1:
			up = "~ON~CONFLICT~(id)~DO~UPDATE~SET~" + g.set(true) + w
		case 2:
			up = "~ON~CONFLICT~(email)~DO~UPDATE~SET~" + g.set(true) + w + "~ON~CONFLICT~(id)~DO~UPDATE~SET~" + g.set(true)
		case 3:
			up = "~ON~CONFLICT~(email)~DO~NOTHING~ON~CONFLICT~DO~UPDATE~SET~" + g.set(true) + w
		case 4:
			up = "~ON~CONFLICT~(id)~DO~NOTHING~ON~CONFLICT~(email)~DO~UPDATE~SET~" + g.set(true)
		default:
			up = "~ON~CONFLICT~DO~UPDATE~SET~" + g.set(true) + w
		}
	}
	if up != "" && strings.Contains(up, "a.") && as == "" {
		as = "~AS~a"
	}
	s := with + verb + "~INTO~" + g.name() + as + "~" + cols + "~" + src + up + g.ret()
	if g.r.Intn(12) == 0 {
		s = with + verb + "~INTO~" + g.name() + "~DEFAULT~VALUES" + g.ret()
	}
	return genCase{kind: strings.ReplaceAll(strings.ToLower(verb), "~", "_"), sql: g.fill(s)}
}

func (g *sqlGen) update() genCase {
	with, cte := g.cte()
	or := g.orClause()
	as := ""
	alias := ""
	if g.r.Intn(4) == 0 {
		as, alias = "~AS~a", "a"
	}
	idx := g.pick("", "", "", "~NOT~INDEXED", "~INDEXED~BY~sqlite_autoindex_accounts_1")
	from := ""
	w := g.where(alias, cte)
	if g.r.Intn(4) == 0 {
		from = g.pick("~FROM~ledger~l", "~FROM~(SELECT~2~AS~k)~AS~f", "~FROM~x")
		if from == "~FROM~x" && !cte {
			from = "~FROM~ledger~l"
		}
		tbl := "accounts"
		if alias != "" {
			tbl = alias
		}
		switch {
		case strings.Contains(from, "ledger"):
			w = "l.account_id~=~" + tbl + ".id~AND~l.id~<~3"
		case strings.Contains(from, " f"):
			w = tbl + ".id~=~f.k"
		}
	}
	ord := ""
	if g.r.Intn(6) == 0 {
		ord = "~ORDER~BY~id~LIMIT~1"
	}
	s := with + "UPDATE" + or + "~" + g.name() + as + idx + "~SET~" + g.set(false) + from + "~WHERE~" + w + g.ret() + ord
	return genCase{kind: "update" + strings.ReplaceAll(strings.ToLower(or), "~", "_"), sql: g.fill(s)}
}

func (g *sqlGen) delete() genCase {
	with, cte := g.cte()
	as, alias := "", ""
	if g.r.Intn(4) == 0 {
		as, alias = "~AS~a", "a"
	}
	idx := g.pick("", "", "~NOT~INDEXED", "~INDEXED~BY~sqlite_autoindex_accounts_1")
	ord := ""
	if g.r.Intn(6) == 0 {
		ord = "~ORDER~BY~" + g.pick("id", "rowid") + "~LIMIT~1"
	}
	s := with + "DELETE~FROM~" + g.name() + as + idx + "~WHERE~" + g.where(alias, cte) + g.ret() + ord
	return genCase{kind: "delete", sql: g.fill(s)}
}

// write is an INSERT, UPDATE or DELETE of accounts, one in three each.
func (g *sqlGen) write() genCase {
	switch g.r.Intn(3) {
	case 0:
		return g.insert()
	case 1:
		return g.update()
	default:
		return g.delete()
	}
}

// next is a write, one in ten times after PRAGMA recursive_triggers, one in ten after
// PRAGMA foreign_keys, one in ten after ATTACH of the same file (the qualified
// spellings then name the attached schema).
func (g *sqlGen) next() genCase {
	c := g.write()
	switch g.r.Intn(10) {
	case 0:
		c.pre = []string{g.pick("PRAGMA recursive_triggers = ON", "PRAGMA recursive_triggers = 1", "PRAGMA main.recursive_triggers = yes")}
		c.kind += "+rt"
	case 1:
		c.pre = []string{g.pick("PRAGMA foreign_keys = OFF", "PRAGMA foreign_keys = ON")}
		c.kind += "+fk"
	case 2:
		c.pre = []string{"ATTACH DATABASE '{FILE}' AS other"}
		c.sql = strings.NewReplacer("main.accounts", "other.accounts", `"main"."accounts"`, `"other"."accounts"`, "MAIN.ACCOUNTS", "OTHER.ACCOUNTS", "[main].", "[other].").Replace(c.sql)
		c.kind += "+attach"
	}
	return c
}

// session composes session state set up through the fenced pool (TEMP objects
// shadowing or sitting on main ones, ATTACH of the same file, PRAGMAs that change what a
// write does) before a write, on one pool connection.
func (g *sqlGen) session() genCase {
	frags := []func() []string{
		func() []string {
			return []string{"ATTACH DATABASE '{FILE}' AS " + g.pick("other", "aux", "\"o t\"", "[x]")}
		},
		func() []string {
			return []string{"PRAGMA " + g.pick("recursive_triggers", "foreign_keys", "ignore_check_constraints", "defer_foreign_keys", "legacy_alter_table", "writable_schema", "reverse_unordered_selects", "count_changes") + " = " + g.pick("1", "ON", "true", "0")}
		},
		func() []string {
			return []string{g.pick("CREATE TEMP VIEW accounts AS SELECT * FROM main.accounts", "CREATE TEMP VIEW \"accounts\" AS SELECT id, balance, fence_token, version, email FROM main.accounts WHERE id > 0",
				"CREATE TEMP TABLE accounts AS SELECT * FROM main.accounts", "CREATE TEMP TABLE ledger (id INTEGER PRIMARY KEY, account_id INTEGER, amount INTEGER)")}
		},
		func() []string {
			on := g.pick("accounts", "main.accounts", "ledger", "main.ledger", "temp.accounts")
			when := g.pick("BEFORE", "AFTER", "INSTEAD OF")
			ev := g.pick("INSERT", "UPDATE", "DELETE", "UPDATE OF balance", "UPDATE OF fence_token")
			body := g.pick("UPDATE main.accounts SET balance = -1, version = version + 1 WHERE id = 1;",
				"DELETE FROM main.accounts WHERE id = 2;",
				"INSERT INTO main.accounts (id, balance, fence_token, version) VALUES (4, -4, 60, 9);",
				"SELECT RAISE(IGNORE);",
				"UPDATE main.fencedsql_floor SET floor = 0;",
				"DELETE FROM main.fencedsql_tomb_accounts;",
				"REPLACE INTO main.accounts (id, balance, fence_token, version) VALUES (3, -3, 50, 99);")
			return []string{"CREATE TEMP TRIGGER rt_tr" + strconv.Itoa(g.r.Intn(1000)) + " " + when + " " + ev + " ON " + on + " BEGIN " + body + " END"}
		},
		func() []string { return []string{"SAVEPOINT " + g.pick("a", "accounts", "\"main\"")} },
	}
	var pre []string
	for i := 0; i <= g.r.Intn(3); i++ {
		for _, p := range frags[g.r.Intn(len(frags))]() {
			if g.r.Intn(3) == 0 {
				p = "@" + p
			}
			pre = append(pre, p)
		}
	}
	var c genCase
	switch g.r.Intn(4) {
	case 0:
		c.sql = g.fill(g.pick("UPDATE~ledger~SET~amount~=~1~WHERE~id~=~1", "DELETE~FROM~ledger~WHERE~id~=~2", "INSERT~INTO~ledger~(id,~account_id)~VALUES~(9,~1)",
			"INSERT~INTO~temp.ledger~(id,~account_id)~VALUES~(9,~1)", "UPDATE~temp.accounts~SET~balance~=~0", "DELETE~FROM~temp.accounts~WHERE~id~=~2"))
	default:
		c = g.write()
	}
	c.pre = pre
	c.kind = "session/" + c.kind
	return c
}
