package mysql

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql"
)

// sessionValue is SessionQuery's value with field i replaced by v (MariaDB's form;
// mysqlForm drops MariaDB's six fields).
func sessionValue(mysqlForm bool, repl map[int]string) string {
	f := strings.Split(SessionOK, " ")
	for i, v := range repl {
		f[i] = v
	}
	if mysqlForm { // the common fields and the trailing record fields
		f = append(f[:sessionFields-tailFields:sessionFields-tailFields], f[len(f)-tailFields:]...)
	}
	return strings.Join(f, " ")
}

// CheckSession on values: each setting SessionQuery reads is refused with its own
// Setting, and the accepted forms (MySQL's seven fields, MariaDB's thirteen, ON/OFF
// and 1/0 spellings, a clock within the tolerance) pass.
func TestCheckSessionValues(t *testing.T) {
	if len(strings.Split(SessionOK, " ")) != sessionFieldsMariaDB {
		t.Fatalf("SessionOK %q has the wrong field count", SessionOK)
	}
	for _, c := range []struct {
		name    string
		mysql   bool
		repl    map[int]string
		setting string // "": accepted
	}{
		{"SessionOK", false, nil, ""},
		{"MySQL form", true, nil, ""},
		{"ON/OFF spellings", false, map[int]string{2: "ON", 3: "ON", 7: "OFF"}, ""},
		{"completion_type 0", false, map[int]string{4: "0"}, ""},
		{"clock equal to now", false, map[int]string{6: "0"}, ""},
		{"clock within tolerance, behind", false, map[int]string{6: "999999"}, ""},
		{"clock within tolerance, ahead", false, map[int]string{6: "-1000000"}, ""},
		{"MySQL form, clock within tolerance", true, map[int]string{6: "250"}, ""},
		{"server_id and gtid_domain_id equal to the server's", false, map[int]string{8: "7", 9: "7", 10: "3", 11: "3"}, ""},

		{"not strict", false, map[int]string{0: "NO_ENGINE_SUBSTITUTION"}, "sql_mode"},
		{"empty sql_mode", false, map[int]string{0: ""}, "sql_mode"},
		{"ANSI_QUOTES", false, map[int]string{0: "STRICT_ALL_TABLES,ANSI_QUOTES"}, "sql_mode"},
		{"gbk", false, map[int]string{1: "gbk"}, "character_set_client"},
		{"sql_log_bin 0", false, map[int]string{2: "0"}, "sql_log_bin"},
		{"sql_log_bin OFF, MySQL form", true, map[int]string{2: "OFF"}, "sql_log_bin"},
		{"autocommit 0", false, map[int]string{3: "0"}, "autocommit"},
		{"autocommit OFF, MySQL form", true, map[int]string{3: "OFF"}, "autocommit"},
		{"completion_type CHAIN", false, map[int]string{4: "CHAIN"}, "completion_type"},
		{"completion_type RELEASE", false, map[int]string{4: "RELEASE"}, "completion_type"},
		{"completion_type 1", true, map[int]string{4: "1"}, "completion_type"},
		{"completion_type 2", false, map[int]string{4: "2"}, "completion_type"},
		{"clock set back to 2001", false, map[int]string{5: "1000000000.000000", 6: "796306528094486"}, "timestamp"},
		{"clock just beyond tolerance", false, map[int]string{6: "1000001"}, "timestamp"},
		{"clock ahead", true, map[int]string{6: "-60000000"}, "timestamp"},
		{"clock unreadable", false, map[int]string{6: "x"}, "timestamp"},
		{"skip_replication 1", false, map[int]string{7: "1"}, "skip_replication"},
		{"skip_replication ON", false, map[int]string{7: "ON"}, "skip_replication"},
		{"skip_replication unknown", false, map[int]string{7: "maybe"}, "skip_replication"},
		{"server_id not the server's", false, map[int]string{8: "1001"}, "server_id"},
		{"gtid_domain_id not the server's", false, map[int]string{10: "7"}, "gtid_domain_id"},
		{"gtid_seq_no set", false, map[int]string{12: "5"}, "gtid_seq_no"},

		// The settings that change what the wrapper's own reads return (red-team rt40b
		// F3, F4), the last two fields in every form.
		{"sql_select_limit 1", false, map[int]string{16: "1"}, "sql_select_limit"},
		{"sql_select_limit 0", false, map[int]string{16: "0"}, "sql_select_limit"},
		{"sql_select_limit 0, MySQL form", true, map[int]string{16: "0"}, "sql_select_limit"},
		{"sql_select_limit unreadable", false, map[int]string{16: "x"}, "sql_select_limit"},
		{"sql_select_limit of a 32-bit server", false, map[int]string{16: "4294967295"}, ""},
		{"character_set_results latin1", false, map[int]string{17: "latin1"}, "character_set_results"},
		{"character_set_results ascii, MySQL form", true, map[int]string{17: "ascii"}, "character_set_results"},
		{"character_set_results binary", false, map[int]string{17: "binary"}, ""},
		{"character_set_results NULL", false, map[int]string{17: "NULL"}, ""},
		{"character_set_results utf8mb3", true, map[int]string{17: "utf8mb3"}, ""},

		// The writable-primary test, the last field in every form (red-team rt42f F2).
		{"a replica or read_only server", false, map[int]string{18: "0"}, "read_only, replication"},
		{"a replica, MySQL form", true, map[int]string{18: "0"}, "read_only, replication"},
		{"writable primary unreadable", false, map[int]string{18: "NULL"}, "read_only, replication"},
	} {
		t.Run(c.name, func(t *testing.T) {
			v := sessionValue(c.mysql, c.repl)
			err := Dialect.CheckSession(v)
			if c.setting == "" {
				if err != nil {
					t.Fatalf("CheckSession(%q) = %v, want accepted", v, err)
				}
				return
			}
			var se *fencedsql.SessionError
			if !errors.As(err, &se) || !errors.Is(err, fencedsql.ErrSchema) {
				t.Fatalf("CheckSession(%q) = %v, want a *SessionError", v, err)
			}
			if se.Setting != c.setting || se.Problem == "" || se.Fix == "" {
				t.Fatalf("CheckSession(%q) = %+v, want Setting %q with a Problem and a Fix", v, se, c.setting)
			}
			if want := c.setting == "read_only, replication"; errors.Is(err, fencedsql.ErrNotPrimary) != want || want && (se.Reading || se.Records) {
				t.Fatalf("CheckSession(%q) = %+v: errors.Is ErrNotPrimary %v, want %v (and neither Reading nor Records)", v, se, !want, want)
			}
		})
	}
	// A reading error does not hide a records one: it carries Records too.
	var se *fencedsql.SessionError
	if err := Dialect.CheckSession(sessionValue(false, map[int]string{0: "STRICT_ALL_TABLES,ANSI_QUOTES", 16: "1"})); !errors.As(err, &se) || !se.Reading || !se.Records {
		t.Errorf("ANSI_QUOTES with sql_select_limit 1: %v; want a SessionError with Reading and Records", err)
	}
	// Values of another shape (the old three-field form, a missing field) are refused
	// as unreadable, with Reading (every statement the wrapper judges is refused).
	for _, v := range []string{"", "STRICT_TRANS_TABLES utf8mb4 1", sessionValue(true, nil) + " 0", SessionOK + " 0"} {
		var se *fencedsql.SessionError
		if err := Dialect.CheckSession(v); !errors.As(err, &se) || !se.Reading {
			t.Errorf("CheckSession(%q) = %v, want a Reading SessionError", v, err)
		}
	}
	if q := Dialect.SessionQuery(); strings.ContainsAny(q, "\\\"") || strings.IndexFunc(q, func(r rune) bool { return r >= 0x80 }) >= 0 {
		t.Errorf("SessionQuery %q is not ASCII without backslashes and double quotes", q)
	}
}
