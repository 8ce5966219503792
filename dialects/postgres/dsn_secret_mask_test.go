package postgres_test

import (
	"database/sql"
	"strings"
	"testing"
)

func fencedOpenErr(t *testing.T, dsn string) error {
	t.Helper()
	db, err := sql.Open("fenced-pgx", dsn)
	if err == nil {
		err = db.Ping()
		db.Close()
	}
	if err == nil {
		t.Fatal("ping succeeded")
	}
	return err
}

// TestFencedPoolErrorMasksSSLPassword (red-team rt33a F5): pgx reads "sslpassword = X" (blanks around '=',
// as libpq allows) as the client key's passphrase, and its ParseConfigError quotes the
// DSN; pgx's own redaction (regexp `password=[^ ]*`) misses the spaced spelling and
// the wrapper masked only the "password" keyword. The fenced pool's error holds no
// secret of the DSN: sslpassword is masked like password (secret.Passwords).
func TestFencedPoolErrorMasksSSLPassword(t *testing.T) {
	const pw = "s3cr3tKeyPass"
	err := fencedOpenErr(t, "host=127.0.0.1 port=1 user=app sslpassword = "+pw+" dbname=shop sslmode=bogus fenced_tables=accounts")
	if strings.Contains(err.Error(), pw) {
		t.Errorf("the fenced pool's error holds the DSN's sslpassword: %s", strings.ReplaceAll(err.Error(), pw, "<SSLPASSWORD>"))
	}
}

// TestFencedPoolErrorMasksEveryPassword (red-team rt33a F6): a keyword/value DSN giving password twice with
// blanks around '=' (a template appending "password = …" to a DSN that already has
// one). Only the last one (the one pgx uses) was masked, and pgx's redaction misses
// the spaced spelling, so the first password was printed verbatim. Every password
// value of the DSN is masked.
func TestFencedPoolErrorMasksEveryPassword(t *testing.T) {
	const pw = "f1rstS3cret"
	err := fencedOpenErr(t, "host=127.0.0.1 port=1 user=app password = "+pw+" password = s3cond dbname=shop sslmode=bogus fenced_tables=accounts")
	if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "s3cond") {
		t.Errorf("the fenced pool's error holds the DSN's first password: %s", strings.ReplaceAll(err.Error(), pw, "<PASSWORD>"))
	}
}

// TestFencedPoolErrorMasksPasswordWhateverTheDSNForm (red-team rt43e F1): a
// keyword/value DSN with "://" in any value (application_name=http://…,
// sslrootcert=file:///…) was taken for a URL by the password finder, which found no
// password in it, and pgx's redaction misses "password = p": the fenced pool's error
// printed it. pgx reads such a DSN as keyword/value (only a leading postgres:// or
// postgresql:// makes a URL), and so does the mask now; a URL whose password holds an
// unescaped '@' is masked as pgx reads it (up to the first '@') and as it was meant.
func TestFencedPoolErrorMasksPasswordWhateverTheDSNForm(t *testing.T) {
	const pw = "S3cr3t-kv"
	for _, dsn := range []string{
		"host=127.0.0.1 port=1 user=u password = " + pw + " sslmode=bogus application_name=http://x",
		"host=127.0.0.1 port=1 user=u password = " + pw + " sslmode=bogus sslrootcert=file:///etc/ssl/ca.pem",
		"application_name=a://b host=127.0.0.1 port=1 user=u password = " + pw + " connect_timeout=x",
		"host=127.0.0.1 port=1 user=u password = " + pw + " sslmode=bogus application_name=http://x fenced_tables=accounts",
		"host=127.0.0.1 port=1 user=u sslpassword = " + pw + " sslmode=bogus options='-c x=y' application_name=svc://a",
		"host password = " + pw + " port=1 application_name=http://x",
		"postgres://u:" + pw + "@TAIL-kv@127.0.0.1:1/db?connect_timeout=1",
	} {
		err := fencedOpenErr(t, dsn)
		if strings.Contains(err.Error(), pw) || strings.Contains(err.Error(), "TAIL-kv") {
			t.Errorf("the fenced pool's error shows the DSN's password:\n%s", err)
		}
	}
}
