package postgres

import (
	"testing"

	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// TestBodyWritesThroughSideChannels: a body that sends SQL text through dblink
// (dblink_exec and its kin, in any spelling of the name) is judged by EXECUTE's rule —
// a door when it names the table anywhere or holds an escape literal, not when its
// text names another table only — and a body that calls one of pg_surgery's functions
// is a door whatever it names (red-team rt65a F2, F3).
func TestBodyWritesThroughSideChannels(t *testing.T) {
	tbl := dialect.SideDoorTable{Table: dialect.TableName{Schema: "public", Name: "acc"}}
	names := familyNames(tbl, "acc")
	for _, c := range []struct {
		src, lang string
		want      bool
	}{
		{"SELECT dblink_exec('dbname=x', 'UPDATE acc SET balance = 0')", "sql", true},
		{"BEGIN RETURN dblink_exec('dbname=x', 'UPDATE acc SET balance = 0'); END", "plpgsql", true},
		{`BEGIN PERFORM public."dblink_exec"('c', 'DELETE FROM acc'); END`, "plpgsql", true},
		{`BEGIN PERFORM "DBLINK_EXEC"('c', 'DELETE FROM acc'); END`, "plpgsql", true}, // another function, maybe: fail closed
		{"BEGIN PERFORM dblink_send_query('c', 'ALTER TABLE acc DISABLE TRIGGER ALL'); END", "plpgsql", true},
		{"BEGIN PERFORM * FROM dblink('c', 'WITH x AS (DELETE FROM acc RETURNING 1) SELECT 1') AS t(i int); END", "plpgsql", true},
		{"BEGIN PERFORM dblink_open('c', 'cur', 'SELECT 1'); PERFORM dblink_fetch('c', 'cur; DELETE FROM acc', 1); END", "plpgsql", true},
		{`BEGIN PERFORM dblink_exec('c', E'DELETE FROM \x61cc'); END`, "plpgsql", true},
		{`BEGIN PERFORM U&"dblink\005fexec"('c', E'DELETE FROM \x61cc'); END`, "plpgsql", true},
		{"BEGIN PERFORM dblink_exec('c', 'UPDATE other SET balance = 0'); END", "plpgsql", false},
		{"SELECT heap_force_kill('acc'::regclass, ARRAY['(0,1)'::tid])", "sql", true},
		{"SELECT heap_force_freeze(16384::oid::regclass, ARRAY['(0,1)'::tid])", "sql", true},
		{"BEGIN PERFORM pg_catalog.heap_force_kill($1, $2); END", "plpgsql", true},
		{"SELECT 1 FROM acc", "sql", false},
	} {
		if _, got := bodyWrites(c.src, c.lang, names); got != c.want {
			t.Errorf("bodyWrites(%q, %s) = %v, want %v", c.src, c.lang, got, c.want)
		}
	}
}
