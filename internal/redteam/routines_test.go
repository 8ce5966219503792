package redteam

import "testing"

// cR: routine, trigger, rule and event DDL whose body the scan cannot read — escapes
// spelling the guarded table, a name built at run time, or code created elsewhere —
// created through the fenced pool (issue 22 item 2). Each entry first changes a guarded
// row through the raw driver (with its follow-up: a call, or the write that fires the
// trigger or rule); through the wrapper it is refused unless WithDDL, and the follow-up
// then changes nothing.
const cR = "11_routine_ddl"

func routineEntriesPostgres() []entry {
	fn := func(name, body string) entry {
		return entry{class: cR, name: name, want: Refused,
			steps: []step{x("CREATE FUNCTION wipe() RETURNS void LANGUAGE " + body)},
			then:  []string{"SELECT wipe()"}}
	}
	// zero_trg is a trigger function created on the raw driver; attaching it is enough.
	zeroTrg := "CREATE FUNCTION zero_trg() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN UPDATE accounts SET balance = 0; RETURN NEW; END $$"
	fire := "INSERT INTO ledger (id, account_id) VALUES (10, 1)"
	return []entry{
		fn("e_string_hex", `sql AS E'UPDATE \x61ccounts SET balance = 0'`),
		fn("e_string_octal", `sql AS E'UPDATE acc\157unts SET balance = 0'`),
		fn("e_string_unicode", `sql AS E'UPDATE \u0061ccounts SET balance = 0'`),
		fn("u_string", `sql AS U&'UPDATE \0061ccounts SET balance = 0'`),
		fn("dollar_u_ident", `sql AS $$ UPDATE U&"acc\006Funts" SET balance = 0 $$`),
		fn("plpgsql_execute_concat", `plpgsql AS $$ BEGIN EXECUTE 'UPDATE acc' || 'ounts SET balance = 0'; END $$`),
		fn("plpgsql_execute_format", `plpgsql AS $$ BEGIN EXECUTE format('DELETE FROM %I', 'acc' || 'ounts'); END $$`),
		{class: cR, name: "procedure_execute_concat", want: Refused,
			steps: []step{x(`CREATE PROCEDURE wipe() LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'DELETE FROM acc' || 'ounts'; END $$`)},
			then:  []string{"CALL wipe()"}},
		{class: cR, name: "or_replace_trigger_function", want: Refused,
			steps: []step{x(`CREATE OR REPLACE FUNCTION wipe() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN EXECUTE 'UPDATE acc' || 'ounts SET balance = 0'; RETURN NEW; END $$`)},
			then:  []string{"CREATE TRIGGER wipe AFTER INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION wipe()", fire}},
		{class: cR, name: "trigger_attaching_function", want: Refused, setup: []string{zeroTrg},
			steps: []step{x("CREATE TRIGGER wipe AFTER INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION zero_trg()")},
			then:  []string{fire}},
		{class: cR, name: "constraint_trigger", want: Refused, setup: []string{zeroTrg},
			steps: []step{x("CREATE CONSTRAINT TRIGGER wipe AFTER INSERT ON ledger FOR EACH ROW EXECUTE FUNCTION zero_trg()")},
			then:  []string{fire}},
		{class: cR, name: "rule_calling_function", want: Refused, setup: []string{pgZeroFn},
			steps: []step{x("CREATE RULE wipe AS ON INSERT TO ledger DO ALSO SELECT zero_all()")},
			then:  []string{fire}},
		{class: cR, name: "schema_with_trigger", want: Refused, setup: []string{zeroTrg},
			steps: []step{x("CREATE SCHEMA rt CREATE TABLE t (x int) CREATE TRIGGER wipe AFTER INSERT ON t FOR EACH ROW EXECUTE FUNCTION public.zero_trg()")},
			then:  []string{"INSERT INTO rt.t VALUES (1)"}},
	}
}

func routineEntriesMariaDB() []entry {
	zeroFn := "CREATE FUNCTION zero_all() RETURNS INT MODIFIES SQL DATA BEGIN UPDATE accounts SET balance = 0; RETURN 1; END"
	fire := "INSERT INTO ledger (id, account_id) VALUES (10, 1)"
	return []entry{
		{class: cR, name: "procedure_execute_immediate_concat", want: Refused,
			steps: []step{x("CREATE PROCEDURE wipe() " + concatUpdate)},
			then:  []string{"CALL wipe()"}},
		{class: cR, name: "procedure_definer_compound", want: Refused,
			steps: []step{x("CREATE DEFINER = CURRENT_USER PROCEDURE wipe() BEGIN DECLARE t VARCHAR(9) DEFAULT 'acc'; EXECUTE IMMEDIATE CONCAT('UPDATE ', t, 'ounts SET balance = 0'); END")},
			then:  []string{"CALL wipe()"}},
		{class: cR, name: "or_replace_procedure", want: Refused,
			steps: []step{x("CREATE OR REPLACE PROCEDURE wipe() " + concatUpdate)},
			then:  []string{"CALL wipe()"}},
		{class: cR, name: "trigger_calling_function", want: Refused, setup: []string{zeroFn},
			steps: []step{x("CREATE TRIGGER wipe AFTER INSERT ON ledger FOR EACH ROW SET @x = zero_all()")},
			then:  []string{fire}},
		{class: cR, name: "trigger_mysqldump_form", want: Refused, setup: []string{zeroFn},
			steps: []step{x("/*!50003 CREATE*/ /*!50017 DEFINER=CURRENT_USER*/ /*!50003 TRIGGER wipe AFTER INSERT ON ledger FOR EACH ROW SET @x = zero_all() */")},
			then:  []string{fire}},
		{class: cR, name: "event_execute_immediate", want: Refused,
			steps: []step{x("CREATE EVENT wipe ON SCHEDULE AT CURRENT_TIMESTAMP + INTERVAL 1 HOUR DO " + concatUpdate)}},
	}
}

func routineEntriesSQLite() []entry {
	return []entry{
		// a view with an INSTEAD OF trigger writing accounts exists (created plainly); a
		// trigger through the fenced pool that writes the view names no guarded table
		{class: cR, name: "trigger_writing_view", want: Refused,
			setup: []string{
				"CREATE VIEW acc_v AS SELECT id, balance FROM accounts",
				"CREATE TRIGGER acc_v_upd INSTEAD OF UPDATE ON acc_v BEGIN UPDATE accounts SET balance = NEW.balance WHERE id = OLD.id; END",
			},
			steps: []step{x("CREATE TRIGGER wipe AFTER INSERT ON ledger BEGIN UPDATE acc_v SET balance = 0; END")},
			then:  []string{"INSERT INTO ledger (id, account_id) VALUES (10, 1)"}},
	}
}

func TestRoutineDDLPostgres(t *testing.T) {
	runCatalogue(t, postgresBackend(), routineEntriesPostgres())
}
func TestRoutineDDLMariaDB(t *testing.T) { runCatalogue(t, mysqlBackend(), routineEntriesMariaDB()) }
func TestRoutineDDLSQLite(t *testing.T)  { runCatalogue(t, sqliteBackend(), routineEntriesSQLite()) }
