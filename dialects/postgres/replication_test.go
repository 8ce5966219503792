package postgres

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The decision, from injected catalog values (the test server has no standby).
func TestJudgeReplication(t *testing.T) {
	conf := "configuration file"
	cases := []struct {
		name     string
		in       pgReplication
		problems []string // settings of the problems, in order
		notes    []string // substrings of the notes, in order
		fix      string   // a statement of the first problem's Fix
	}{
		{name: "single server", in: pgReplication{SyncCommit: "on", Source: conf},
			notes: []string{"no replica: a failover would need a replica that has every acknowledged write"}},
		{name: "single server, synchronous_commit off", in: pgReplication{SyncCommit: "off", Source: conf},
			notes: []string{"no replica", "a crash of this server forgets"}},
		{name: "single server, local is on", in: pgReplication{SyncCommit: "local", Source: conf},
			notes: []string{"no replica"}},
		{name: "async standbys", in: pgReplication{SyncCommit: "on", Source: conf, SeeStats: true,
			Standbys: []pgStandby{{"b", "async"}, {"a", "async"}}},
			problems: []string{"synchronous_standby_names"}, fix: fixSyncNames},
		{name: "sync standby, server off", in: pgReplication{StandbyNames: "ANY 1 (*)", SyncCommit: "off", Source: conf, SeeStats: true,
			Standbys: []pgStandby{{"a", "quorum"}}},
			problems: []string{"synchronous_commit"}, fix: fixSyncCommit},
		{name: "sync standby, server local", in: pgReplication{StandbyNames: "a", SyncCommit: "local", Source: "default", SeeStats: true,
			Standbys: []pgStandby{{"a", "sync"}}},
			problems: []string{"synchronous_commit"}},
		{name: "sync standby, remote_write is a note", in: pgReplication{StandbyNames: "a", SyncCommit: "remote_write", Source: conf, SeeStats: true,
			Standbys: []pgStandby{{"a", "sync"}}},
			notes: []string{"written but not flushed"}},
		{name: "sync standby, on and remote_apply are fine", in: pgReplication{StandbyNames: "a", SyncCommit: "remote_apply", Source: conf, SeeStats: true,
			Standbys: []pgStandby{{"a", "sync"}}}},
		{name: "role and database defaults below on", in: pgReplication{StandbyNames: "a", SyncCommit: "on", Source: conf, SeeStats: true,
			Standbys:  []pgStandby{{"a", "sync"}},
			Overrides: []pgOverride{{Role: "app", Value: "local"}, {Database: "shop", Value: "off"}, {Role: "ops", Database: "shop", Value: "on"}}},
			problems: []string{"synchronous_commit of role app", "synchronous_commit of database shop"}, fix: `ALTER ROLE "app" RESET synchronous_commit`},
		{name: "an async standby beside a sync one", in: pgReplication{StandbyNames: "FIRST 1 (a)", SyncCommit: "on", Source: conf, SeeStats: true,
			Standbys: []pgStandby{{"a", "sync"}, {"b", "potential"}, {"c", "async"}}},
			notes: []string{"never this one", "never this one"}},
		{name: "sync_state unreadable", in: pgReplication{StandbyNames: "a", SyncCommit: "on", Source: conf,
			Standbys: []pgStandby{{"", ""}}},
			notes: []string{"pg_read_all_stats"}},
		{name: "configured, none connected", in: pgReplication{StandbyNames: "a", SyncCommit: "on", Source: conf},
			notes: []string{"no standby is connected"}},
		{name: "configured, none matches", in: pgReplication{StandbyNames: "x", SyncCommit: "on", Source: conf, SeeStats: true,
			Standbys: []pgStandby{{"a", "async"}}},
			notes: []string{"none matches"}},
		{name: "this connection's own value hides the server's", in: pgReplication{SyncCommit: "on", Source: "user"},
			notes: []string{"no replica", "server's own value is not visible"}},
		{name: "a standby", in: pgReplication{InRecovery: true, Standbys: []pgStandby{{"a", "async"}}},
			notes: []string{"run the check on the primary"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			rep := judgeReplication(c.in)
			var problems []dialect.ReplicationFinding
			var notes []string
			for _, f := range rep.Findings {
				if f.Note {
					notes = append(notes, f.Problem)
				} else {
					problems = append(problems, f)
				}
			}
			if len(problems) != len(c.problems) || len(notes) != len(c.notes) {
				t.Fatalf("findings = %+v, want problems %q and notes %q", rep.Findings, c.problems, c.notes)
			}
			for i, p := range problems {
				if p.Setting != c.problems[i] || p.Problem == "" {
					t.Errorf("problem %d = %+v, want setting %q", i, p, c.problems[i])
				}
			}
			for i, n := range notes {
				if !strings.Contains(n, c.notes[i]) {
					t.Errorf("note %d = %q, want %q in it", i, n, c.notes[i])
				}
			}
			if c.fix != "" && !strings.Contains(strings.Join(problems[0].Fix, "\n"), c.fix) {
				t.Errorf("fix = %q, want %q", problems[0].Fix, c.fix)
			}
			if rep.OK() != (len(c.problems) == 0) {
				t.Errorf("OK = %v with problems %q", rep.OK(), c.problems)
			}
		})
	}
}

// The session value's synchronous_commit: refused when the session itself (a role's
// or database's default, the client, a SET) brought it below remote_write.
func TestCheckSessionSynchronousCommit(t *testing.T) {
	for _, c := range []struct {
		value  string
		refuse bool
	}{
		{"on UTF8 t t t t on configuration file", false},
		{"on UTF8 t t t t off configuration file", false}, // the server's own: schema.Check's to report
		{"on UTF8 t t t t local default", false},
		{"on UTF8 t t t t remote_write user", false},
		{"on UTF8 t t t t remote_apply database user", false},
		{"on UTF8 t t t t local user", true},
		{"on UTF8 t t t t local database", true},
		{"on UTF8 t t t t off database user", true},
		{"on UTF8 t t t t off client", true},
		{"on UTF8 t t t t local session", true},
		{"on UTF8 on configuration file", true}, // the four-value form before rt52a: an unexpected value
		{"on UTF8", true},                       // the old two-value form: an unexpected value
	} {
		err := Dialect.CheckSession(c.value)
		if (err != nil) != c.refuse {
			t.Errorf("CheckSession(%q) = %v, want refused %v", c.value, err, c.refuse)
		}
	}
}

// The session value's other verdicts (red-team rt52a): a server not a writable primary
// is ErrNotPrimary (F4); a path with pg_catalog not first, or shadowed, is refused
// (F1, F2); a client encoding other than UTF8 and SQL_ASCII is refused for guarded
// writes but not for reading (F3).
func TestCheckSessionPrimaryCatalogEncoding(t *testing.T) {
	for _, c := range []struct {
		value, setting  string
		notPrimary, rdg bool
	}{
		{"on UTF8 t t t t on configuration file", "", false, false},
		{"on SQL_ASCII t t t t on configuration file", "", false, false},
		{"on UTF8 f t t t on configuration file", "default_transaction_read_only, pg_is_in_recovery()", true, false},
		{"on UTF8 t f t t on configuration file", "search_path", false, false},
		{"on UTF8 t t f t on configuration file", "search_path", false, false},
		{"on LATIN1 t t t t on configuration file", "client_encoding", false, false},
		{"on WIN1252 t t t t on configuration file", "client_encoding", false, false},
		{"on EUC_JP t t t t on configuration file", "client_encoding", false, false},
		{"on SJIS t t t t on configuration file", "client_encoding", false, true},
	} {
		err := Dialect.CheckSession(c.value)
		var se *fencedsql.SessionError
		switch {
		case c.setting == "" && err != nil:
			t.Errorf("CheckSession(%q) = %v, want accepted", c.value, err)
		case c.setting == "":
		case !errors.As(err, &se) || se.Setting != c.setting || !errors.Is(err, fencedsql.ErrSchema):
			t.Errorf("CheckSession(%q) = %v, want a *SessionError on %s", c.value, err, c.setting)
		case errors.Is(err, fencedsql.ErrNotPrimary) != c.notPrimary || se.Reading != c.rdg:
			t.Errorf("CheckSession(%q) = %+v: ErrNotPrimary %v, Reading %v; want %v, %v", c.value, se, !c.notPrimary, se.Reading, c.notPrimary, c.rdg)
		}
	}
}
