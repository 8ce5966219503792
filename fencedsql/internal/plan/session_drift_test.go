package plan_test

// An external test package: it sees protectedSettings (through export_test.go) and the
// MySQL dialect's session check (dialects/mysql imports fencedsql, which imports this
// package, so only an external test package can import it here).

import (
	"errors"
	"strings"
	"testing"

	"github.com/fencedsql/fencedsql/dialects/mysql"
	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/internal/plan"
)

// TestProtectedSettingsCheckedBySession: every MySQL/MariaDB setting the wrapper
// refuses to SET (protectedSettings, whose reasons end in "(MySQL/MariaDB)",
// "(MariaDB)" or "(MySQL)") is either verified by the MySQL session check — the value
// of mysql.SessionOK with that setting's field made unsafe is refused with a
// *SessionError naming it — or listed in notRead with the reason the session check
// does not read it. A DSN parameter, init_connect or a statement on Conn.Raw sets a
// session variable unseen by the statement checks (a red-team finding: timestamp,
// autocommit and completion_type were refused as statements and passed from the DSN),
// so adding a protected setting means deciding here.
func TestProtectedSettingsCheckedBySession(t *testing.T) {
	// checked: the field of SessionQuery's value (see dialects/mysql/session.go) and an
	// unsafe value of it.
	checked := map[string]struct {
		field int
		bad   string
	}{
		"sql_log_bin":            {2, "0"},
		"autocommit":             {3, "0"},
		"completion_type":        {4, "CHAIN"},
		"timestamp":              {6, "796306528094486"}, // NOW(6) to SYSDATE(6): a clock set back to 2001
		"skip_replication":       {7, "1"},
		"server_id":              {8, "1001"}, // @@SESSION.server_id, not @@GLOBAL's
		"gtid_domain_id":         {10, "7"},   // @@SESSION.gtid_domain_id, not @@GLOBAL's
		"gtid_seq_no":            {12, "5"},
		"system_versioning_asof": {13, "2020-01-01_00:00:00.000000"},
		"wsrep_on":               {14, "1"},
		"sql_select_limit":       {16, "1"}, // red-team rt40b F3: it capped the record reads
	}
	notRead := map[string]string{
		// The session query must run on MySQL and MariaDB alike, and naming a variable the
		// server does not have fails it: MariaDB has no gtid_next, and no conditional
		// comment runs on MySQL only (/*!NNNNN runs on MariaDB too; /*M! only there).
		// Setting it needs REPLICATION_APPLIER or SYSTEM_VARIABLES_ADMIN.
		"gtid_next": "MySQL only: not readable by a query that also runs on MariaDB",
		// These are protected for availability, not for fencing: they make the wrapper's
		// own queries be refused by the server, so guarded writes fail;
		// none makes a write pass unfenced.
		"max_join_size":   "fails closed: the server refuses the wrapper's own checks",
		"sql_big_selects": "fails closed: the server refuses the wrapper's own checks",
	}
	ok := strings.Split(mysql.SessionOK, " ")
	if err := mysql.Dialect.CheckSession(mysql.SessionOK); err != nil {
		t.Fatalf("CheckSession(SessionOK) = %v", err)
	}
	seen := map[string]bool{}
	for _, s := range plan.ProtectedSettingsForTest() {
		isMySQL := strings.HasSuffix(s.Why, "(MySQL/MariaDB)") || strings.HasSuffix(s.Why, "(MariaDB)") || strings.HasSuffix(s.Why, "(MySQL)")
		if !isMySQL {
			if !strings.HasSuffix(s.Why, "(PostgreSQL)") && !strings.HasSuffix(s.Why, "(SQLite)") {
				t.Errorf("protected setting %s: its reason does not end with the dialects it concerns: %q", s.Name, s.Why)
			}
			continue
		}
		seen[s.Name] = true
		c, isChecked := checked[s.Name]
		_, isNotRead := notRead[s.Name]
		switch {
		case isChecked && isNotRead:
			t.Errorf("%s is both checked and not read", s.Name)
		case isNotRead:
		case !isChecked:
			t.Errorf("protected MySQL setting %s is neither read by dialects/mysql's session check nor listed as not read: a DSN parameter or init_connect would set it unseen", s.Name)
		default:
			f := append([]string(nil), ok...)
			f[c.field] = c.bad
			v := strings.Join(f, " ")
			var se *fencedsql.SessionError
			if err := mysql.Dialect.CheckSession(v); !errors.As(err, &se) || se.Setting != s.Name {
				t.Errorf("CheckSession(%q) = %v, want a *SessionError for %s", v, err, s.Name)
			}
		}
	}
	for n := range checked {
		if !seen[n] {
			t.Errorf("checked lists %s, which is not a protected MySQL setting", n)
		}
	}
	for n := range notRead {
		if !seen[n] {
			t.Errorf("notRead lists %s, which is not a protected MySQL setting", n)
		}
	}
}
