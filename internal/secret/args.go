package secret

import "strings"

// Args returns args, command-line arguments a command did not expect, with every
// secret masked that a DSN split among them (or among them and the values of the
// command's DSN flags, dsns) may hold, for the command's usage error (red-team rt44f
// F3: a keyword/value DSN left unquoted in a hook script, -dsn host=h user=app
// password=$PW dbname=shop, reaches the command as several arguments; flag parsing
// stops after "host=h" and the usage error printed the rest, the password included).
// Every argument is taken for a possible piece of a DSN: the secrets are those
// Passwords finds in each argument alone (a second go-sql-driver/mysql DSN,
// user:pass@tcp(…)/db; a redis:// URL), in the arguments joined with blanks
// ("password" "=" "pw"), and in each of dsns followed by them (a value split after
// -dsn's first word). Each argument is then masked with all of them (Redact).
func Args(args []string, dsns ...string) []string {
	var pw []string
	add := func(s string) {
		pw = append(pw, Passwords(s)...)
	}
	joined := strings.Join(args, " ")
	for _, a := range args {
		add(a)
	}
	add(joined)
	for _, d := range dsns {
		if d != "" {
			add(d + " " + joined)
		}
	}
	out := make([]string, len(args))
	for i, a := range args {
		out[i] = Redact(a, pw...)
	}
	return out
}
