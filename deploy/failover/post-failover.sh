#!/usr/bin/env bash
#
# deploy/failover/post-failover.sh - generic post-failover hook (orchestrator, MHA, or
# any script that promotes a replica): raise the guarded database's token floor on the
# new primary (raise-floor.sh).
#
#     post-failover.sh HOST PORT                          orchestrator and others
#     post-failover.sh --command=start --new_master_host=HOST --new_master_port=PORT …
#                                                         MHA master_ip_failover_script
#
# orchestrator (orchestrator.conf.json):
#
#     "PostMasterFailoverProcesses": ["/usr/local/lib/fencedsql/post-failover.sh {successorHost} {successorPort}"]
#
# MHA: call it from master_ip_failover_script on --command=start, BEFORE the virtual
# IP moves to the new master (the application cannot reach it before the floor is up);
# other --command values exit 0. MHA turns read_only off only after the script: run
# `STOP SLAVE; RESET SLAVE ALL` on the new master first and call this with
# FENCEDSQL_FLOOR_ALLOW_READ_ONLY=1, which raises on a read_only server that has no
# replication configured (a configured replica, even stopped, is still refused), or
# turn read_only off first (README, "MHA").
#
# The DSN comes from FENCEDSQL_FLOOR_DSN_TEMPLATE, where {host} and {port} are replaced:
#
#     FENCEDSQL_FLOOR_DSN_TEMPLATE='fencedsql_owner:…@tcp({host}:{port})/shop'
#     FENCEDSQL_FLOOR_DRIVER=mysql        (default; postgres for a PostgreSQL cluster)
#
# plus raise-floor.sh's variables. Exit status: raise-floor.sh's (1: NOT raised, or
# raised with transactions still open across it; the message says which).
set -euo pipefail

host="" port="" command=start
for a in "$@"; do
	case $a in
	--command=*) command=${a#*=} ;;
	--new_master_host=*) host=${a#*=} ;;
	--new_master_port=*) port=${a#*=} ;;
	--*) ;; # MHA passes more options
	*)
		if [[ -z $host ]]; then
			host=$a
		elif [[ -z $port ]]; then
			port=$a
		fi
		;;
	esac
done
[[ $command == start ]] || exit 0
if [[ -z $host || -z $port || -z ${FENCEDSQL_FLOOR_DSN_TEMPLATE:-} ]]; then
	printf 'post-failover: need the new primary (host %q, port %q) and FENCEDSQL_FLOOR_DSN_TEMPLATE: the token floor was NOT raised\n' \
		"$host" "$port" >&2
	exit 1
fi
if [[ ! $port =~ ^[0-9]+$ ]]; then
	printf 'post-failover: port %q is not a number: the token floor was NOT raised\n' "$port" >&2
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
dsn=${FENCEDSQL_FLOOR_DSN_TEMPLATE//\{host\}/$host}
dsn=${dsn//\{port\}/$port}
# The DSN goes in the environment, out of every argv (ps: red-team rt41b F1).
FENCEDSQL_FLOOR_DSN=$dsn exec bash "$helper" "${FENCEDSQL_FLOOR_DRIVER:-mysql}"
