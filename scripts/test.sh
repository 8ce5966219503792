#!/usr/bin/env bash
#
# scripts/test.sh - fencedsql's test command (README and CI run it).
#
# Starts throwaway PostgreSQL, MariaDB and Redis servers (scripts/servers.sh,
# installing them with apt-get first when run as root and they are missing),
# sets FENCEDSQL_REQUIRE_SERVERS=1 so that no server test may skip, then runs
#
#     go vet PACKAGES
#     go test -race -count=1 [ARGS...] PACKAGES
#
# PACKAGES is ./... unless ARGS name packages themselves (an argument starting
# with ./ ../ / or the module path): those then replace ./... for both vet and
# test. Other ARGS are passed to go test, e.g.
#
#     bash scripts/test.sh -run Fencing -v ./fencedsql/...
#
# The exit status is go vet's if vet fails, else go test's. The servers are
# stopped and their files removed when this script exits.
set -euo pipefail

cd "$(dirname "${BASH_SOURCE[0]}")/.."

module=$(go list -m 2>/dev/null || echo github.com/fencedsql/fencedsql)
pkgs=()
args=()
for a in "$@"; do
	case $a in
	./* | ../* | /* | . | .. | "$module" | "$module"/*) pkgs+=("$a") ;;
	*) args+=("$a") ;;
	esac
done
[[ ${#pkgs[@]} -gt 0 ]] || pkgs=(./...)

echo "==> starting test servers"
# 2>&1: its progress lines stay in order with the rest of the output.
# shellcheck source=scripts/servers.sh
source scripts/servers.sh 2>&1
export FENCEDSQL_REQUIRE_SERVERS=1

echo "==> go vet ${pkgs[*]}"
go vet "${pkgs[@]}"

echo "==> go test -race -count=1 ${args[*]:+${args[*]} }${pkgs[*]}"
rc=0
go test -race -count=1 "${args[@]}" "${pkgs[@]}" || rc=$?
if [[ $rc -eq 0 ]]; then
	echo "==> tests passed"
else
	echo "==> tests FAILED (go test exit status $rc)"
fi
# Not exec: the EXIT trap set by servers.sh stops the servers.
exit "$rc"
