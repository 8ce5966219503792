package mysql

import (
	"errors"
	"math"
	"strconv"
	"strings"

	"github.com/fencedsql/fencedsql/fencedsql"
	"github.com/fencedsql/fencedsql/fencedsql/dialect"
)

// The session settings that change the rows the wrapper's own reads return (red-team
// rt40b F3, F4; dialect.RecordsSessionChecker). go-sql-driver/mysql sends a DSN
// parameter it does not know as SET name=value at connect, and init_connect or the
// server's defaults set them unseen too:
//
//   - sql_select_limit caps every top-level SELECT: with 1 the registry read returned
//     its first row only and the second registered table went unguarded, with 0 it
//     returned none and the pool guarded nothing (only "nothing guarded" was logged);
//     the guard-trigger record, the columns of the lazy check and every other catalog
//     read were capped alike. Any value below 2^32-1 (the maximum of a 32-bit
//     server; 64-bit servers default to 2^64-1) is refused. SessionQuery itself ends
//     in an explicit LIMIT 1, which overrides it, so the refusal names the setting.
//   - character_set_results other than UTF-8 or binary (or NULL: no conversion)
//     converts the names the record reads return: under latin1 the registered
//     rt40b_café came back as "rt40b_caf\xe9", a guard keyed by a name no UTF-8
//     statement spells, and the real table went unguarded; under ascii a name came
//     back with '?' for each character, and a name stored as "cafÃ©" is read as the
//     valid "café", another table. It is refused whatever the names (the application's
//     own reads under latin1 are not the wrapper's concern, but its catalog reads share
//     the session), and dialect.PlainIdent refuses a name that is not valid UTF-8.
//   - the sql_mode flag EMPTY_STRING_IS_NULL (MariaDB) reads every '' literal, and an
//     empty string bound to a parameter, as NULL: the catalog reads build and compare
//     strings with '' (a column's description CONCAT(type, IF(nullable, ' NULL', ''))
//     was NULL for every column, so a healthy tombstone table read as "not as they
//     created it"; a `<> ''` becomes `<> NULL` and matches nothing), so what the
//     checks find would depend on the mode (red-team rt51f F2).
//
// Judged and accepted: max_join_size and sql_big_selects make the server refuse a
// read (error 1104), never return fewer rows, so the wrapper's checks fail and the
// write is refused (they stay protected settings); group_concat_max_len truncates only
// the list of base tables named in the refusal of a listed view (ColumnsQuery); the
// sql_mode flag PAD_CHAR_TO_FULL_LENGTH pads CHAR columns only, and the registry's and
// information_schema's names are VARCHAR; lc_messages changes the servers' message
// texts, which classify reads locale-independently (red-team rt40b F5).
// max_recursive_iterations and collation_connection are neutralised in the queries
// instead (catalogsession.go, red-team rt52b F1, F2).

// minSelectLimit is the smallest sql_select_limit accepted: 2^32-1, the maximum on a
// 32-bit server, more rows than any catalog read of the wrapper returns.
const minSelectLimit = math.MaxUint32

// utf8Results are the character_set_results values under which the server returns
// names in UTF-8 (or unconverted: NULL, binary, in which the server stores them).
var utf8Results = map[string]bool{"null": true, "binary": true, "utf8": true, "utf8mb3": true, "utf8mb4": true}

// checkRecordReads refuses a session whose sql_select_limit, character_set_results or
// sql_mode (modes, as read: mode) changes what the wrapper's own reads return.
func checkRecordReads(limit, results string, modes map[string]bool, mode string) error {
	if modes["EMPTY_STRING_IS_NULL"] {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_mode", Value: mode, Records: true,
			Problem: "has EMPTY_STRING_IS_NULL: the server reads every '' as NULL, the empty strings of the wrapper's own catalog reads included, so its checks of the guards would not read what is installed",
			Fix:     sessionFix + "; EMPTY_STRING_IS_NULL must be off"}
	}
	if n, err := strconv.ParseUint(limit, 10, 64); err != nil || n < minSelectLimit {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "sql_select_limit", Value: limit, Records: true,
			Problem: "caps every SELECT of the session, the wrapper's own reads of the tables the database records as guarded included: a shorter record leaves the other tables unfenced",
			Fix:     "SET SESSION sql_select_limit = 18446744073709551615 (put a LIMIT in the application's queries instead), and remove whatever sets it (init_connect, the DSN's sql_select_limit parameter, the server's default)"}
	}
	if !utf8Results[strings.ToLower(results)] {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "character_set_results", Value: results, Records: true,
			Problem: "the server converts the table names the wrapper reads from its records to it: a registered name read in another character set is a guard no statement matches, and the table goes unfenced",
			Fix:     "SET SESSION character_set_results = utf8mb4 (or the DSN's charset=utf8mb4), and remove whatever sets it otherwise (init_connect, the DSN's character_set_results parameter, the server's default)"}
	}
	return nil
}

// RecordsSessionError implements dialect.RecordsSessionChecker: CheckSession's
// error when it is about a setting that changes the wrapper's own reads (Records).
func (d dialectImpl) RecordsSessionError(value string) error {
	var se *fencedsql.SessionError
	if err := d.CheckSession(value); errors.As(err, &se) && se.Records {
		return err
	}
	return nil
}

var _ dialect.RecordsSessionChecker = dialectImpl{}

// utf8Clients are the character_set_client values in which the server reads the
// UTF-8 names fencedsql/schema sends as they are.
var utf8Clients = map[string]bool{"utf8": true, "utf8mb3": true, "utf8mb4": true}

// ToolSessionError implements dialect.ToolSessionChecker: RecordsSessionError's
// settings, and a character_set_client that is not UTF-8, under which the server
// decodes the names fencedsql/schema sends as other characters (red-team rt56a F4:
// RegisterTables from a latin1 or cp1250 session recorded "café" as "cafÃ©").
func (d dialectImpl) ToolSessionError(value string) error {
	if err := d.RecordsSessionError(value); err != nil {
		return err
	}
	f := strings.Split(value, " ")
	if len(f) < 2 {
		return nil
	}
	if cs := strings.ToLower(f[1]); !utf8Clients[cs] {
		return &fencedsql.SessionError{Dialect: "mysql", Setting: "character_set_client", Value: cs, Records: true,
			Problem: "the server decodes the table names fencedsql-schema sends from it: a non-ASCII name would be recorded, and looked up, as another name",
			Fix:     "connect with charset=utf8mb4 (SET NAMES utf8mb4), and remove whatever sets it otherwise (init_connect, the server's default)"}
	}
	return nil
}

var _ dialect.ToolSessionChecker = dialectImpl{}
