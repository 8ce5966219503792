package redteam

import "testing"

// Class 14: statements that reach the guards without naming them (red-team findings
// on the SQL planner: catalog DML, extensions, types a guarded table uses, a setting
// that empties the wrapper's own checks). On the raw driver each entry changes a
// guard object, a guarded row or column (the catalog snapshot shows it) or, with its
// follow-up, gets past the intact guard; through the wrapper it is refused, whatever
// the token.
const c14 = "14_reach_without_naming"

func postgresReachEntries() []entry {
	g := func(name string, steps ...step) entry {
		return entry{class: c14, name: name, setup: pgGuardSetup, steps: steps, want: Refused}
	}
	enum := []string{
		"CREATE TYPE acct_status AS ENUM ('frozen', 'active')",
		"ALTER TABLE accounts ADD COLUMN st acct_status NOT NULL DEFAULT 'frozen'",
	}
	return []entry{
		// the catalogs hold the guard's trigger, function and the fencing columns' NOT NULL
		g("catalog_update_attnotnull", x("UPDATE pg_attribute SET attnotnull = false WHERE attname = 'fence_token' AND attrelid = 'accounts'::regclass")),
		g("catalog_disable_trigger", x("UPDATE pg_catalog.pg_trigger SET tgenabled = 'D' WHERE tgname LIKE '%guard%'")),
		g("catalog_delete_trigger_in_with", x("WITH d AS (DELETE FROM pg_trigger WHERE tgname LIKE '%tomb%' RETURNING 1) SELECT count(*) FROM d")),
		{class: c14, name: "catalog_rewrite_guard_body", setup: pgGuardSetup, want: Refused,
			steps: []step{x("UPDATE pg_proc SET prosrc = 'BEGIN RETURN NEW; END' WHERE proname LIKE '%guard%'")},
			then:  []string{lowerToken}},
		// an extension installs functions that change tables without triggers
		g("create_extension", x("CREATE EXTENSION IF NOT EXISTS pg_surgery")),
		// a type a guarded table uses: every row changed, or the column dropped
		{class: c14, name: "alter_type_rename_value", setup: append(append([]string{}, pgGuardSetup...), enum...), want: Refused,
			steps: []step{x("ALTER TYPE acct_status RENAME VALUE 'frozen' TO 'active_'")}},
		{class: c14, name: "drop_type_cascade", setup: append(append([]string{}, pgGuardSetup...), enum...), want: Refused,
			steps: []step{x("DROP TYPE acct_status CASCADE")}},
		// the guard's language: detached from its extension, then dropped with the guard
		g("drop_language_cascade", x("ALTER EXTENSION plpgsql DROP LANGUAGE plpgsql"), x("DROP LANGUAGE plpgsql CASCADE")),
	}
}

func mysqlReachEntries() []entry {
	return []entry{
		// mysql.proc holds the routines (the one-statement DELETE's fence function among
		// them): a row deleted there is a routine gone
		{class: c14, name: "catalog_delete_proc", want: Refused,
			setup: []string{"CREATE FUNCTION fencedsql_fence_accounts(t BIGINT) RETURNS INT DETERMINISTIC RETURN t"},
			steps: []step{x("DELETE FROM mysql.proc WHERE db = DATABASE() AND name LIKE '%fence%'")}},
	}
}

func TestReachPostgres(t *testing.T) { runCatalogue(t, postgresBackend(), postgresReachEntries()) }
func TestReachMariaDB(t *testing.T)  { runCatalogue(t, mysqlBackend(), mysqlReachEntries()) }
