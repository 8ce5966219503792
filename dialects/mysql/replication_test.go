package mysql

import (
	"strings"
	"testing"
)

// The decision, from injected variables and status (the test server has no replica
// and no binary log).
func TestJudgeReplication(t *testing.T) {
	good := map[string]string{"log_bin": "ON", "rpl_semi_sync_master_enabled": "ON", "rpl_semi_sync_master_wait_point": "AFTER_SYNC",
		"rpl_semi_sync_master_timeout": "4294967295", "rpl_semi_sync_master_wait_no_slave": "ON"}
	with := func(base map[string]string, kv ...string) map[string]string {
		m := map[string]string{}
		for k, v := range base {
			m[k] = v
		}
		for i := 0; i+1 < len(kv); i += 2 {
			if kv[i+1] == "-" {
				delete(m, kv[i])
			} else {
				m[kv[i]] = kv[i+1]
			}
		}
		return m
	}
	on := map[string]string{"rpl_semi_sync_master_status": "ON", "rpl_semi_sync_master_clients": "1"}
	mysql8 := map[string]string{"log_bin": "ON", "rpl_semi_sync_source_enabled": "ON", "rpl_semi_sync_source_wait_point": "AFTER_SYNC",
		"rpl_semi_sync_source_timeout": "10000", "rpl_semi_sync_source_wait_no_replica": "ON"}
	cases := []struct {
		name     string
		in       myReplication
		problems []string // settings, in order
		notes    []string // substrings, in order
	}{
		{name: "no binary log", in: myReplication{Vars: map[string]string{"log_bin": "OFF", "rpl_semi_sync_master_enabled": "OFF"}},
			notes: []string{"the binary log is off"}},
		{name: "binary log, no replica seen", in: myReplication{Vars: map[string]string{"log_bin": "ON"}},
			notes: []string{"PROCESS privilege"}},
		{name: "async replicas", in: myReplication{Vars: with(good, "rpl_semi_sync_master_enabled", "OFF"), DumpThreads: 2},
			problems: []string{"rpl_semi_sync_master_enabled"}},
		{name: "no plugin", in: myReplication{Vars: map[string]string{"log_bin": "ON"}, DumpThreads: 1},
			problems: []string{"rpl_semi_sync_master_enabled"}},
		{name: "semi-sync AFTER_SYNC, no fall-back", in: myReplication{Vars: good, Status: on, DumpThreads: 1}},
		{name: "AFTER_COMMIT", in: myReplication{Vars: with(good, "rpl_semi_sync_master_wait_point", "AFTER_COMMIT"), Status: on, DumpThreads: 1},
			problems: []string{"rpl_semi_sync_master_wait_point"}},
		{name: "50 ms timeout", in: myReplication{Vars: with(good, "rpl_semi_sync_master_timeout", "50"), Status: on, DumpThreads: 1},
			problems: []string{"rpl_semi_sync_master_timeout"}},
		{name: "default 10 s timeout", in: myReplication{Vars: with(good, "rpl_semi_sync_master_timeout", "10000"), Status: on, DumpThreads: 1},
			problems: []string{"rpl_semi_sync_master_timeout"}},
		{name: "a day is never", in: myReplication{Vars: with(good, "rpl_semi_sync_master_timeout", "86400000"), Status: on, DumpThreads: 1}},
		{name: "wait_no_slave off", in: myReplication{Vars: with(good, "rpl_semi_sync_master_wait_no_slave", "OFF"), Status: on, DumpThreads: 1},
			problems: []string{"rpl_semi_sync_master_wait_no_slave"}},
		{name: "fallen back", in: myReplication{Vars: good, Status: map[string]string{"rpl_semi_sync_master_status": "OFF"}, DumpThreads: 1},
			problems: []string{"Rpl_semi_sync_master_status"}},
		{name: "enabled, replicas invisible but semi-sync clients", in: myReplication{Vars: good, Status: on}},
		{name: "MySQL 8 names", in: myReplication{Vars: mysql8, Status: map[string]string{"rpl_semi_sync_source_status": "OFF"}, DumpThreads: 1},
			problems: []string{"rpl_semi_sync_source_timeout", "Rpl_semi_sync_source_status"}},
		{name: "Galera", in: myReplication{Vars: map[string]string{"wsrep_on": "ON"}},
			notes: []string{"Galera", "no replica"}},
	}
	for _, c := range cases {
		t.Run(c.name, func(t *testing.T) {
			if c.in.Status == nil {
				c.in.Status = map[string]string{}
			}
			rep := judgeReplication(c.in)
			var problems, notes []string
			for _, f := range rep.Findings {
				if f.Note {
					notes = append(notes, f.Problem)
				} else {
					problems = append(problems, f.Setting)
					if f.Problem == "" {
						t.Errorf("a problem without words: %+v", f)
					}
				}
			}
			if strings.Join(problems, ",") != strings.Join(c.problems, ",") || len(notes) != len(c.notes) {
				t.Fatalf("findings = %+v, want problems %q and notes %q", rep.Findings, c.problems, c.notes)
			}
			for i, n := range notes {
				if !strings.Contains(n, c.notes[i]) {
					t.Errorf("note %d = %q, want %q in it", i, n, c.notes[i])
				}
			}
			if len(c.problems) > 0 && c.problems[0] == "rpl_semi_sync_master_enabled" &&
				!strings.Contains(strings.Join(rep.Findings[0].Fix, "\n"), "SET GLOBAL rpl_semi_sync_master_wait_point = 'AFTER_SYNC'") {
				t.Errorf("fix = %q", rep.Findings[0].Fix)
			}
		})
	}
}

func TestCheckSessionSQLLogBin(t *testing.T) {
	const mode = "STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION"
	const rest = " ON NO_CHAIN 1700000000.000000 12 18446744073709551615 utf8mb4 1"
	for _, c := range []struct {
		value  string
		refuse bool
	}{
		{mode + " utf8mb4 1" + rest, false},
		{" utf8mb4 1" + rest, true}, // not strict
		{mode + " utf8mb4 0" + rest, true},
		{mode + " utf8mb4 OFF" + rest, true},
		{mode + " utf8mb4 1", true}, // the old three-value form: unexpected
		{mode + " utf8mb4", true},   // the older two-value form
	} {
		err := Dialect.CheckSession(c.value)
		if (err != nil) != c.refuse {
			t.Errorf("CheckSession(%q) = %v, want refused %v", c.value, err, c.refuse)
		}
	}
}
