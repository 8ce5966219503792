package deploy

import (
	"os"
	"regexp"
	"strings"
	"testing"
)

// TestDatabaseRestoreProcedureDocumented (red-team rt37c F6, G14): restoring the
// guarded database from a backup (a dump reloaded, point-in-time recovery, a volume
// snapshot rolled back) makes it forget exactly as a failover to a lagging
// asynchronous replica does: the rows and fencedsql_floor go back to the backup's
// time, so every lease granted since the backup that is still live writes again.
// Nothing in the library notices a restore (the failover hooks fire on role changes),
// so the operator documentation must carry the step: README.md's "Replication and
// failover", deploy/failover/README.md and design.md's G14 (its list of what makes one
// side forget, and its procedures) each need a paragraph that names restoring the
// database from a backup and raising the floor to the lock service's last token + 1
// before the application writes.
func TestDatabaseRestoreProcedureDocumented(t *testing.T) {
	readme := read(t, "../README.md")
	docs := map[string]string{
		`README.md "Replication and failover"`: section(t, readme, "\n## Replication and failover", "\n## "),
		"deploy/failover/README.md":            read(t, "failover/README.md"),
		"docs/design.md G14":                   section(t, read(t, "../docs/design.md"), "\n### G14.", "\n### "),
	}
	space := regexp.MustCompile(`\s+`)
	restore := regexp.MustCompile(`(?i)restor\w* (of )?the (guarded )?database from a backup`)
	raise := regexp.MustCompile("(?i)(raise-floor|last ?token`? ?\\+ ?1)")
	before := regexp.MustCompile(`(?i)before the application writes`)
	for name, text := range docs {
		found := false
		for _, p := range regexp.MustCompile(`\n\s*\n|\n- `).Split(text, -1) {
			p = space.ReplaceAllString(p, " ")
			if restore.MatchString(p) && raise.MatchString(p) && before.MatchString(p) {
				found = true
				break
			}
		}
		if !found {
			t.Errorf("%s has no paragraph saying that after restoring the guarded database from a backup, before the application writes, "+
				"the token floor is raised to the lock service's last token + 1 (raise-floor.sh): its rows and floor go back like a lagging replica's", name)
		}
	}
}

func read(t *testing.T, path string) string {
	t.Helper()
	b, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	return string(b)
}

// section is text from the line starting with head to the next line starting with end.
func section(t *testing.T, text, head, end string) string {
	t.Helper()
	i := strings.Index(text, head)
	if i < 0 {
		t.Fatalf("no %q", strings.TrimSpace(head))
	}
	s := text[i+len(head):]
	if j := strings.Index(s, end); j >= 0 {
		s = s[:j]
	}
	return s
}
