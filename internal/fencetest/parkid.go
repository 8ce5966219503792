package fencetest

// FencedColumns is the column list the PostgreSQL tests of a transaction's raised token
// give their tables: a balance and the default fencing columns, each NOT NULL DEFAULT 0.
const FencedColumns = "balance bigint NOT NULL DEFAULT 0, fence_token bigint NOT NULL DEFAULT 0, version bigint NOT NULL DEFAULT 0"

// ParKidTables are the PostgreSQL statements that make the tables par and kid, a kid row
// deleted with its par row by ON DELETE CASCADE: the schema in which a row is deleted by
// a statement that does not name its table (the oracle is RaisedTombstone).
func ParKidTables() []string {
	return []string{
		"CREATE TABLE par (id bigint PRIMARY KEY, " + FencedColumns + ")",
		"CREATE TABLE kid (id bigint PRIMARY KEY, pid bigint REFERENCES par (id) ON DELETE CASCADE, " + FencedColumns + ")",
	}
}

// JobsDeletingParentAtCommit are the PostgreSQL statements that make a table jobs whose
// deferred constraint trigger deletes, at COMMIT, the par row a new job names (after
// ParKidTables): a deletion that runs after the transaction's last statement.
func JobsDeletingParentAtCommit() []string {
	return []string{
		"CREATE TABLE jobs (id bigserial PRIMARY KEY, par_id bigint NOT NULL)",
		`CREATE FUNCTION jobs_done() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN DELETE FROM par WHERE id = NEW.par_id; RETURN NULL; END $$`,
		`CREATE CONSTRAINT TRIGGER jobs_done AFTER INSERT ON jobs DEFERRABLE INITIALLY DEFERRED FOR EACH ROW EXECUTE FUNCTION jobs_done()`,
	}
}
