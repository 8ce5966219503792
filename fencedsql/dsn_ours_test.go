package fencedsql

import "testing"

// TestOursNearMisses: ours takes for this package's a key that is, or is a near miss
// of, one of its parameters (so that it is read or refused, never passed to a driver
// that ignores unknown parameters), and leaves alone the parameters of the supported
// drivers and the server settings a DSN commonly passes.
func TestOursNearMisses(t *testing.T) {
	for _, k := range []string{
		"fenced_tables", "fencedtables", "fenced-tables", "FENCED_TABLES", "fenced_tabels",
		"fence_tables", "fencd_tables", "fenecd_tables", "fnced_tables", "fencde_tables",
		"fence_token_column", "fenced_token_colum", "fenced_versoin_column", "fenced_alow",
		"fencedstrict", "fenced_schemacheck", "fencing_tables", "fencing_table", "FencingTables",
	} {
		if !ours(k) {
			t.Errorf("ours(%q) = false; want true (a near miss of a parameter of this package)", k)
		}
		if near := nearest(k); near == "" {
			t.Errorf("nearest(%q) = \"\"; want the parameter it stands for", k)
		}
	}
	if got := nearest("fence_tables"); got != ParamTables {
		t.Errorf("nearest(fence_tables) = %q; want %s", got, ParamTables)
	}
	for _, k := range []string{
		// modernc.org/sqlite
		"_pragma", "_txlock", "_time_format", "_time_integer_format", "vfs", "mode", "cache", "immutable", "nolock", "psow", "_journal_mode", "_sync",
		// pgx / libpq
		"host", "port", "user", "password", "dbname", "sslmode", "sslrootcert", "application_name", "search_path", "connect_timeout",
		"pool_max_conns", "statement_cache_capacity", "default_query_exec_mode", "target_session_attrs", "options", "fallback_application_name",
		// go-sql-driver/mysql and common system variables
		"parseTime", "loc", "charset", "collation", "interpolateParams", "multiStatements", "tls", "timeout", "readTimeout", "writeTimeout",
		"allowNativePasswords", "allowCleartextPasswords", "rejectReadOnly", "clientFoundRows", "columnsWithAlias", "maxAllowedPacket",
		"checkConnLiveness", "serverPubKey", "sql_mode", "time_zone", "foreign_key_checks", "transaction_isolation", "autocommit",
		"encoding", "defer", "fetch", "allowOldPasswords", "allowAllFiles", "allowFallbackToPlaintext", "clientFoundRows",
		"maxAllowedPacket", "connectionAttributes", "compress", "strict", "net_write_timeout", "innodb_lock_wait_timeout",
		// more of pgx / libpq
		"sslcert", "sslkey", "sslpassword", "sslsni", "krb_srv_name", "krb_spn", "service", "servicefile", "passfile",
		"pool_min_conns", "pool_max_conn_lifetime", "pool_max_conn_idle_time", "pool_health_check_period", "description_cache_capacity",
		"min_read_buffer_size", "channel_binding", "gssencmode", "hostaddr", "keepalives",
		// more of modernc.org/sqlite
		"_foreign_keys", "_busy_timeout", "_locking_mode", "_cache_size",
	} {
		if ours(k) {
			t.Errorf("ours(%q) = true; want false (a parameter of a driver or server)", k)
		}
	}
}
