# shellcheck shell=bash
#
# scripts/servers.sh - throwaway PostgreSQL, MariaDB and Redis servers for
# fencedsql's tests and benchmarks.
#
# SOURCE this file, do not execute it:
#
#     source scripts/servers.sh
#     go test ./...                # tests now find the servers
#     fencedsql_servers_stop       # optional, see "Stopping" below
#
# What it does
#   * If a server's binaries are missing and we run as root, it runs
#     `apt-get update` once and `apt-get install postgresql mariadb-server
#     redis-server` (only the missing ones), non-interactively, with a
#     /usr/sbin/policy-rc.d that forbids apt from starting system services
#     (the previous policy-rc.d, if any, is put back afterwards). Not root and
#     binaries missing: a message is printed and that server is left out.
#   * The same for the test tools in FENCEDSQL_TOOLS (default: promtool, from
#     Debian's `prometheus` package, which deploy/'s tests use to run
#     `promtool test rules`): installed when missing and root, never started
#     (no Prometheus server runs; only the promtool binary is used).
#   * Starts each server in a fresh `mktemp -d` directory (its data, socket,
#     pid and log files all live there), listening on 127.0.0.1 only, on a
#     free port picked at random in 20000-31999, as an unprivileged user when
#     run as root (postgres / mysql / redis). Durability is switched off:
#     these servers are for tests only.
#   * Creates a superuser `fenced` with password `fenced` on PostgreSQL and
#     MariaDB (may CREATE/DROP DATABASE). MariaDB's anonymous accounts are
#     deleted so they cannot shadow it.
#   * Exports, for each server that came up:
#       FENCEDSQL_PG_DSN      postgres://fenced:...@127.0.0.1:PORT/postgres?sslmode=disable
#       FENCEDSQL_MYSQL_DSN   fenced:...@tcp(127.0.0.1:PORT)/?parseTime=true
#       FENCEDSQL_REDIS_ADDR  127.0.0.1:PORT
#     and, for the failover tests (internal/failover), which start and kill
#     their own PostgreSQL primary + streaming replica and MariaDB primary +
#     replica pairs (none of these runs until a failover test starts one):
#       FENCEDSQL_FAILOVER_DIR      an empty directory for their data dirs,
#                                   removed with the rest at stop (0711)
#       FENCEDSQL_PG_BIN            PostgreSQL's bin directory (initdb, postgres,
#                                   pg_basebackup), e.g. /usr/lib/postgresql/15/bin
#       FENCEDSQL_MYSQLD            the mariadbd binary
#       FENCEDSQL_MYSQL_INSTALL_DB  the mariadb-install-db script
#     Run as root, the tests run those servers as the users postgres and mysql.
#     A server that fails to start leaves its variable unset and prints the
#     tail of its log; sourcing never fails the caller because of that (the
#     tests then skip, or fail under FENCEDSQL_REQUIRE_SERVERS=1).
#   * Prints one line per server (address and version, never a password).
#
# Reusing servers
#   A variable that is already set in the environment when this file is
#   sourced (say FENCEDSQL_PG_DSN pointing at your own server, or exported by
#   a parent shell that sourced this file before) is kept and that server is
#   not started. Sourcing twice in the same shell stops the servers of the
#   first time and starts fresh ones.
#
# Stopping
#   fencedsql_servers_stop stops every server started here, removes the temp
#   directory and unsets the variables it exported. It keeps the exit status
#   ($?) it was called with, so it is safe in a trap. This file adds it to the
#   EXIT trap of the sourcing shell, in front of any EXIT trap already set
#   (which still runs). If you set your own EXIT trap AFTER sourcing this
#   file, call fencedsql_servers_stop from it yourself. In a non-interactive
#   shell, INT/TERM/HUP traps that only `exit` are also set when none exists,
#   so the EXIT trap runs on Ctrl-C or kill. Never `exec` the last command of
#   a script that sourced this: exec skips the EXIT trap and leaves the
#   servers running (the next sourcing cleans such leftovers up: directories
#   whose owning shell is gone are stopped and removed).
#
# Knobs (environment)
#   FENCEDSQL_SERVERS="postgres mariadb redis failover"  which servers to start
#                                               ("failover": only the variables above)
#   FENCEDSQL_TOOLS="promtool"                  which tools to install if missing
#   FENCEDSQL_SERVERS_NO_INSTALL=1              never run apt-get
#
# Works with and without `set -euo pipefail` in the caller; needs bash >= 4.3.

if [[ "${BASH_SOURCE[0]}" == "${0}" ]]; then
	echo "servers.sh: source this file (source scripts/servers.sh), do not execute it" >&2
	exit 2
fi

_fsql_log() { printf 'servers.sh: %s\n' "$*" >&2; }

# Wall clock in milliseconds.
_fsql_now_ms() {
	local t=${EPOCHREALTIME:-}
	if [[ -n $t ]]; then
		t=${t/,/.}
		printf '%s\n' "$((${t%.*} * 1000 + 10#${t#*.} / 1000))"
	else
		printf '%s\n' "$(($(date +%s) * 1000))"
	fi
}

_fsql_elapsed() { # start_ms -> "1.23s"
	local ms=$(($(_fsql_now_ms) - $1))
	printf '%d.%02ds' "$((ms / 1000))" "$((ms % 1000 / 10))"
}

# Print the last lines of a log file, indented.
_fsql_tail() {
	local f
	for f in "$@"; do
		[[ -s $f ]] || continue
		_fsql_log "---- last lines of $f"
		tail -n 25 -- "$f" | sed 's/^/    /' >&2 || true
	done
}

# Run a command as an unprivileged user when we are root, else as ourselves
# (used for initdb and pg_ctl, which refuse to run as root).
_fsql_as() {
	local user=$1
	shift
	if [[ $EUID -ne 0 || $user == root ]]; then
		"$@"
	elif command -v setpriv >/dev/null 2>&1; then
		setpriv --reuid="$user" --regid="$user" --init-groups -- "$@"
	elif command -v runuser >/dev/null 2>&1; then
		runuser -u "$user" -- "$@"
	else
		su -s /bin/sh "$user" -c "$(printf '%q ' "$@")"
	fi
}

# Give a directory to a user when we are root.
_fsql_give() { # user dir...
	local user=$1
	shift
	[[ $EUID -eq 0 ]] || return 0
	chown -R "$user:" "$@"
}

_fsql_user_exists() { id -u "$1" >/dev/null 2>&1; }

# True if something on this machine uses local TCP port $1 (any state).
_fsql_port_in_use() {
	local hex f
	printf -v hex ':%04X' "$1"
	for f in /proc/net/tcp /proc/net/tcp6; do
		[[ -r $f ]] || continue
		if awk -v p="$hex" 'NR > 1 && substr($2, length($2) - 4) == p { found = 1 } END { exit !found }' "$f"; then
			return 0
		fi
	done
	if [[ ! -r /proc/net/tcp ]]; then
		# No /proc: probe with a connect (bash /dev/tcp).
		(exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0
	fi
	return 1
}

# Print a free port in 20000-31999 (below Linux's ephemeral range) that this
# run has not handed out yet.
_fsql_free_port() {
	local i port
	for ((i = 0; i < 200; i++)); do
		port=$((20000 + (RANDOM * 32768 + RANDOM) % 12000))
		[[ " ${_FSQL_PORTS:-} " == *" $port "* ]] && continue
		_fsql_port_in_use "$port" && continue
		_FSQL_PORTS="${_FSQL_PORTS:-} $port"
		printf '%s\n' "$port"
		return 0
	done
	return 1
}

# Is $1 a live (non-zombie) process whose command name is $2?
_fsql_pid_is() {
	local pid=$1 name=$2 comm state
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	[[ -r /proc/$pid/comm ]] || return 1
	comm=$(cat "/proc/$pid/comm" 2>/dev/null) || return 1
	[[ $comm == "$name" ]] || return 1
	state=$(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) || return 1
	[[ $state != Z && $state != X ]]
}

# Start "$@" in the background in directory $1 with output appended to $3
# and its pid written to $2. The double subshell keeps it out of the
# caller's job table; exec keeps the recorded pid the server's own.
_fsql_launch() {
	local dir=$1 pidfile=$2 out=$3
	shift 3
	(
		(cd "$dir" && exec "$@") </dev/null >>"$out" 2>&1 &
		echo $! >"$pidfile"
	)
}

# Is pid $1 the server $2, or still the subshell/wrapper about to exec it?
# (One read of /proc: the name changes under us while it execs.)
_fsql_starting() {
	local pid=$1 comm state
	[[ $pid =~ ^[0-9]+$ ]] || return 1
	read -r _ comm state _ <"/proc/$pid/stat" 2>/dev/null || return 1
	[[ $state != Z && $state != X ]] || return 1
	case $comm in
	"($2)" | "(bash)" | "(setpriv)") return 0 ;;
	esac
	return 1
}

# The servers are orphans, reaped by pid 1; give it up to 3s to do so, so
# that no <defunct> entry is left behind when we return.
_fsql_await_reap() {
	local pid=$1 i
	for ((i = 0; i < 30; i++)); do
		[[ $(awk '{ print $3 }' "/proc/$pid/stat" 2>/dev/null) == Z ]] || return 0
		sleep 0.1
	done
}

# Stop process $1 (expected command name $2): TERM, wait up to $3 seconds, KILL.
_fsql_kill() {
	local pid=$1 name=$2 wait_s=${3:-10} i
	_fsql_pid_is "$pid" "$name" || return 0
	kill -TERM "$pid" 2>/dev/null || true
	for ((i = 0; i < wait_s * 10; i++)); do
		if ! _fsql_pid_is "$pid" "$name"; then
			_fsql_await_reap "$pid"
			return 0
		fi
		sleep 0.1
	done
	kill -KILL "$pid" 2>/dev/null || true
	for ((i = 0; i < 50; i++)); do
		if ! _fsql_pid_is "$pid" "$name"; then
			_fsql_await_reap "$pid"
			return 0
		fi
		sleep 0.1
	done
	return 1
}

# "pid starttime pid-namespace" of the current shell, to recognise it later
# despite pid reuse.
_fsql_owner_id() {
	local pid=${BASHPID:-$$}
	printf '%s %s %s\n' "$pid" "$(awk '{ print $22 }' "/proc/$pid/stat" 2>/dev/null)" \
		"$(readlink "/proc/$pid/ns/pid" 2>/dev/null)"
}

# Is the shell recorded in file $1 alive? A shell in another pid namespace
# (whose pids we cannot see) counts as alive: never touch its servers.
_fsql_owner_alive() {
	local pid start ns now
	read -r pid start ns <"$1" 2>/dev/null || return 1
	[[ -n $pid ]] || return 1
	[[ $ns == "$(readlink /proc/self/ns/pid 2>/dev/null)" ]] || return 0
	[[ -d /proc/$pid ]] || return 1
	now=$(awk '{ print $22 }' "/proc/$pid/stat" 2>/dev/null)
	[[ $now == "$start" ]]
}

# Stop every server recorded in directory $1 (ours or a dead shell's), all
# at once: signal each, wait up to 20s for all to exit, KILL what is left.
# SIGQUIT is PostgreSQL's immediate shutdown (SIGTERM would wait for the
# clients to disconnect); MariaDB and Redis shut down on SIGTERM.
_fsql_stop_dir() {
	local dir=$1 pid k i busy
	local -a pids=() names=()
	pid=$(head -n 1 "$dir/pg/data/postmaster.pid" 2>/dev/null)
	if _fsql_pid_is "$pid" postgres; then
		kill -QUIT "$pid" 2>/dev/null && pids+=("$pid") && names+=(postgres)
	fi
	pid=$(cat "$dir/mysql/mariadbd.pid" 2>/dev/null)
	if _fsql_pid_is "$pid" mariadbd; then
		kill -TERM "$pid" 2>/dev/null && pids+=("$pid") && names+=(mariadbd)
	fi
	pid=$(cat "$dir/redis/redis.pid" 2>/dev/null)
	if _fsql_pid_is "$pid" redis-server; then
		kill -TERM "$pid" 2>/dev/null && pids+=("$pid") && names+=(redis-server)
	fi
	# Servers a failover test left behind (it was killed before its cleanup).
	local f
	if [[ -d $dir/failover ]]; then
		while IFS= read -r f; do
			pid=$(head -n 1 "$f" 2>/dev/null)
			if _fsql_pid_is "$pid" postgres; then
				kill -QUIT "$pid" 2>/dev/null && pids+=("$pid") && names+=(postgres)
			elif _fsql_pid_is "$pid" mariadbd; then
				kill -KILL "$pid" 2>/dev/null && pids+=("$pid") && names+=(mariadbd)
			fi
		done < <(find "$dir/failover" \( -name postmaster.pid -o -name mariadbd.pid \) -type f 2>/dev/null)
	fi
	for ((i = 0; i < 250; i++)); do
		busy=0
		for k in "${!pids[@]}"; do
			_fsql_pid_is "${pids[$k]}" "${names[$k]}" && busy=1
		done
		[[ $busy -eq 1 ]] || break
		[[ $i -eq 200 ]] && for k in "${!pids[@]}"; do
			_fsql_pid_is "${pids[$k]}" "${names[$k]}" && kill -KILL "${pids[$k]}" 2>/dev/null
		done
		sleep 0.1
	done
	for pid in "${pids[@]}"; do
		_fsql_await_reap "$pid"
	done
	return 0
}

# Remove leftovers of earlier runs whose shell is gone (killed -9, exec, ...).
_fsql_clean_stale() {
	local base=$1 dir
	for dir in "$base"/fencedsql-servers.*; do
		[[ -d $dir && -O $dir && -f $dir/owner ]] || continue
		[[ $dir == "${_FSQL_DIR:-}" ]] && continue
		_fsql_owner_alive "$dir/owner" && continue
		_fsql_log "removing leftovers of an earlier run: $dir"
		_fsql_stop_dir "$dir"
		rm -rf -- "$dir"
	done
}

# ---------------------------------------------------------------- binaries

_fsql_pg_bindir() {
	local d best=""
	for d in /usr/lib/postgresql/*/bin; do
		[[ -x $d/initdb && -x $d/pg_ctl && -x $d/postgres ]] || continue
		if [[ -z $best ]] || [[ $(printf '%s\n%s\n' "$best" "$d" | sort -V | tail -n 1) == "$d" ]]; then
			best=$d
		fi
	done
	if [[ -z $best ]] && command -v pg_ctl >/dev/null 2>&1; then
		d=$(dirname "$(readlink -f "$(command -v pg_ctl)")")
		[[ -x $d/initdb && -x $d/postgres ]] && best=$d
	fi
	[[ -n $best ]] && printf '%s\n' "$best"
}

_fsql_find() { # name... -> first found in PATH or sbin dirs
	local n d p
	for n in "$@"; do
		p=$(type -P "$n" 2>/dev/null)
		if [[ -n $p && -f $p && -x $p ]]; then
			printf '%s\n' "$p"
			return 0
		fi
		for d in /usr/sbin /usr/local/sbin /sbin /usr/libexec; do
			if [[ -f $d/$n && -x $d/$n ]]; then
				printf '%s\n' "$d/$n"
				return 0
			fi
		done
	done
	return 1
}

_fsql_have() { # server
	case $1 in
	postgres) [[ -n $(_fsql_pg_bindir) ]] ;;
	mariadb) _fsql_find mariadbd mysqld >/dev/null && _fsql_find mariadb-install-db mysql_install_db >/dev/null &&
		_fsql_find mariadb mysql >/dev/null ;;
	redis) _fsql_find redis-server >/dev/null && _fsql_find redis-cli >/dev/null ;;
	failover) _fsql_have postgres && [[ -x $(_fsql_pg_bindir)/pg_basebackup ]] && _fsql_have mariadb ;;
	esac
}

_fsql_package() { # server or tool -> Debian package
	case $1 in
	postgres) echo postgresql ;;
	mariadb) echo mariadb-server ;;
	redis) echo redis-server ;;
	failover) echo postgresql mariadb-server ;;
	promtool) echo prometheus ;;
	esac
}

# Put back the policy-rc.d that _fsql_apt_install replaced (also called by
# fencedsql_servers_stop, in case apt-get was interrupted).
_fsql_restore_policy() {
	local dir=$1 policy=/usr/sbin/policy-rc.d
	[[ -f $dir/policy-rc.d.ours ]] || return 0
	if [[ -e $dir/policy-rc.d.orig || -L $dir/policy-rc.d.orig ]]; then
		cp -a -- "$dir/policy-rc.d.orig" "$policy"
	else
		rm -f -- "$policy"
	fi
	rm -f -- "$dir/policy-rc.d.ours"
}

# apt-get install the packages given, without letting apt start services.
_fsql_apt_install() {
	local log=$_FSQL_DIR/apt.log policy=/usr/sbin/policy-rc.d rc t0
	t0=$(_fsql_now_ms)
	_fsql_log "installing $* with apt-get (log: $log) ..."
	if [[ -e $policy || -L $policy ]]; then
		cp -a -- "$policy" "$_FSQL_DIR/policy-rc.d.orig" || return 1
	fi
	: >"$_FSQL_DIR/policy-rc.d.ours"
	if ! { printf '#!/bin/sh\n# Written by fencedsql scripts/servers.sh while it runs apt-get install:\n# do not start services.\nexit 101\n' >"$policy" &&
		chmod 0755 "$policy"; }; then
		_fsql_restore_policy "$_FSQL_DIR"
		return 1
	fi
	local -a apt=(env DEBIAN_FRONTEND=noninteractive NEEDRESTART_MODE=l apt-get -q -o DPkg::Lock::Timeout=300)
	if [[ -z ${_FSQL_APT_UPDATED:-} ]]; then
		"${apt[@]}" update </dev/null >>"$log" 2>&1 || _fsql_log "apt-get update failed; trying the install anyway"
		_FSQL_APT_UPDATED=1
	fi
	"${apt[@]}" -y --no-install-recommends \
		-o Dpkg::Options::=--force-confdef -o Dpkg::Options::=--force-confold \
		install "$@" </dev/null >>"$log" 2>&1
	rc=$?
	_fsql_restore_policy "$_FSQL_DIR"
	if [[ $rc -ne 0 ]]; then
		_fsql_log "apt-get install $* failed (exit $rc)"
		_fsql_tail "$log"
		return 1
	fi
	_fsql_log "installed $* in $(_fsql_elapsed "$t0")"
}

# ---------------------------------------------------------------- servers

_fsql_start_postgres() {
	local dir=$_FSQL_DIR/pg bindir port version pw=$_FSQL_PASSWORD
	bindir=$(_fsql_pg_bindir) || return 1
	if [[ $EUID -eq 0 ]] && ! _fsql_user_exists postgres; then
		_fsql_log "PostgreSQL: no 'postgres' user to run the server as (PostgreSQL refuses to run as root)"
		return 1
	fi
	mkdir -p "$dir" && printf '%s\n' "$pw" >"$dir/pwfile" &&
		chmod 0600 "$dir/pwfile" && _fsql_give postgres "$dir" || return 1
	if ! (cd "$dir" && _fsql_as postgres "$bindir/initdb" -D "$dir/data" -U fenced --pwfile="$dir/pwfile" \
		--auth-local=trust --auth-host=scram-sha-256 -E UTF8 --no-locale --no-sync --no-instructions) \
		>"$dir/initdb.log" 2>&1; then
		rm -f -- "$dir/pwfile"
		_fsql_log "PostgreSQL: initdb failed"
		_fsql_tail "$dir/initdb.log"
		return 1
	fi
	rm -f -- "$dir/pwfile"
	cat >>"$dir/data/postgresql.conf" <<EOF

# fencedsql scripts/servers.sh: a throwaway test server.
listen_addresses = '127.0.0.1'
unix_socket_directories = '$dir'
max_connections = 300
# PREPARE TRANSACTION allowed: the floor's raise must wait for two-phase writers
# (dialects/postgres TestRaiseWaitsForPreparedWriter).
max_prepared_transactions = 10
fsync = off
synchronous_commit = off
full_page_writes = off
log_min_messages = warning
log_line_prefix = '%m [%p] %q%u@%d '
EOF
	for _ in 1 2 3 4 5; do
		port=$(_fsql_free_port) || break
		if (cd "$dir" && _fsql_as postgres "$bindir/pg_ctl" -D "$dir/data" -l "$dir/postgres.log" \
			-o "-p $port" -w -t 60 -s start) >>"$dir/pg_ctl.log" 2>&1; then
			if command -v "$bindir/psql" >/dev/null 2>&1 &&
				! PGPASSWORD=$pw PGCONNECT_TIMEOUT=10 "$bindir/psql" -X -w -h 127.0.0.1 -p "$port" -U fenced -d postgres \
					-Atqc 'SELECT 1' >>"$dir/pg_ctl.log" 2>&1; then
				_fsql_log "PostgreSQL: started but a login as 'fenced' over TCP failed"
				_fsql_tail "$dir/pg_ctl.log" "$dir/postgres.log"
				return 1
			fi
			version=$("$bindir/postgres" --version 2>/dev/null | awk '{ print $3 }')
			export FENCEDSQL_PG_DSN="postgres://fenced:$pw@127.0.0.1:$port/postgres?sslmode=disable"
			_fsql_log "PostgreSQL ${version:-?} on 127.0.0.1:$port  user fenced  (FENCEDSQL_PG_DSN)"
			return 0
		fi
		if grep -qi 'address already in use\|could not bind' "$dir/postgres.log" 2>/dev/null; then
			_fsql_log "PostgreSQL: port $port was taken, trying another"
			: >"$dir/postgres.log"
			continue
		fi
		break
	done
	_fsql_log "PostgreSQL: failed to start"
	_fsql_tail "$dir/pg_ctl.log" "$dir/postgres.log"
	return 1
}

_fsql_mariadb_sql() { # port sql -> stdout
	MYSQL_PWD=$_FSQL_PASSWORD "$_FSQL_MYSQL_CLIENT" --no-defaults --protocol=tcp -h 127.0.0.1 -P "$1" -u fenced \
		--connect-timeout=5 -N -B -e "$2"
}

_fsql_start_mariadb() {
	local dir=$_FSQL_DIR/mysql mysqld installdb port pid i out version
	local -a userflag=()
	mysqld=$(_fsql_find mariadbd mysqld) || return 1
	installdb=$(_fsql_find mariadb-install-db mysql_install_db) || return 1
	_FSQL_MYSQL_CLIENT=$(_fsql_find mariadb mysql) || return 1
	if [[ $EUID -eq 0 ]]; then
		if ! _fsql_user_exists mysql; then
			_fsql_log "MariaDB: no 'mysql' user to run the server as"
			return 1
		fi
		userflag=(--user=mysql)
	fi
	mkdir -p "$dir/data" "$dir/tmp" && _fsql_give mysql "$dir" || return 1
	if ! (cd "$dir" && "$installdb" --no-defaults "${userflag[@]}" --datadir="$dir/data" \
		--auth-root-authentication-method=socket --skip-test-db --skip-name-resolve \
		--tmpdir="$dir/tmp") \
		</dev/null >"$dir/install-db.log" 2>&1; then
		_fsql_log "MariaDB: mariadb-install-db failed"
		_fsql_tail "$dir/install-db.log"
		return 1
	fi
	# Runs at every server start, before connections are accepted. MariaDB
	# matches the most specific host first, so an anonymous ''@'localhost'
	# would shadow 'fenced'@'%' for local logins: delete anonymous accounts
	# and create the user for every loopback spelling.
	cat >"$dir/init.sql" <<EOF
DELETE FROM mysql.global_priv WHERE User = '';
FLUSH PRIVILEGES;
CREATE USER IF NOT EXISTS 'fenced'@'localhost' IDENTIFIED BY '$_FSQL_PASSWORD';
CREATE USER IF NOT EXISTS 'fenced'@'127.0.0.1' IDENTIFIED BY '$_FSQL_PASSWORD';
CREATE USER IF NOT EXISTS 'fenced'@'::1' IDENTIFIED BY '$_FSQL_PASSWORD';
CREATE USER IF NOT EXISTS 'fenced'@'%' IDENTIFIED BY '$_FSQL_PASSWORD';
GRANT ALL PRIVILEGES ON *.* TO 'fenced'@'localhost' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'fenced'@'127.0.0.1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'fenced'@'::1' WITH GRANT OPTION;
GRANT ALL PRIVILEGES ON *.* TO 'fenced'@'%' WITH GRANT OPTION;
FLUSH PRIVILEGES;
EOF
	chmod 0600 "$dir/init.sql" && _fsql_give mysql "$dir/init.sql" || return 1
	for _ in 1 2 3 4 5; do
		port=$(_fsql_free_port) || break
		: >"$dir/mariadbd.err"
		_fsql_give mysql "$dir/mariadbd.err"
		# innodb-log-buffer-size: the default 16 MiB is one max_allowed_packet row; with
		# two such rows at once (go-sql-driver's suite runs raw and wrapped in parallel)
		# a CI run found the redo log buffer full with the log writer stalled and every
		# later CREATE TABLE waiting on SYS_TABLES for the rest of the run.
		_fsql_launch "$dir" "$dir/mariadbd.pid" "$dir/mariadbd.out" \
			"$mysqld" --no-defaults "${userflag[@]}" --datadir="$dir/data" --tmpdir="$dir/tmp" \
			--socket="$dir/mysqld.sock" --port="$port" --bind-address=127.0.0.1 \
			--pid-file="$dir/data/mariadbd.pid" --log-error="$dir/mariadbd.err" \
			--init-file="$dir/init.sql" --skip-name-resolve --skip-log-bin \
			--character-set-server=utf8mb4 --collation-server=utf8mb4_general_ci \
			--max-connections=500 --innodb-buffer-pool-size=128M \
			--innodb-flush-log-at-trx-commit=0 --innodb-doublewrite=0 --innodb-log-buffer-size=64M
		pid=$(cat "$dir/mariadbd.pid" 2>/dev/null)
		# Ready means: a real query as the test user works ("mariadb-admin
		# ping" says yes even when the login is refused).
		for ((i = 0; i < 600; i++)); do
			_fsql_starting "$pid" mariadbd || break
			out=$(_fsql_mariadb_sql "$port" 'SELECT 1' 2>>"$dir/probe.log")
			if [[ $out == 1 ]]; then
				version=$(_fsql_mariadb_sql "$port" 'SELECT VERSION()' 2>/dev/null)
				export FENCEDSQL_MYSQL_DSN="fenced:$_FSQL_PASSWORD@tcp(127.0.0.1:$port)/?parseTime=true"
				_fsql_log "MariaDB ${version%%-*} on 127.0.0.1:$port  user fenced  (FENCEDSQL_MYSQL_DSN)"
				return 0
			fi
			sleep 0.1
		done
		if _fsql_starting "$pid" mariadbd; then
			_fsql_log "MariaDB: no successful 'SELECT 1' as user fenced within 60s"
		else
			_fsql_log "MariaDB: the server process exited"
		fi
		_fsql_kill "$pid" mariadbd 10 || true
		if grep -qi 'address already in use\|bind on tcp/ip port' "$dir/mariadbd.err" 2>/dev/null; then
			_fsql_log "MariaDB: port $port was taken, trying another"
			continue
		fi
		break
	done
	_fsql_log "MariaDB: failed to start"
	_fsql_tail "$dir/mariadbd.err" "$dir/mariadbd.out" "$dir/probe.log"
	return 1
}

_fsql_start_redis() {
	local dir=$_FSQL_DIR/redis server cli port pid i user=root version
	local -a wrap=()
	server=$(_fsql_find redis-server) || return 1
	cli=$(_fsql_find redis-cli) || return 1
	# setpriv execs in place, so the recorded pid stays the server's.
	if [[ $EUID -eq 0 ]] && _fsql_user_exists redis && command -v setpriv >/dev/null 2>&1; then
		user=redis
		wrap=(setpriv --reuid=redis --regid=redis --init-groups --)
	fi
	mkdir -p "$dir" && _fsql_give "$user" "$dir" || return 1
	for _ in 1 2 3 4 5; do
		port=$(_fsql_free_port) || break
		_fsql_launch "$dir" "$dir/redis.pid" "$dir/redis.out" "${wrap[@]}" \
			"$server" --port "$port" --bind 127.0.0.1 --save '' --appendonly no \
			--daemonize no --dir "$dir" --logfile "$dir/redis.log" --loglevel warning
		pid=$(cat "$dir/redis.pid" 2>/dev/null)
		for ((i = 0; i < 300; i++)); do
			_fsql_starting "$pid" redis-server || break
			if [[ $("$cli" -h 127.0.0.1 -p "$port" ping 2>/dev/null) == PONG ]]; then
				version=$("$server" --version 2>/dev/null | sed -n 's/.* v=\([^ ]*\).*/\1/p')
				export FENCEDSQL_REDIS_ADDR="127.0.0.1:$port"
				_fsql_log "Redis ${version:-?} on 127.0.0.1:$port  (FENCEDSQL_REDIS_ADDR)"
				return 0
			fi
			sleep 0.1
		done
		if _fsql_starting "$pid" redis-server; then
			_fsql_log "Redis: no PONG within 30s"
		else
			_fsql_log "Redis: the server process exited"
		fi
		_fsql_kill "$pid" redis-server 10 || true
		if grep -qi 'address already in use' "$dir/redis.log" "$dir/redis.out" 2>/dev/null; then
			_fsql_log "Redis: port $port was taken, trying another"
			continue
		fi
		break
	done
	_fsql_log "Redis: failed to start"
	_fsql_tail "$dir/redis.log" "$dir/redis.out"
	return 1
}

# The failover tests start their own servers (they kill and rebuild them every
# round): export where they find the binaries and a directory for their data,
# owned by us, traversable by the users postgres and mysql.
_fsql_start_failover() {
	local dir=$_FSQL_DIR/failover bindir mysqld installdb
	bindir=$(_fsql_pg_bindir) || return 1
	mysqld=$(_fsql_find mariadbd mysqld) || return 1
	installdb=$(_fsql_find mariadb-install-db mysql_install_db) || return 1
	if [[ $EUID -eq 0 ]] && ! { _fsql_user_exists postgres && _fsql_user_exists mysql; }; then
		_fsql_log "failover: no 'postgres' or 'mysql' user to run the servers as"
		return 1
	fi
	mkdir -p "$dir" && chmod 0711 "$dir" || return 1
	export FENCEDSQL_FAILOVER_DIR=$dir FENCEDSQL_PG_BIN=$bindir FENCEDSQL_MYSQLD=$mysqld \
		FENCEDSQL_MYSQL_INSTALL_DB=$installdb
	_fsql_log "failover: PostgreSQL in $bindir, $mysqld; pairs started by the tests in $dir  (FENCEDSQL_FAILOVER_DIR)"
}

# ---------------------------------------------------------------- stop/trap

fencedsql_servers_stop() {
	# shellcheck disable=SC2319 # the caller's status, kept for traps
	local rc=$?
	local v
	if [[ -n ${_FSQL_DIR:-} ]]; then
		if [[ -d $_FSQL_DIR ]]; then
			_fsql_restore_policy "$_FSQL_DIR"
			_fsql_stop_dir "$_FSQL_DIR"
			rm -rf -- "$_FSQL_DIR"
		fi
		for v in ${_FSQL_EXPORTED:-}; do
			unset "$v"
		done
		_fsql_log "servers stopped"
	fi
	_FSQL_DIR=""
	_FSQL_EXPORTED=""
	_FSQL_PORTS=""
	return "$rc"
}

# shellcheck disable=SC2064,SC2120 # traps are built now on purpose
_fsql_install_traps() {
	local prev sig code
	prev=$(trap -p EXIT)
	if [[ $prev != *fencedsql_servers_stop* ]]; then
		if [[ -n $prev ]]; then
			eval "set -- $prev" # trap -- 'CODE' EXIT
			trap "fencedsql_servers_stop && :; $3" EXIT
		else
			trap "fencedsql_servers_stop && :" EXIT
		fi
	fi
	if [[ $- != *i* ]]; then
		for sig in INT:130 TERM:143 HUP:129; do
			code=${sig#*:}
			sig=${sig%%:*}
			[[ -n $(trap -p "$sig") ]] || trap "exit $code" "$sig"
		done
	fi
}

# ---------------------------------------------------------------- main

_fsql_main() {
	local t0 base s v want=() missing=() tools=() pkgs=() started=0 wanted=0
	t0=$(_fsql_now_ms)
	_FSQL_PASSWORD=fenced

	# Sourced again in the same shell: start over.
	if [[ -n ${_FSQL_DIR:-} && ${_FSQL_OWNER:-} == "${BASHPID:-$$}" ]]; then
		fencedsql_servers_stop
	fi
	_FSQL_DIR=""
	_FSQL_EXPORTED=""
	_FSQL_PORTS=""

	for s in ${FENCEDSQL_SERVERS:-postgres mariadb redis failover}; do
		case $s in
		postgres | postgresql | pg) s=postgres v=FENCEDSQL_PG_DSN ;;
		mariadb | mysql) s=mariadb v=FENCEDSQL_MYSQL_DSN ;;
		redis) v=FENCEDSQL_REDIS_ADDR ;;
		failover) v=FENCEDSQL_FAILOVER_DIR ;;
		*)
			_fsql_log "unknown server '$s' in FENCEDSQL_SERVERS (want postgres, mariadb, redis, failover)"
			continue
			;;
		esac
		if [[ -n ${!v:-} ]]; then
			_fsql_log "$v already set; using that server"
			continue
		fi
		want+=("$s")
	done
	for s in ${FENCEDSQL_TOOLS-promtool}; do
		case $s in
		promtool) command -v "$s" >/dev/null 2>&1 || tools+=("$s") ;;
		*) _fsql_log "unknown tool '$s' in FENCEDSQL_TOOLS (want promtool)" ;;
		esac
	done
	[[ ${#want[@]} -gt 0 || ${#tools[@]} -gt 0 ]] || return 0

	base=/tmp
	[[ $EUID -ne 0 && -n ${TMPDIR:-} && -d ${TMPDIR:-} ]] && base=${TMPDIR%/}
	_fsql_clean_stale "$base"
	_FSQL_DIR=$(mktemp -d "$base/fencedsql-servers.XXXXXXXX") || {
		_fsql_log "mktemp failed"
		_FSQL_DIR=""
		return 1
	}
	_FSQL_OWNER=${BASHPID:-$$}
	_fsql_owner_id >"$_FSQL_DIR/owner"
	# Other users (postgres, mysql, redis) must reach their subdirectories.
	chmod 0711 "$_FSQL_DIR"
	_fsql_install_traps

	for s in "${want[@]}"; do
		_fsql_have "$s" || missing+=("$s")
	done
	missing+=("${tools[@]}")
	if [[ ${#missing[@]} -gt 0 ]]; then
		# shellcheck disable=SC2207 # a server may need several packages
		for s in "${missing[@]}"; do pkgs+=($(_fsql_package "$s")); done
		if [[ $EUID -eq 0 && -z ${FENCEDSQL_SERVERS_NO_INSTALL:-} ]] && command -v apt-get >/dev/null 2>&1; then
			_fsql_apt_install "${pkgs[@]}" || true
		else
			_fsql_log "not installed: ${pkgs[*]} (install them, e.g. 'sudo apt-get install ${pkgs[*]}', or run as root);" \
				"tests needing them will be skipped"
		fi
	fi
	for s in "${tools[@]}"; do
		if command -v "$s" >/dev/null 2>&1; then
			_fsql_log "$s: $(command -v "$s")"
		else
			_fsql_log "$s: not found after install; tests needing it will be skipped"
		fi
	done

	for s in "${want[@]}"; do
		wanted=$((wanted + 1))
		if ! _fsql_have "$s"; then
			_fsql_log "$s: binaries not found; not started"
			continue
		fi
		case $s in
		postgres) _fsql_start_postgres && started=$((started + 1)) && _FSQL_EXPORTED+=" FENCEDSQL_PG_DSN" ;;
		mariadb) _fsql_start_mariadb && started=$((started + 1)) && _FSQL_EXPORTED+=" FENCEDSQL_MYSQL_DSN" ;;
		redis) _fsql_start_redis && started=$((started + 1)) && _FSQL_EXPORTED+=" FENCEDSQL_REDIS_ADDR" ;;
		failover) _fsql_start_failover && started=$((started + 1)) &&
			_FSQL_EXPORTED+=" FENCEDSQL_FAILOVER_DIR FENCEDSQL_PG_BIN FENCEDSQL_MYSQLD FENCEDSQL_MYSQL_INSTALL_DB" ;;
		esac
	done
	_fsql_log "$started of $wanted servers started in $(_fsql_elapsed "$t0") (files in $_FSQL_DIR; stop with fencedsql_servers_stop)"
	return 0
}

# errexit is off inside a function called from an || list, so a failing step
# never aborts a caller running under `set -e`.
_fsql_main || true
