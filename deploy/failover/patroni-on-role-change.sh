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
exec "$(dirname "${BASH_SOURCE[0]}")/raise-floor.sh" postgres "$FENCEDSQL_FLOOR_DSN"
