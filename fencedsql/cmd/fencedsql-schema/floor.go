package main

import (
	"context"
	"database/sql"
	"errors"
	"fmt"
	"io"
	"strings"
	"time"

	"github.com/fencedsql/fencedsql/fencedsql/schema"

	"github.com/fencedsql/fencedsql/internal/secret"
)

// The token floor (schema.RaiseTokenFloor, MaxToken): the database's side of
// switching, rebuilding or restoring a lock service, and of a failover (README,
// "Replication and failover"; deploy/failover runs -raise-floor from the failover
// manager's hook).
//
//	-max-token        prints the highest token the database has accepted, a bare number
//	                  on stdout: raise the new lock service's floor to at least this
//	                  (lockfloor -raise N) before the application uses it. It reads the
//	                  token column of every table in -tables, or without -tables of
//	                  every table the database records as guarded (the registries and
//	                  the tables carrying the guard's triggers: schema.Recorded), each
//	                  by its exact schema and name (PostgreSQL: every same-named table
//	                  of every schema with the token column), the tombstones and the
//	                  floor, in one read-only snapshot; it scans the tables. With
//	                  nothing recorded, or a registry row naming a table that is gone,
//	                  it fails (exit 1) rather than print a number that is too low:
//	                  give -tables. It fails on a standby or replica
//	                  (schema.ErrNotPrimary) and, on PostgreSQL, for a role that
//	                  row-level security would filter: run it on the primary as the
//	                  tables' owner, a superuser or a BYPASSRLS role.
//	-raise-floor N    raises to N the floor every installed guard reads (the floor
//	                  tables schema.TokenFloors lists: on PostgreSQL every schema of
//	                  the database whose guards read one; on MySQL/MariaDB the DSN's
//	                  database and every other database a table of its registry is
//	                  qualified with, or every database whose guards the account can
//	                  see when the DSN names none) and prints the floor now in force, a
//	                  bare number on the first line (the lowest of them), then one line
//	                  per floor table, "<schema>.fencedsql_floor: <floor>". Where no
//	                  installed guard reads a floor it raises nothing, says so and
//	                  exits 1 (schema.ErrNoFloorGuard). Where a table the database
//	                  records as guarded (or a PostgreSQL child or partition of one) is
//	                  not judged by a guard reading a floor it raised (no guard; a
//	                  registered table of another database whose guards the account
//	                  cannot see; of an ATTACHed SQLite database), it raises the
//	                  others, names those and exits 1 (schema.ErrFloorUncovered). At a failover: N is the lock
//	                  service's LastToken + 1, so every lease granted before is refused
//	                  on the new primary. It returns once no transaction open across
//	                  the raise can still commit a write judged under the old floor;
//	                  when -timeout ends first it exits 3 naming their sessions
//	                  (schema.ErrFloorUnsettled: the floor is raised by then, and
//	                  running it again waits for them again). On
//	                  MySQL/MariaDB a raise blocked by an open guarded writer past the
//	                  server's lock wait timeout exits 1 naming the connections
//	                  (schema.ErrFloorBlocked: nothing raised).
//	-allow-read-only  with -raise-floor or -max-token on MySQL/MariaDB: also raise on
//	                  (read) a server that is still read_only, provided no replication
//	                  is configured on it (schema.RaiseTokenFloorReadOnly,
//	                  MaxTokenReadOnly): MHA's master_ip_failover_script
//	                  --command=start runs before MHA turns read_only off (red-team
//	                  rt41b F4), and the hook reads -max-token there too (rt59c F2). A
//	                  replica, even one whose threads are stopped, is still refused.

// floorCommand runs -max-token or -raise-floor; it returns the exit status.
func floorCommand(ctx context.Context, be backend, dsn, tables, tokCol, verCol string, max bool, floor uint64, readOnlyOK bool, timeout time.Duration, stdout, stderr io.Writer) int {
	pw := secret.Passwords(dsn)
	fail := func(what string, err error) int {
		fmt.Fprintf(stderr, "fencedsql-schema: %s: %s\n", what, secret.Redact(err.Error(), pw...))
		return exitProblems
	}
	ctx, cancel := context.WithTimeout(ctx, timeout)
	defer cancel()
	db, err := sql.Open(be.driver, dsn)
	if err != nil {
		return fail("open", err)
	}
	defer db.Close()
	if max {
		var specs []schema.GuardSpec
		for _, t := range strings.Split(tables, ",") {
			if t = strings.TrimSpace(t); t != "" {
				specs = append(specs, schema.GuardSpec{Table: t, TokenColumn: tokCol, VersionColumn: verCol})
			}
		}
		read := schema.MaxToken
		if readOnlyOK {
			read = schema.MaxTokenReadOnly
		}
		m, err := read(ctx, db, be.dialect, specs...)
		if err != nil {
			return fail("max-token", err)
		}
		fmt.Fprintln(stdout, m)
		return exitOK
	}
	raise := schema.RaiseTokenFloor
	if readOnlyOK {
		raise = schema.RaiseTokenFloorReadOnly
	}
	if err := raise(ctx, db, be.dialect, floor); err != nil {
		code := fail("raise-floor", err)
		if errors.Is(err, schema.ErrFloorUnsettled) && !errors.Is(err, schema.ErrFloorBlocked) {
			code = exitUnsettled
		}
		return code
	}
	floors, err := schema.TokenFloors(ctx, db, be.dialect)
	if err != nil {
		return fail("raise-floor", err)
	}
	now := floors[0].Floor
	for _, f := range floors {
		now = min(now, f.Floor)
	}
	fmt.Fprintln(stdout, now)
	for _, f := range floors {
		fmt.Fprintf(stdout, "%s: %d\n", f.Table, f.Floor)
	}
	return exitOK
}
