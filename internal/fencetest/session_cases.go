package fencetest

// PostgresSessionSetup creates what the PostgreSQL session cases use: a function that
// changes client_encoding from inside (its SET outlives the call).
var PostgresSessionSetup = []string{
	`CREATE FUNCTION fencetest_set_encoding(enc text) RETURNS int LANGUAGE plpgsql AS $$
BEGIN
	PERFORM set_config('client_encoding', enc, false);
	RETURN 1;
END $$`,
}

const (
	pgSCS    = "standard_conforming_strings"
	pgEnc    = "client_encoding"
	pgSCSOn  = "SET standard_conforming_strings = on"
	pgEncUTF = "SET client_encoding = 'UTF8'"
)

// PostgresSessionCases are the ways PostgreSQL's standard_conforming_strings and
// client_encoding can change: each must make the next guarded write fail with a
// *fencedsql.SessionError.
func PostgresSessionCases() []SessionCase {
	return []SessionCase{
		{Name: "SET scs off", Change: []string{"SET standard_conforming_strings = off"}, Setting: pgSCS, Reset: []string{pgSCSOn}},
		{Name: "SET SESSION client_encoding SJIS", Change: []string{"SET SESSION client_encoding = 'SJIS'"}, Setting: pgEnc, Reset: []string{pgEncUTF}},
		{Name: "SET NAMES BIG5", Change: []string{"SET NAMES 'BIG5'"}, Setting: pgEnc, Reset: []string{"SET NAMES 'UTF8'"}},
		{Name: "set_config scs", Change: []string{"SELECT set_config('standard_conforming_strings', 'off', false)"}, Setting: pgSCS,
			Reset: []string{"SELECT set_config('standard_conforming_strings', 'on', false)"}},
		{Name: "set_config in a VALUES list", Change: []string{"VALUES (set_config('client_encoding', 'GB18030', false))"}, Setting: pgEnc, Reset: []string{pgEncUTF}},
		// SET LOCAL: refused inside the transaction; the rollback undoes it.
		{Name: "SET LOCAL scs in a tx", InTx: true, Change: []string{"SET LOCAL standard_conforming_strings = off"}, Setting: pgSCS},
		{Name: "set_config local encoding in a tx", InTx: true, Change: []string{"SELECT set_config('client_encoding', 'UHC', true)"}, Setting: pgEnc},
		{Name: "DO block", Dynamic: true, Change: []string{"DO $$BEGIN PERFORM set_config('standard_conforming_strings', 'off', false); END$$"}, Setting: pgSCS, Reset: []string{pgSCSOn}},
		{Name: "function in a SELECT", Change: []string{"SELECT fencetest_set_encoding('JOHAB')"}, Setting: pgEnc, Reset: []string{pgEncUTF}},
		{Name: "PREPARE then EXECUTE later", Dynamic: true, Before: []string{"PREPARE fencetest_s AS SELECT set_config('client_encoding', 'GBK', false)"},
			Change: []string{"EXECUTE fencetest_s"}, Setting: pgEnc, Reset: []string{pgEncUTF}},
		{Name: "prepared SET executed later", Prepared: true, Change: []string{"SET standard_conforming_strings = off"}, Setting: pgSCS, Reset: []string{pgSCSOn}},
		{Name: "raw connection", Raw: true, Change: []string{"SET client_encoding = 'SHIFT_JIS_2004'"}, Setting: pgEnc, Reset: []string{pgEncUTF}},
		{Name: "DSN scs off", DSN: "standard_conforming_strings=off", Setting: pgSCS, Reset: []string{pgSCSOn}},
		{Name: "DSN client_encoding SJIS", DSN: "client_encoding=SJIS", Setting: pgEnc, Reset: []string{pgEncUTF}},
		// An encoding the lexer reads right but the guards' non-ASCII text does not
		// survive (red-team rt52a F3).
		{Name: "SET client_encoding LATIN1", Change: []string{"SET client_encoding = 'LATIN1'"}, Setting: pgEnc, Reset: []string{pgEncUTF}},
		// Harmless: a safe encoding, and a function whose SET is local to it. Tracked,
		// the check sends nothing: the write is one statement.
		{Name: "SET client_encoding SQL_ASCII is fine", Change: []string{"SET client_encoding = 'SQL_ASCII'"}, Harmless: true, Cost: 1},
		{Name: "SELECT after SET is fine", Change: []string{"SET standard_conforming_strings = on", "SELECT 1"}, Harmless: true, Cost: 1},
	}
}

// MySQLSessionSetup creates what the MySQL session cases use: a procedure and a
// function that change sql_mode and the character set inside (the server restores
// the caller's afterwards).
var MySQLSessionSetup = []string{
	// Not SET NAMES: the server restores character_set_client, not the
	// character_set_results it sets too, which the session check refuses (red-team rt40b
	// F4: it changes the names the wrapper reads).
	"CREATE PROCEDURE fencetest_p() BEGIN SET SESSION sql_mode = ''; SET character_set_client = 'gbk'; END",
	"CREATE FUNCTION fencetest_f() RETURNS INT BEGIN SET SESSION sql_mode = ''; SET character_set_client = 'sjis'; RETURN 1; END",
	"CREATE TABLE other (id BIGINT PRIMARY KEY, x BIGINT NOT NULL) ENGINE=InnoDB",
	"INSERT INTO other VALUES (1, 0)",
}

const (
	myMode      = "sql_mode"
	myCS        = "character_set_client"
	myModeReset = "SET SESSION sql_mode = 'STRICT_TRANS_TABLES,NO_ENGINE_SUBSTITUTION'"
	myCSReset   = "SET NAMES utf8mb4"
)

// MySQLSessionCases are the ways MySQL/MariaDB's sql_mode and character_set_client
// can change.
func MySQLSessionCases() []SessionCase {
	return []SessionCase{
		{Name: "SET SESSION sql_mode empty", Change: []string{"SET SESSION sql_mode = ''"}, Setting: myMode, Reset: []string{myModeReset}},
		{Name: "SET @@sql_mode ANSI_QUOTES", Change: []string{"SET @@SESSION.sql_mode = CONCAT(@@SESSION.sql_mode, ',ANSI_QUOTES')"}, Setting: myMode, Reset: []string{myModeReset}},
		{Name: "SET LOCAL NO_BACKSLASH_ESCAPES in a tx", InTx: true, Change: []string{"SET LOCAL sql_mode = 'STRICT_ALL_TABLES,NO_BACKSLASH_ESCAPES'"}, Setting: myMode, Reset: []string{myModeReset}},
		{Name: "SET NAMES gbk", Change: []string{"SET NAMES gbk"}, Setting: myCS, Reset: []string{myCSReset}},
		{Name: "SET CHARACTER SET sjis", Change: []string{"SET CHARACTER SET sjis"}, Setting: myCS, Reset: []string{myCSReset}},
		{Name: "SET character_set_client big5", Change: []string{"SET character_set_client = big5"}, Setting: myCS, Reset: []string{myCSReset}},
		{Name: "executable comment", Change: []string{"/*!40101 SET character_set_client = cp932 */"}, Setting: myCS, Reset: []string{myCSReset}},
		{Name: "PREPARE then EXECUTE later", Dynamic: true, Before: []string{"PREPARE fencetest_s FROM 'SET NAMES cp932'"}, Change: []string{"EXECUTE fencetest_s"}, Setting: myCS, Reset: []string{myCSReset}},
		{Name: "EXECUTE IMMEDIATE", Dynamic: true, Change: []string{"EXECUTE IMMEDIATE 'SET SESSION sql_mode = ''NO_ENGINE_SUBSTITUTION'''"}, Setting: myMode, Reset: []string{myModeReset}},
		{Name: "prepared SET executed later", Prepared: true, Change: []string{"SET NAMES sjis"}, Setting: myCS, Reset: []string{myCSReset}},
		{Name: "DSN charset gbk", DSN: "charset=gbk", Setting: myCS, Reset: []string{myCSReset}},
		{Name: "DSN sql_mode ANSI_QUOTES", DSN: "sql_mode=%27STRICT_ALL_TABLES,ANSI_QUOTES%27", Setting: myMode, Reset: []string{myModeReset}},
		// Harmless: the server undoes what a procedure or function sets, and a plain
		// read or an unguarded UPDATE … SET does not re-arm the check (one statement).
		{Name: "CALL of a procedure that sets", Dynamic: true, Change: []string{"CALL fencetest_p()"}, Harmless: true, Cost: 2},
		{Name: "function that sets, in a SELECT", Change: []string{"SELECT fencetest_f()"}, Harmless: true, Cost: 1},
		{Name: "unguarded UPDATE SET", Change: []string{"UPDATE other SET x = x + 1 WHERE id = 1"}, Harmless: true, Cost: 1},
		{Name: "SET NAMES utf8mb4 is fine", Change: []string{"SET NAMES utf8mb4"}, Harmless: true, Cost: 2},
	}
}
