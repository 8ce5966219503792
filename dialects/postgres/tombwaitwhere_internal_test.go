package postgres

import "testing"

// TestInTombstoneCheck: the context of an error inside the tombstone guard's function
// (any schema, quoted names, another message language) is told from one elsewhere (a
// unique index of the table, the recorder, a user's function).
func TestInTombstoneCheck(t *testing.T) {
	for _, c := range []struct {
		where string
		want  bool
	}{
		{"while inserting index tuple (0,2) in relation \"fencedsql_tomb_acc\"\nSQL statement \"INSERT INTO \"public\".\"fencedsql_tomb_acc\" AS t (\"id\", fence_token, deleted_at) VALUES (NEW.\"id\", 0, pg_catalog.clock_timestamp())\n    ON CONFLICT (\"id\") DO NOTHING\"\nPL/pgSQL function public.fencedsql_tombstone_acc() line 51 at SQL statement", true},
		{"PL/pgSQL function \"My Schema\".\"fencedsql_tombstone_My Table\"() line 51 at SQL statement", true},
		{"PL/pgSQL-Funktion app.fencedsql_tombstone_acc() Zeile 58 bei SQL-Anweisung", true},
		{"PL/pgSQL function fencedsql_tombstone_acc_1a2b3c() line 51 at SQL statement", true},
		{"while inserting index tuple (0,9) in relation \"acc_pkey\"", false},
		{"", false},
		{"PL/pgSQL function public.fencedsql_tombclaim_acc(bigint,bigint,boolean) line 9 at SQL statement", false},
		{"PL/pgSQL function public.my_fencedsql_tombstone_acc() line 3 at SQL statement", false},
	} {
		if got := inTombstoneCheck(c.where); got != c.want {
			t.Errorf("inTombstoneCheck(%q) = %v, want %v", c.where, got, c.want)
		}
	}
}
