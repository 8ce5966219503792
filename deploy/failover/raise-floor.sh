#!/usr/bin/env bash
#
# deploy/failover/raise-floor.sh - raise the guarded database's token floor to the
# lock service's last token + 1, on the database's new primary, after a failover.
#
#     FENCEDSQL_FLOOR_DSN=DSN raise-floor.sh DRIVER
#     raise-floor.sh DRIVER DSN      (the DSN in argv: only when it holds no password)
#
# DRIVER is postgres or mysql (MySQL/MariaDB); DSN is the plain driver's DSN of the new
# primary's guarded database (see fencedsql-schema), for an account that may write the
# floor table (the guards' owner). A DSN with a password belongs in the environment
# (FENCEDSQL_FLOOR_DSN), never in argv: every local user reads a process's command
# line (ps); the script hands it to fencedsql-schema the same way (-dsn-env), never on
# its command line (red-team rt41b F1). On PostgreSQL a password file (PGPASSFILE,
# ~/.pgpass) or PGPASSWORD keeps the password out of the DSN altogether. On MySQL/MariaDB the floor lives in each database
# that holds guarded tables: run this once per such database (or with a DSN that names
# no database, for an account that sees only this application's databases).
#
# Environment:
#   FENCEDSQL_LOCKFLOOR        the lockfloor command (default: lockfloor in PATH)
#   FENCEDSQL_LOCKFLOOR_ARGS   its arguments naming the lock service, split on spaces
#                              (e.g. "-backend etcd -endpoints https://etcd1:2379");
#                              a DSN or redis:// address with a password goes through
#                              -dsn-env NAME / -addr-env NAME (or -dsn-file/-addr-file),
#                              e.g. "-backend postgres -dsn-env LOCK_DSN" with LOCK_DSN
#                              exported, never as -dsn/-addr (they land in argv).
#                              Only the service: a flag the hook passes itself
#                              (-failover, -live, -margin) given here too is refused
#                              by lockfloor (each flag once, -at-least excepted) and
#                              the floor is NOT raised (red-team rt62c F2)
#   FENCEDSQL_SCHEMA           the fencedsql-schema command (default: in PATH)
#   FENCEDSQL_FLOOR_ATTEMPTS   attempts of each step, 1s apart (default 5): the new
#                              primary may take a moment to accept writes
#   FENCEDSQL_FLOOR_WAIT       seconds (default 0) during which the raise is retried,
#                              1s apart, beyond FENCEDSQL_FLOOR_ATTEMPTS: a node still
#                              finishing its promotion (in recovery) refuses the raise
#                              and changes nothing (patroni-on-role-change.sh sets it)
#   FENCEDSQL_FAILOVER_TOKEN_MARGIN     lockfloor -failover's -margin: how far the lock
#                              service's own floor jumps above its last token before the
#                              database floor is raised above it (default: lockfloor's,
#                              2^32 for the SQL backends — sqllock's lease table may have
#                              failed over with the database and lost its newest grants,
#                              red-team rt42f F1 — and 0 for etcd and Redis). Set 0 for
#                              sqllock only when its lease table is in a database that
#                              does not fail over with this one (or is restored with it),
#                              or whose grants commit on a synchronous standby
#   FENCEDSQL_FLOOR_ALLOW_READ_ONLY=1   MySQL/MariaDB: raise on (and read -max-token
#                              from) a server that is still read_only provided no
#                              replication is configured on it (fencedsql-schema
#                              -allow-read-only; MHA, see README)
#   FENCEDSQL_FLOOR_AT_LEAST   the answer of the last lock-service switch (README,
#                              "Switching or rebuilding the lock service": the new
#                              service's -show after its -raise), recorded here when the
#                              switch was made: lockfloor's -at-least. A restore or an
#                              asynchronous failover can forget that raise of sqllock's
#                              token source (its lease table in the failed-over
#                              database); nothing left in the database may show it
#                              (red-team rt59c F2). Unset: no recorded answer
#   FENCEDSQL_FLOOR_MAX_TOKEN=0   skip the second step (below): only for a DSN that names
#                              no database (MySQL/MariaDB: -max-token needs the
#                              registry's database) or when sqllock's lease table is not
#                              in a database that fails over or is restored; default 1
#
# It runs `lockfloor ARGS -failover -live [-margin M] [-at-least RECORDED]` (the last
# token the lock service issued, or its floor, after raising the service's own floor to
# max(that, RECORDED) + the margin: the tokens a lease table that failed over with the
# database forgot are jumped over, and never granted again; it fails for a retired
# service: ARGS must name the one the application uses) and `fencedsql-schema -driver
# DRIVER -dsn-env … -raise-floor TOKEN+1`, which raises every floor table the installed
# guards read and prints them (logged here). Every lease granted before then is refused
# by the new primary (ErrBelowFloor). Then, the database's own evidence (red-team rt59c
# F2): `fencedsql-schema -max-token` (the highest token the promoted or restored
# database holds: rows, tombstones, floors; it scans the guarded tables, which is why
# it runs after the first raise, not before it), `lockfloor -failover -at-least MAX`
# again and the raise again: a token source that went back below tokens the database
# kept (a forgotten switch raise: rows of the previous service, or written under the
# raise) is lifted above them by the margin, so new holders are not fenced on every
# row and stale ones are refused. A raise that no row carries is known only from
# FENCEDSQL_FLOOR_AT_LEAST. The floors only go up, so running it twice, or late, is
# safe (each lockfloor -failover with a margin jumps again — twice per run: the leases
# granted since the last jump are refused too, and their holders acquire again).
#
# Exit status: 0 when the floor was raised; 1 when it was not (the lock service could
# not be read, its answer is not a token, the database refused, or no installed guard
# reads a floor in the DSN's database: a wrong DSN, or guards not installed: "NOT
# raised"), or when it was raised but transactions open across the raise had not
# ended within fencedsql-schema's -timeout ("WAS raised … have not ended"), or when it
# was raised from the lock service but the second step failed ("WAS raised … not
# checked against the database's highest token"), with the
# reason on stderr and, when `logger` exists, in syslog (tag fencedsql-floor). A failed raise
# leaves the new primary accepting writes from holders whose lease predates the
# failover: page someone.
set -euo pipefail

log() {
	printf 'raise-floor: %s\n' "$*" >&2
	if command -v logger >/dev/null 2>&1; then
		logger -t fencedsql-floor -- "$*" 2>/dev/null || true
	fi
}

die() {
	log "FAILED: $* — the token floor was NOT raised; stale lock holders can still write to the new primary"
	exit 1
}

if [[ $# -lt 1 || $# -gt 2 || -z $1 ]] || { [[ $# -eq 2 ]] && [[ -z $2 ]]; }; then
	printf 'usage: FENCEDSQL_FLOOR_DSN=DSN %s postgres|mysql   (or: %s postgres|mysql DSN)\n' "${0##*/}" "${0##*/}" >&2
	exit 2
fi
driver=$1 dsn=${2:-${FENCEDSQL_FLOOR_DSN:-}}
[[ -n $dsn ]] || die "no DSN: set FENCEDSQL_FLOOR_DSN"
case $driver in
postgres | mysql) ;;
*) die "unknown driver '$driver' (want postgres or mysql)" ;;
esac

lockfloor=${FENCEDSQL_LOCKFLOOR:-lockfloor}
schema=${FENCEDSQL_SCHEMA:-fencedsql-schema}
attempts=${FENCEDSQL_FLOOR_ATTEMPTS:-5}
[[ $attempts =~ ^[1-9][0-9]*$ ]] || die "FENCEDSQL_FLOOR_ATTEMPTS='$attempts' is not a positive number"
wait=${FENCEDSQL_FLOOR_WAIT:-0}
[[ $wait =~ ^(0|[1-9][0-9]{0,5})$ ]] || die "FENCEDSQL_FLOOR_WAIT='$wait' is not a number of seconds (0 to 999999)"
schemaargs=()
case ${FENCEDSQL_FLOOR_ALLOW_READ_ONLY:-} in
'' | 0) ;;
1) schemaargs=(-allow-read-only) ;;
*) die "FENCEDSQL_FLOOR_ALLOW_READ_ONLY='$FENCEDSQL_FLOOR_ALLOW_READ_ONLY' is not 0 or 1" ;;
esac
# shellcheck disable=SC2206 # splitting the arguments on spaces is the contract
lockargs=(${FENCEDSQL_LOCKFLOOR_ARGS:-})
atleastargs=()
if [[ -n ${FENCEDSQL_FLOOR_AT_LEAST:-} ]]; then
	[[ $FENCEDSQL_FLOOR_AT_LEAST =~ ^(0|[1-9][0-9]{0,18})$ ]] ||
		die "FENCEDSQL_FLOOR_AT_LEAST='$FENCEDSQL_FLOOR_AT_LEAST' is not a token (the recorded answer of the last lock-service switch)"
	atleastargs=(-at-least "$FENCEDSQL_FLOOR_AT_LEAST")
fi
case ${FENCEDSQL_FLOOR_MAX_TOKEN:-1} in
0 | 1) ;;
*) die "FENCEDSQL_FLOOR_MAX_TOKEN='$FENCEDSQL_FLOOR_MAX_TOKEN' is not 0 or 1" ;;
esac
marginargs=()
if [[ -n ${FENCEDSQL_FAILOVER_TOKEN_MARGIN:-} ]]; then
	[[ $FENCEDSQL_FAILOVER_TOKEN_MARGIN =~ ^(0|[1-9][0-9]{0,18})$ ]] ||
		die "FENCEDSQL_FAILOVER_TOKEN_MARGIN='$FENCEDSQL_FAILOVER_TOKEN_MARGIN' is not a number of tokens"
	marginargs=(-margin "$FENCEDSQL_FAILOVER_TOKEN_MARGIN")
fi

# retry CMD...: run CMD up to $attempts times, 1s apart, and beyond that until
# $retry_for seconds have passed since the first run; stdout of the last run.
retry_for=0
retry() {
	local i rc=0 start=$SECONDS
	for ((i = 1; ; i++)); do
		if "$@"; then
			return 0
		else
			rc=$?
		fi
		((i < attempts || SECONDS - start < retry_for)) || break
		sleep 1
	done
	return "$rc"
}

# Every token a backend issues is at most 2^63-1, and the database floor takes at most
# 2^63-1: accept every token up to 2^63-2 (9223372036854775806), whose floor token+1
# bash's signed 64-bit arithmetic computes exactly. A 19-digit token is compared with
# that bound as a string of the same length (digits collate in order in every locale).
max=9223372036854775806
is_token() {
	[[ $1 =~ ^(0|[1-9][0-9]{0,18})$ ]] && ! { ((${#1} == 19)) && [[ $1 > $max ]]; }
}

# lock_token [-at-least N]: lockfloor -failover -live's answer, checked; exits on failure
# (with $1 the message's prefix: "" for the first step, the "WAS raised" note after).
lock_token() {
	local pre=$1 token
	shift
	token=$(retry "$lockfloor" "${lockargs[@]}" -failover -live "${marginargs[@]}" "${atleastargs[@]}" "$@") ||
		fail_with "$pre" "'$lockfloor -failover -live' failed (exit $?): the lock service could not be read or raised, or is retired (then point FENCEDSQL_LOCKFLOOR_ARGS at the service the application uses)"
	token=${token//[[:space:]]/}
	is_token "$token" ||
		fail_with "$pre" "'$lockfloor -failover -live' printed '$token', not a token the floor can be raised above (0 to $max)"
	printf '%s\n' "$token"
}

# fail_with PRE MSG: die (NOT raised) when PRE is empty, else report the floor that
# WAS raised (PRE) and what failed after it.
fail_with() {
	if [[ -z $1 ]]; then
		die "$2"
	fi
	log "FAILED: $1, but $2 — the lock service may still grant tokens below ones the database holds: fix it and run this again"
	exit 1
}

# raise_to PRE FLOOR: fencedsql-schema -raise-floor FLOOR; exits on failure (PRE as in
# fail_with); sets $out. The DSN holds a password: never echo it, never put it in argv
# (ps): fencedsql-schema reads it from its environment (-dsn-env) and masks it in its
# errors. Its output: the floor in force, then one line per floor table it raised. A
# node still in recovery refuses the raise (nothing changed): retried for
# FENCEDSQL_FLOOR_WAIT seconds.
raise_to() {
	local pre=$1 floor=$2 rc=0
	retry_for=$wait
	out=$(retry "$schema" -driver "$driver" -dsn-env FENCEDSQL_FLOOR_SCHEMA_DSN "${schemaargs[@]}" -raise-floor "$floor") || rc=$?
	retry_for=0
	if ((rc == 3)); then
		# fencedsql-schema's exit 3 (ErrFloorUnsettled): the floor is raised, but transactions
		# open across the raise (named on stderr above) had not ended when it gave up.
		log "FAILED: the token floor WAS raised to $floor on the new $driver primary, but transactions open across the raise have not ended: writes they made under the old floor can still commit; end those sessions (named above), then run this again"
		exit 1
	elif ((rc != 0)); then
		fail_with "$pre" "'$schema -raise-floor $floor' failed (exit $rc) on the $driver primary"
	fi
}

export FENCEDSQL_FLOOR_SCHEMA_DSN=$dsn
token=$(lock_token "") || exit 1
floor=$((token + 1))
raise_to "" "$floor"
tables=$(printf '%s\n' "$out" | sed -n '2,$p' | tr '\n' ' ')
log "token floor raised to $floor (lock service's last token $token) on the new $driver primary: ${tables% }"
[[ ${FENCEDSQL_FLOOR_MAX_TOKEN:-1} == 1 ]] || exit 0

# The database's own evidence: the highest token the new primary holds. The lock
# service jumps the margin above it too, and the floor follows.
pre="the token floor WAS raised to $floor from the lock service, not checked against the database's highest token"
retry_for=$wait
dbmax=$(retry "$schema" -driver "$driver" -dsn-env FENCEDSQL_FLOOR_SCHEMA_DSN "${schemaargs[@]}" -max-token) ||
	fail_with "$pre" "'$schema -max-token' failed (exit $?) on the $driver primary (a DSN naming no database: run this once per database, or set FENCEDSQL_FLOOR_MAX_TOKEN=0, README)"
retry_for=0
dbmax=${dbmax//[[:space:]]/}
is_token "$dbmax" || fail_with "$pre" "'$schema -max-token' printed '$dbmax', not a token"
token2=$(lock_token "$pre" -at-least "$dbmax") || exit 1
floor2=$((token2 + 1))
raise_to "$pre" "$floor2"
tables=$(printf '%s\n' "$out" | sed -n '2,$p' | tr '\n' ' ')
log "token floor raised to $floor2 (lock service's last token $token2, at least the database's highest token $dbmax + the margin) on the new $driver primary: ${tables% }"
