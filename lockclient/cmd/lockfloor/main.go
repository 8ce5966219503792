// Command lockfloor reads and raises the token floor of a lock service
// (lockclient.FloorRaiser), the lock-service half of switching or rebuilding one: the
// guarded database remembers the highest token that wrote each row, so a new, rebuilt or
// restored service must never hand out tokens at or below it.
//
//	lockfloor -backend etcd -endpoints host1:2379,host2:2379 [-prefix p] -show [-live] | -raise N | -retire
//	lockfloor -backend redis -addr host:6379 [-prefix p] -show [-live] | -raise N | -retire
//	lockfloor -backend postgres|mysql -dsn DSN [-table t] -show [-live] | -raise N | -retire
//	lockfloor … -failover [-margin M] [-at-least N]… [-live]
//
// -show prints LastToken: a number t such that every token the service issued so far is
// at most t and every later one is greater. -raise N makes every token the service issues
// from then on greater than N (a lower N changes nothing), then prints LastToken. On etcd
// it records N itself as the offset (the floor key), so every later token is above N
// whatever the revision, and the same -raise repeated after the prefix lost its data
// prices the tokens above those granted under it before (red-team rt46d F1).
// -retire retires the service for good (lockclient.Retirer, the first step of a switch
// to another lock service): every later grant, by any process still configured for it,
// fails with lockclient.ErrRetired, and so does every raise; it prints the last token
// the service issued — on etcd and Redis plus lockclient.RetirementMargin (2^52) — (again
// on a second -retire; -show prints it too, -show -live refuses it, see below). The mark
// lives in the service's own data: stop or reconfigure the processes still configured
// for it afterwards; a wiped etcd or Redis service comes back fresh, below the printed
// bound thanks to the margin (red-team rt44c F2), so its stragglers are refused by the
// database floor raised from the new service. On Redis the account
// must be allowed INFO or ROLE, to tell the primary; on sqllock it must be allowed to
// alter the token source (sqllock.Backend.Retire). Each prints a bare decimal number on
// stdout and nothing else,
// for scripts:
//
//	max=$(fencedsql-schema -max-token …)   # the highest token the database accepted
//	lockfloor -backend etcd -endpoints … -raise "$max"
//
// -failover prints the token the guarded database's floor must be raised above after
// a failover or a restore of that database (deploy/failover/raise-floor.sh): the
// service's LastToken, after raising the service's own floor by -margin M
// (lockclient.AdvanceFloor, red-team rt42f F1). For the SQL backends (sqllock), whose
// lease table may live in the database that failed over and lost the grants of its
// replication lag window with it, M defaults to 2^32 (lockclient.DefaultFailoverMargin):
// every token the old primary granted is then below the new floor, and the service never
// grants one again. For etcd and Redis M defaults to 0 (-show). -margin 0 with sqllock:
// only when its lease table is in a database that did not fail over (or was not
// restored), or whose grants are synchronously replicated. Every run jumps again.
//
// -at-least N, with -failover (repeatable; the highest counts), is a lower bound the
// service's own token source may have forgotten: the service's floor is raised to
// max(LastToken, N) + M instead (lockclient.AdvanceFloorAbove, red-team rt59c F2). A
// restore or an asynchronous failover of the database holding sqllock's token source
// forgets a raise made in the time it lost — the switch procedure's -raise (another
// service's answer, last + 2^52), which no margin sized for grants covers. The failover
// hook passes the guarded database's highest token (fencedsql-schema -max-token: rows
// the restore kept, written under the forgotten raise or under the previous service)
// and the last switch's answer, recorded outside the database
// (FENCEDSQL_FLOOR_AT_LEAST, README "Switching or rebuilding the lock service"): a
// raise that no row carries is known only from that record.
//
// -live, with -show or -failover, is for the failover hook, which raises the guarded
// database's floor above the printed token: after the answer it asks whether the
// service was retired (lockclient.RetirementReader, a read that changes nothing) and,
// if it was, prints nothing and fails (exit 1) — a hook still configured for the
// service the application moved away from would otherwise raise the floor from the
// retired service's last token, below every token of the service in use, and report
// success (red-team rt42c F6). A backend that cannot tell fails too.
//
// -prefix and -table name the same keys or table the application's backend uses (the
// backends' defaults when left out). -prefix "" given is the empty prefix (Redis:
// redislock.WithPrefix(""), keys lock:<name> and token), not the default; etcd refuses
// it, as etcdlock.WithPrefix does. -addr may also be a redis:// URL, the one form that
// carries credentials: a host:port with user information (u:pw@host:port) is refused
// (red-team rt45e F1). The DSN's (or URL's) password is never printed, in errors either;
// go-redis's own logger is silenced. A DSN or address read from a file or variable must
// be one line (red-team rt45e F3). -dsn-env NAME / -dsn-file PATH and
// -addr-env NAME / -addr-file PATH (- for standard input) read them off the command
// line, which every local user can read (ps): use them whenever they hold a password.
// Each flag is given at most once, -at-least excepted: a repeated one (-raise N -raise M,
// -prefix a -prefix b, -margin given in FENCEDSQL_LOCKFLOOR_ARGS and again by the hook) is
// a usage error naming it, and nothing is read or raised (internal/onceflag; red-team
// rt62c F2: the last value used to win without a word). Exit status: 0 on success, 1 when the
// service cannot be read or raised (or has no token floor), or, with -live, is
// retired or cannot tell; 2 on usage errors.
package main

import (
	"context"
	"database/sql"
	"errors"
	"flag"
	"fmt"
	"io"
	"os"
	"strconv"
	"strings"
	"time"

	_ "github.com/go-sql-driver/mysql"
	_ "github.com/jackc/pgx/v5/stdlib"
	"github.com/redis/go-redis/v9"
	clientv3 "go.etcd.io/etcd/client/v3"
	"go.uber.org/zap"

	"github.com/fencedsql/fencedsql/internal/onceflag"
	"github.com/fencedsql/fencedsql/internal/secret"
	"github.com/fencedsql/fencedsql/lockclient"
	"github.com/fencedsql/fencedsql/lockclient/etcdlock"
	"github.com/fencedsql/fencedsql/lockclient/redislock"
	"github.com/fencedsql/fencedsql/lockclient/sqllock"
)

const (
	exitOK      = 0
	exitFailed  = 1
	exitUsage   = 2
	usageString = "usage: lockfloor -backend etcd -endpoints a,b [-prefix p] | -backend redis -addr host:port|-addr-env NAME|-addr-file PATH [-prefix p] | -backend postgres|mysql -dsn DSN|-dsn-env NAME|-dsn-file PATH [-table t]; then -show [-live], -raise N, -retire or -failover [-margin M] [-at-least N]… [-live] [-timeout d]"
)

func main() {
	// go-redis's package-global logger prints to stderr unmasked: the command reports
	// every error itself, masked (red-team rt45e F1).
	redis.SetLogger(quietRedis{})
	os.Exit(run(context.Background(), os.Args[1:], os.Stdout, os.Stderr))
}

// run is the whole command: it parses args, opens the service, runs -show or -raise and
// returns the exit status.
func run(ctx context.Context, args []string, stdout, stderr io.Writer) int {
	fs := flag.NewFlagSet("lockfloor", flag.ContinueOnError)
	fs.SetOutput(stderr)
	var (
		kind      = fs.String("backend", "", "lock service: etcd, redis, postgres or mysql (sqllock)")
		endpoints = fs.String("endpoints", "", "etcd: comma-separated endpoints")
		addrFlag  = fs.String("addr", "", "redis: host:port or a redis:// URL (on the command line every local user can read it: prefer -addr-env or -addr-file when it holds a password)")
		addrEnv   = fs.String("addr-env", "", "redis: read -addr from this environment variable")
		addrFile  = fs.String("addr-file", "", "redis: read -addr from this file (- for standard input)")
		dsnFlag   = fs.String("dsn", "", "postgres, mysql: the DSN of the database holding the lease table (on the command line every local user can read it: prefer -dsn-env or -dsn-file when it holds a password)")
		dsnEnv    = fs.String("dsn-env", "", "postgres, mysql: read -dsn from this environment variable")
		dsnFile   = fs.String("dsn-file", "", "postgres, mysql: read -dsn from this file (- for standard input)")
		prefix    = fs.String("prefix", "", "etcd, redis: the key prefix of the application's backend (default: the backend's)")
		table     = fs.String("table", "", "postgres, mysql: the lease table (default: sqllock's)")
		show      = fs.Bool("show", false, "print the service's LastToken")
		live      = fs.Bool("live", false, "with -show or -failover: fail (print nothing, exit 1) when the service is retired, as the failover hook needs")
		raiseTo   = fs.String("raise", "", "raise the floor: every later token is greater than this number; then print LastToken")
		retire    = fs.Bool("retire", false, "retire the service for good (every later grant fails); then print its last token")
		failover  = fs.Bool("failover", false, "after a failover or restore of the guarded database: raise the service's floor to max(LastToken, -at-least) + -margin, then print LastToken")
		marginArg = fs.String("margin", "", "-failover: the margin (default 2^32 for postgres and mysql, whose lease table may have failed over with the database; 0 for etcd and redis)")
		timeout   = fs.Duration("timeout", 30*time.Second, "overall deadline")
		lower     atLeast
	)
	fs.Var(&lower, "at-least", "-failover: raise the service's floor to max(LastToken, this) + the margin (repeatable, the highest counts): the guarded database's -max-token and the last switch's recorded answer")
	// Each flag once, but -at-least (the highest counts): a second -raise, -prefix or
	// -margin would otherwise replace the first without a word (red-team rt62c F2).
	if err := onceflag.Parse(fs, args, "at-least"); err != nil {
		return exitUsage
	}
	// -prefix "" given is the empty prefix, not the backend's default (red-team rt28b
	// F4): the tool must name the keys the application's backend uses.
	prefixSet := false
	fs.Visit(func(f *flag.Flag) {
		if f.Name == "prefix" {
			prefixSet = true
		}
	})
	usage := func(format string, a ...any) int {
		fmt.Fprintf(stderr, "lockfloor: "+format+"\n%s\n", append(a, usageString)...)
		return exitUsage
	}
	if fs.NArg() > 0 {
		// A DSN or URL with blanks left unquoted arrives split: its password may be
		// among them (red-team rt44f F3).
		return usage("unexpected arguments %q (a DSN with blanks must be quoted as one argument)", secret.Args(fs.Args(), *dsnFlag, *addrFlag))
	}
	// -dsn-env/-dsn-file, -addr-env/-addr-file: the secret off the command line
	// (red-team rt41b F1); the messages never show the value.
	if *dsnFile == "-" && *addrFile == "-" {
		return usage("-dsn-file and -addr-file cannot both read standard input")
	}
	dsnValue, err := secret.Source{Flag: "dsn", Value: *dsnFlag, Env: *dsnEnv, File: *dsnFile}.Read(os.Getenv, os.Stdin)
	if err != nil {
		return usage("%s", err)
	}
	addrValue, err := secret.Source{Flag: "addr", Value: *addrFlag, Env: *addrEnv, File: *addrFile}.Read(os.Getenv, os.Stdin)
	if err != nil {
		return usage("%s", err)
	}
	dsn, addr := &dsnValue, &addrValue
	if modes := btoi(*show) + btoi(*raiseTo != "") + btoi(*retire) + btoi(*failover); modes != 1 {
		return usage("give exactly one of -show, -raise N, -retire and -failover")
	}
	marginSet := false
	fs.Visit(func(f *flag.Flag) { marginSet = marginSet || f.Name == "margin" })
	var margin uint64
	if marginSet {
		if !*failover {
			return usage("-margin goes with -failover")
		}
		n, err := strconv.ParseUint(*marginArg, 10, 64)
		if err != nil {
			return usage("-margin %q is not a number of tokens", *marginArg)
		}
		margin = n
	}
	if lower.set && !*failover {
		return usage("-at-least goes with -failover")
	}
	if *live && !*show && !*failover {
		return usage("-live is valid only with -show or -failover")
	}
	var min uint64
	if *raiseTo != "" {
		n, err := strconv.ParseUint(*raiseTo, 10, 64)
		if err != nil {
			return usage("-raise %q is not a token (a decimal number)", *raiseTo)
		}
		min = n
	}
	pw := append(secret.Passwords(*dsn), secret.Passwords(*addr)...)
	fail := func(what string, err error) int {
		fmt.Fprintf(stderr, "lockfloor: %s: %s\n", what, secret.Redact(err.Error(), pw...))
		return exitFailed
	}
	ctx, cancel := context.WithTimeout(ctx, *timeout)
	defer cancel()

	var floor lockclient.FloorRaiser
	switch *kind {
	case "etcd":
		if *endpoints == "" || *addr != "" || *dsn != "" || *table != "" {
			return usage("-backend etcd takes -endpoints [-prefix], not -addr, -dsn or -table")
		}
		if prefixSet && *prefix == "" {
			return usage("-backend etcd: -prefix must not be empty (etcdlock.WithPrefix refuses the empty prefix); leave -prefix out for the default")
		}
		var closeFn func()
		floor, closeFn, err = openEtcd(strings.Split(*endpoints, ","), *prefix, prefixSet)
		if err != nil {
			return fail("etcd", err)
		}
		defer closeFn()
	case "redis":
		if *addr == "" || *endpoints != "" || *dsn != "" || *table != "" {
			return usage("-backend redis takes -addr [-prefix], not -endpoints, -dsn or -table")
		}
		o, addrErr := redisOptions(*addr)
		if errors.Is(addrErr, errAddrURL) {
			return fail("redis", addrErr) // as go-redis refusing the URL always was (exit 1)
		} else if addrErr != nil {
			return usage("%s", addrErr) // not host:port (red-team rt45e F1)
		}
		var closeFn func()
		floor, closeFn, err = openRedis(o, *prefix, prefixSet)
		if err != nil {
			return fail("redis", err)
		}
		defer closeFn()
	case "postgres", "postgresql", "pg", "mysql", "mariadb":
		if *dsn == "" || *endpoints != "" || *addr != "" || prefixSet {
			return usage("-backend %s takes -dsn [-table], not -endpoints, -addr or -prefix", *kind)
		}
		var closeFn func()
		floor, closeFn, err = openSQL(*kind, *dsn, *table)
		if err != nil {
			return fail(*kind, err)
		}
		defer closeFn()
		if !marginSet {
			margin = lockclient.DefaultFailoverMargin // the lease table may have failed over with the database
		}
	default:
		return usage("-backend must be etcd, redis, postgres or mysql")
	}
	if *retire {
		r, ok := floor.(lockclient.Retirer)
		if !ok {
			return fail("retire", fmt.Errorf("-backend %s: %w", *kind, lockclient.ErrNoRetire))
		}
		last, err := r.Retire(ctx)
		if err != nil {
			return fail("retire", err)
		}
		fmt.Fprintln(stdout, last)
		return exitOK
	}
	var last uint64
	if *failover {
		if last, err = lockclient.AdvanceFloorAbove(ctx, floor, lower.n, margin); err != nil {
			return fail("failover", err)
		}
	} else {
		if *raiseTo != "" {
			if err := floor.RaiseFloor(ctx, min); err != nil {
				return fail("raise", err)
			}
		}
		if last, err = floor.LastToken(ctx); err != nil {
			return fail("last token", err)
		}
	}
	if *live {
		// Read after the answer: a retirement is never undone, so a service not retired
		// now was not retired when it answered.
		rr, ok := floor.(lockclient.RetirementReader)
		if !ok {
			fmt.Fprintf(stderr, "lockfloor: -live: -backend %s cannot tell whether the lock service is retired (no lockclient.RetirementReader); refusing to show its last token\n", *kind)
			return exitFailed
		}
		retiredLast, retired, err := rr.Retired(ctx)
		if err != nil {
			return fail("retired", err)
		}
		if retired {
			fmt.Fprintf(stderr, "lockfloor: the lock service is retired (its last token %d): point the failover hook's FENCEDSQL_LOCKFLOOR_ARGS at the service the application uses\n", retiredLast)
			return exitFailed
		}
	}
	fmt.Fprintln(stdout, last)
	return exitOK
}

func btoi(b bool) int {
	if b {
		return 1
	}
	return 0
}

func openEtcd(endpoints []string, prefix string, prefixSet bool) (lockclient.FloorRaiser, func(), error) {
	cli, err := clientv3.New(clientv3.Config{Endpoints: endpoints, DialTimeout: 5 * time.Second, Logger: zap.NewNop()})
	if err != nil {
		return nil, nil, err
	}
	var opts []etcdlock.Option
	if prefixSet {
		opts = append(opts, etcdlock.WithPrefix(prefix))
	}
	b := etcdlock.New(cli, opts...)
	if err := b.CheckConfig(); err != nil {
		cli.Close()
		return nil, nil, err
	}
	return b, func() { cli.Close() }, nil
}

// openRedis opens the redislock backend over o (redisOptions: -addr read and checked).
func openRedis(o *redis.Options, prefix string, prefixSet bool) (lockclient.FloorRaiser, func(), error) {
	o.MaxRetries, o.ContextTimeoutEnabled, o.DialTimeout = -1, true, 5*time.Second
	rdb := redis.NewClient(o)
	var opts []redislock.Option
	if prefixSet { // "" included: redislock.WithPrefix("") is the empty prefix
		opts = append(opts, redislock.WithPrefix(prefix))
	}
	b := redislock.New(rdb, opts...)
	if err := b.CheckConfig(); err != nil {
		rdb.Close()
		return nil, nil, err
	}
	return b, func() { rdb.Close() }, nil
}

func openSQL(kind, dsn, table string) (lockclient.FloorRaiser, func(), error) {
	driver, dialect := "pgx", sqllock.Postgres
	if kind == "mysql" || kind == "mariadb" {
		driver, dialect = "mysql", sqllock.MySQL
	}
	db, err := sql.Open(driver, dsn)
	if err != nil {
		return nil, nil, err
	}
	opts := []sqllock.Option{sqllock.WithDialect(dialect)}
	if table != "" {
		opts = append(opts, sqllock.WithTable(table))
	}
	b, err := sqllock.New(db, opts...)
	if err != nil {
		db.Close()
		return nil, nil, err
	}
	f, ok := any(b).(lockclient.FloorRaiser)
	if !ok {
		db.Close()
		return nil, nil, fmt.Errorf("this build's sqllock backend: %w", lockclient.ErrNoFloor)
	}
	return f, func() { db.Close() }, nil
}
