package mysql

import (
	"database/sql"
	"math/rand"
	"strings"
	"testing"
	"time"

	_ "github.com/go-sql-driver/mysql"

	"github.com/fencedsql/fencedsql/internal/testdb"
)

// TestMarkVariableSpellingsAgainstServer (red-team rt59a, held): generator + server
// oracle for the spelling class of markVariableDoors (markdoor.go). Each random spelling of a user variable (case flips, backquotes,
// single/double quotes with backslash escapes of any letter, executable comments
// around the assignment, versioned comments, ANSI_QUOTES, NO_BACKSLASH_ESCAPES, look-alike
// letters) is sent to the server as SET <spelling> := 'pwn'; when the server then shows
// @fencedsql_delete_mark = 'pwn', namedLibraryVars must have returned a guardReadVar.
// 1500 statements, under a second.
func TestMarkVariableSpellingsAgainstServer(t *testing.T) {
	dsn := testdb.MySQL(t)
	db, err := sql.Open("mysql", dsn)
	if err != nil {
		t.Fatal(err)
	}
	defer db.Close()
	db.SetMaxOpenConns(1)
	seed := time.Now().UnixNano()
	rng := rand.New(rand.NewSource(seed))
	t.Logf("seed %d", seed)
	target := "fencedsql_delete_mark"
	lookalike := map[byte][]string{'k': {"\u212a", "ｋ"}, 's': {"\u017f", "ｓ"}, 'e': {"é", "е"}, 'a': {"а", "á"}, 'c': {"с"}}
	modes := []string{"", "ANSI_QUOTES", "NO_BACKSLASH_ESCAPES", "ANSI_QUOTES,NO_BACKSLASH_ESCAPES", "ORACLE"}
	setCount, hits := 0, 0
	for i := 0; i < 1500; i++ {
		var name strings.Builder
		quote := []string{"", "`", "'", `"`}[rng.Intn(4)]
		for j := 0; j < len(target); j++ {
			c := target[j]
			switch r := rng.Intn(20); {
			case r < 3:
				name.WriteString(strings.ToUpper(string(c)))
			case r == 3 && (quote == "'" || quote == `"`):
				name.WriteString(`\` + string(c))
			case r == 4 && lookalike[c] != nil:
				l := lookalike[c]
				name.WriteString(l[rng.Intn(len(l))])
			default:
				name.WriteByte(c)
			}
		}
		spelling := "@" + quote + name.String() + quote
		stmt := "SET " + spelling + " := 'pwn'"
		switch rng.Intn(4) {
		case 1:
			stmt = "SET @x := 1 /*!50000 , " + spelling + " := 'pwn' */"
		case 2:
			stmt = "SET @x := 1 /*M!100000 , " + spelling + " := 'pwn' */"
		case 3:
			stmt = "SELECT 'pwn' INTO " + spelling
		}
		mode := modes[rng.Intn(len(modes))]
		if _, err := db.Exec("SET @fencedsql_delete_mark := NULL, SESSION sql_mode = ?", mode); err != nil {
			t.Fatal(err)
		}
		if _, err := db.Exec(stmt); err != nil {
			continue
		}
		setCount++
		var v sql.NullString
		if _, err := db.Exec("SET SESSION sql_mode = DEFAULT"); err != nil {
			t.Fatal(err)
		}
		if err := db.QueryRow("SELECT @fencedsql_delete_mark").Scan(&v); err != nil {
			t.Fatal(err)
		}
		if v.String != "pwn" {
			continue
		}
		hits++
		found := false
		for _, n := range namedLibraryVars(stmt) {
			found = found || guardReadVar(n)
		}
		if !found {
			t.Errorf("seed %d: the server assigned @fencedsql_delete_mark through %q (sql_mode %q) but namedLibraryVars found %q", seed, stmt, mode, namedLibraryVars(stmt))
		}
	}
	t.Logf("%d statements accepted, %d assigned the mark", setCount, hits)
	if hits == 0 {
		t.Fatalf("seed %d: the generator never assigned the mark", seed)
	}
}
