package mysql

import (
	"context"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// listingGrantsQuery reads the checking account's grants as the server applies them:
// the account's and those of its active role (and the roles granted to that role),
// which information_schema.USER_PRIVILEGES does not show to the account itself.
// noSessionMode: the server prints them in the reading session's sql_mode (names in
// "…" under ANSI_QUOTES).
const listingGrantsQuery = noSessionMode + "SHOW GRANTS"

// unlistedCode reports, for schema.Check only (SideDoors, not the lazy check, which
// must not refuse a least-privilege pool for it), that the side-door verdict is
// partial when the checking account cannot list every trigger, event and routine of
// the server (dialect.SideDoorUnlisted, red-team rt61b F2: a trigger on a table of
// another database, created by another account, updated a fenced row with no lease
// while Check by an account with ALL on the guarded database said OK). Probed on
// MariaDB 10.11: information_schema.TRIGGERS lists a trigger with its body only to an
// account with TRIGGER on its table (with INSERT alone: the name, a NULL body), EVENTS
// an event only with EVENT on its database, ROUTINES a routine only to its definer,
// an account with a right on it, or one that reads every routine (SELECT on
// mysql.proc, a global SELECT; MariaDB 11.3+ SHOW CREATE ROUTINE, MySQL SHOW_ROUTINE);
// with a global TRIGGER every view is listed (one whose definition is hidden is
// hiddenDefinitions'). The verdict is whole when the account holds, on *.*, TRIGGER
// and EVENT and one of the routine readers above (ALL PRIVILEGES holds them all);
// otherwise one door says which are missing. No Fix: granting is the DBA's call. A
// grant it cannot read (SHOW GRANTS denied) counts as missing.
func (d dialectImpl) unlistedCode(ctx context.Context, query dialect.CatalogQuery, t dialect.SideDoorTable) ([]dialect.SideDoor, error) {
	rows, err := query(ctx, listingGrantsQuery)
	if err != nil && !d.Denied(err) {
		return nil, err
	}
	missing := missingListingGrants(rows)
	if len(missing) == 0 {
		return nil, nil
	}
	return []dialect.SideDoor{{Kind: dialect.SideDoorUnlisted, Object: "triggers, events and routines of the server",
		Problem: "the side-door verdict of " + t.Table.String() + " is partial: this account lacks " + strings.Join(missing, ", ") +
			" ON *.*, so the server does not list it the triggers (TRIGGER), events (EVENT) or routines (their reader) of the databases where it lacks them, and one of them may write " + t.Table.String() +
			" unfenced, as its definer, unseen by this check; run schema.Check as an account that holds them (GRANT TRIGGER, EVENT, SELECT ON *.*; for the routines SELECT ON mysql.proc is enough on MariaDB, SHOW_ROUTINE on MySQL)"}}, nil
}

// missingListingGrants returns, from SHOW GRANTS rows, the global privileges that
// unlistedCode requires and they do not grant: "TRIGGER", "EVENT", and "SELECT (or
// SELECT on mysql.proc)" for the routines.
func missingListingGrants(rows [][]string) []string {
	held := map[string]bool{}
	for _, r := range rows {
		if len(r) == 0 {
			continue
		}
		privs, on, ok := grantLine(r[0])
		if !ok {
			continue
		}
		global := on == "*.*"
		proc := on == "mysql.proc" || on == "mysql.*"
		for _, p := range privs {
			switch {
			case global && p == "ALL PRIVILEGES":
				held["TRIGGER"], held["EVENT"], held["routines"] = true, true, true
			case global && (p == "TRIGGER" || p == "EVENT"):
				held[p] = true
			case global && (p == "SELECT" || p == "SHOW_ROUTINE" || p == "SHOW CREATE ROUTINE"):
				held["routines"] = true
			case proc && (p == "SELECT" || p == "ALL PRIVILEGES"):
				held["routines"] = true
			}
		}
	}
	var missing []string
	for _, p := range []string{"TRIGGER", "EVENT"} {
		if !held[p] {
			missing = append(missing, p)
		}
	}
	if !held["routines"] {
		missing = append(missing, "SELECT (or SELECT on mysql.proc, SHOW_ROUTINE)")
	}
	return missing
}

// grantLine splits a SHOW GRANTS line "GRANT p1, p2 (cols), … ON obj TO …" into its
// privileges (upper case, words joined by one space; a privilege with a column list
// is left out: it is not held on the whole object) and its object, unquoted and lower
// case ("*.*", "mysql.proc", "db.*"); ok is false for other lines (a role's grant, SET
// DEFAULT ROLE) and for a line that does not lex.
func grantLine(line string) (privs []string, on string, ok bool) {
	toks, err := dialect.LexDDL(line, dialect.MySQLSyntax)
	if err != nil || len(toks) < 2 || !toks[0].Is("GRANT") {
		return nil, "", false
	}
	i, depth := 1, 0
	var words []string
	columns := false
	flush := func() {
		if len(words) > 0 && !columns {
			privs = append(privs, strings.ToUpper(strings.Join(words, " ")))
		}
		words, columns = nil, false
	}
	for ; i < len(toks); i++ {
		tk := toks[i]
		switch {
		case tk.Kind == dialect.DDLPunct && tk.Text == "(":
			depth++
			columns = true
		case tk.Kind == dialect.DDLPunct && tk.Text == ")":
			depth--
		case depth > 0:
		case tk.Kind == dialect.DDLPunct && tk.Text == ",":
			flush()
		case tk.Is("ON"):
			flush()
			var obj strings.Builder
			for i++; i < len(toks) && !toks[i].Is("TO"); i++ {
				if n, isName := toks[i].Name(); isName && toks[i].Kind != dialect.DDLString {
					obj.WriteString(strings.ToLower(n))
				} else {
					obj.WriteString(toks[i].Text)
				}
			}
			if i == len(toks) {
				return nil, "", false
			}
			return privs, obj.String(), true
		case tk.Kind == dialect.DDLWord:
			words = append(words, tk.Text)
		default:
			return nil, "", false
		}
	}
	return nil, "", false
}
