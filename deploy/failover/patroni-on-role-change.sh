#!/usr/bin/env bash
#
# deploy/failover/patroni-on-role-change.sh - Patroni callback: when this node becomes
# the primary, raise the guarded database's token floor on it (raise-floor.sh).
#
# patroni.yml:
#
#     postgresql:
#       callbacks:
#         on_role_change: /usr/local/lib/fencedsql/patroni-on-role-change.sh
#
# Patroni calls it as `SCRIPT ACTION ROLE CLUSTER`; only the roles of a primary
# (primary, master, promoted) act, every other call exits 0. The DSN of the local node
# is FENCEDSQL_FLOOR_DSN (set it in the environment Patroni runs with, e.g. the
# systemd unit's EnvironmentFile), e.g.
#
#     FENCEDSQL_FLOOR_DSN=postgres://fencedsql_owner:…@127.0.0.1:5432/shop?sslmode=disable
#
# plus raise-floor.sh's variables (FENCEDSQL_LOCKFLOOR_ARGS, …). Several databases:
# FENCEDSQL_FLOOR_DSN holds one DSN, so call raise-floor.sh once per database instead.
# Patroni only logs a callback's failure: its exit status 1 and the syslog line
# (tag fencedsql-floor) are what to alert on.
#
# Patroni calls on_role_change without waiting for the promotion (`pg_ctl promote`
# without -w, then the callback, then its own wait): the node may still be in
# recovery, replaying what it received — longest exactly when it lagged. The raise
# refuses a node in recovery and changes nothing, so it is retried for up to
# FENCEDSQL_PROMOTE_WAIT seconds (default 60; red-team rt41b F3). Patroni runs the
# callback asynchronously and kills it when the next callback starts: a hook killed
# that way prints no "NOT raised" line; alert on the floor too (README).
set -euo pipefail

action=${1:-} role=${2:-} cluster=${3:-}
case $role in
primary | master | promoted) ;;
*) exit 0 ;;
esac
if [[ -z ${FENCEDSQL_FLOOR_DSN:-} ]]; then
	printf 'patroni-on-role-change: FENCEDSQL_FLOOR_DSN is not set: the token floor was NOT raised on %s (%s %s)\n' \
		"$cluster" "$action" "$role" >&2
	exit 1
fi
# raise-floor.sh lives next to this script's real file, wherever the manager calls it
# from (a symbolic link in its configuration directory: red-team rt41b F2); it is run
# with bash, so it needs no executable bit. Missing or unreadable: fail the documented
# way (exit 1, "NOT raised" on stderr and in syslog, tag fencedsql-floor).
self=$(readlink -f -- "${BASH_SOURCE[0]}" 2>/dev/null || true)
[[ -n $self ]] || self=${BASH_SOURCE[0]}
helper="$(cd -P -- "$(dirname -- "$self")" 2>/dev/null && pwd)/raise-floor.sh"
if [[ ! -f $helper || ! -r $helper ]]; then
	msg="${0##*/}: $helper is missing or unreadable: the token floor was NOT raised"
	printf '%s\n' "$msg" >&2
	if command -v logger >/dev/null 2>&1; then
		logger -t fencedsql-floor -- "$msg" 2>/dev/null || true
	fi
	exit 1
fi
wait=${FENCEDSQL_PROMOTE_WAIT:-60}
if [[ ! $wait =~ ^(0|[1-9][0-9]{0,5})$ ]]; then
	printf 'patroni-on-role-change: FENCEDSQL_PROMOTE_WAIT=%q is not a number of seconds: the token floor was NOT raised on %s\n' "$wait" "$cluster" >&2
	exit 1
fi
# The DSN stays in the environment (FENCEDSQL_FLOOR_DSN), out of every argv.
FENCEDSQL_FLOOR_WAIT=$wait exec bash "$helper" postgres
