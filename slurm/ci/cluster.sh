#!/usr/bin/env bash
# A real two-node Slurm cluster on this one machine, for CI and for trying multi-node
# checks by hand (shared/SLURM_CI.md says what is known to work).
#
#   slurm/ci/cluster.sh start          # (re)start: stop, wipe the state folder, start
#   slurm/ci/cluster.sh status         # sinfo; exit 1 when the cluster is not up
#   slurm/ci/cluster.sh exec CMD...    # run CMD against the cluster (beside node n1)
#   slurm/ci/cluster.sh stop           # stop everything; never fails when nothing runs
#
# Shape: network namespaces mempath-n1 and mempath-n2, joined by one veth pair in a
# private /24 with no default route (nothing leaves the machine); /etc/netns/<ns>/hosts
# names n1 and n2. One munged (own key and socket in the state folder); slurmctld and
# slurmd n1 in mempath-n1, slurmd n2 in mempath-n2, each in its own UTS namespace with its
# own hostname. Both nodes describe the machine's real cores: they share them, so timings
# taken on this cluster are functional only. slurm.conf and cgroup.conf come from the
# templates beside this script. No accounting: ReFrame uses its `squeue` scheduler.
#
# `exec` runs CMD in mempath-n1 with hostname n1 (ReFrame's site_configs/ci.py selects
# itself there), SLURM_CONF set, and Open MPI allowed to run as root without binding.
#
# Needs root (namespaces, daemons as root). Installs what is missing with apt-get.
#
# Security (it runs as root on shared machines): the state folder is private,
# a fresh `mktemp -d` (root, 0700; munge's group may traverse it to reach munge's own
# folder) unless MEMPATH_SLURM_DIR names one that only root can write; the folder in use is
# recorded in $RECORD (root, 0600), where status, exec and stop find it. Secrets are
# created under umask 077. `stop` kills only daemons this script started: their PID and
# start time (field 22 of /proc/PID/stat), recorded at start in the private folder, and
# their command name must all still match. Values go into slurm.conf literally (no sed).
#
# Variables:
#   MEMPATH_SLURM_DIR      state folder (config, logs, spool, records); must not exist or be
#                          a folder owned by root that no one else may write, in parents
#                          owned by root that no one else may write (or sticky, as /tmp);
#                          wiped by start
#                          [a new mktemp -d folder in /tmp per start]
#   MEMPATH_SLURM_NET      first three octets of the private /24 [10.77.42]
#   MEMPATH_SLURM_TIMEOUT  seconds start waits for both nodes to be idle [60]
#   MEMPATH_SLURM_CPUS     CPUs per node instead of the machine's layout (`slurmd -C`)
set -euo pipefail
# `&` in a ${var//pattern/replacement} replacement stays literal (bash 5.2 made it special).
shopt -u patsub_replacement 2>/dev/null || true

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NET=${MEMPATH_SLURM_NET:-10.77.42}
TIMEOUT=${MEMPATH_SLURM_TIMEOUT:-60}
NODES=(n1 n2)
MARKER=.mempath-slurm-cluster
# Where the state folder in use is written down (root-only /run: no one else can plant it).
RECORD=/run/mempath-slurm-cluster.path
DIR=  # the state folder; set by use_dir or new_dir
CONF=
PACKAGES=(slurm-wlm munge openmpi-bin libopenmpi-dev libpmix2 iproute2 util-linux procps)

say() { echo "cluster.sh: $*"; }
die() { echo "cluster.sh: $*" >&2; exit 1; }
bad_input() { echo "cluster.sh: $*" >&2; exit 2; }
ns() { echo "mempath-$1"; }

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, daemons)"; }

check_settings() {
    [[ $TIMEOUT =~ ^[0-9]+$ ]] || bad_input "MEMPATH_SLURM_TIMEOUT must be a number of seconds"
    [[ ${MEMPATH_SLURM_CPUS:-1} =~ ^[1-9][0-9]*$ ]] || bad_input "MEMPATH_SLURM_CPUS must be a positive number"
    [[ $NET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || bad_input "MEMPATH_SLURM_NET must be three octets, e.g. 10.77.42"
}

# check_given_path PATH: a path slurm.conf can hold (it has no quoting) that is not a
# system folder this script would wipe.
check_given_path() {
    [[ $1 =~ ^/[A-Za-z0-9._/-]+$ ]] ||
        bad_input "MEMPATH_SLURM_DIR must be an absolute path of letters, digits and ._-/ (is '$1')"
    case ${1%/} in
        '' | /tmp | /var | /var/tmp | /home | /root | /usr | /etc | /opt | /run)
            bad_input "MEMPATH_SLURM_DIR=$1 is a system folder; name a folder of its own, e.g. /var/tmp/mempath-slurm" ;;
    esac
    check_ancestors "$1"
}

# check_ancestors PATH: every folder above PATH, as written and as its links resolve, is
# owned by root and writable by root alone, or is sticky like /tmp. Whoever may write a
# parent can rename the state folder away and put their own in its place between our check
# and our use (planted keys, a slurm.conf running their programs as root); in a sticky
# folder only root may rename root's entries. Missing folders are made by root, 0755.
check_ancestors() {
    local up=$1 real owner mode
    local -a above=()
    while [ "$up" != / ]; do up=$(dirname -- "$up"); above+=("$up"); done
    real=$(readlink -m -- "$(dirname -- "$1")")
    while [ "$real" != / ]; do above+=("$real"); real=$(dirname -- "$real"); done
    for up in "${above[@]}"; do
        [ -e "$up" ] || continue
        read -r owner mode < <(stat -L -c '%u %a' -- "$up") || owner=unknown
        if [ "$owner" != 0 ] || { (( (8#$mode & 8#022) != 0 )) && (( (8#$mode & 8#1000) == 0 )); }; then
            bad_input "MEMPATH_SLURM_DIR=$1 lies in $up (owner uid $owner, mode $mode), which others may change; valid: a folder whose parents are owned by root and writable by root alone (or sticky, like /tmp)"
        fi
    done
}

# private PATH: a real folder (no link) owned by root that no one else may write, so that
# nothing in it (records, configuration, keys) can have been planted.
private() {
    [ -d "$1" ] && [ ! -L "$1" ] || return 1
    local owner mode
    read -r owner mode < <(stat -c '%u %a' "$1") || return 1
    [ "$owner" = 0 ] && (( (8#$mode & 8#022) == 0 ))
}

require_private() {
    private "$1" || bad_input "MEMPATH_SLURM_DIR=$1 must be a folder owned by root that only root may write (or not exist yet)"
}

set_dir() { DIR=$1 CONF=$1/etc/slurm.conf; }

# use_dir: the state folder of the cluster that runs (or ran last), for start (to stop it
# first), status, exec and stop: the one recorded by start, else MEMPATH_SLURM_DIR. Empty
# when there is none.
use_dir() {
    local dir=${MEMPATH_SLURM_DIR:-}
    if [ -f "$RECORD" ] && [ ! -L "$RECORD" ] && [ "$(stat -c %u "$RECORD")" = 0 ]; then
        dir=$(head -n1 "$RECORD")
    fi
    [ -n "$dir" ] || return 0
    check_given_path "$dir"
    [ -e "$dir" ] || [ -L "$dir" ] || return 0  # nothing ran there
    require_private "$dir"
    set_dir "$dir"
}

# new_dir: an empty private state folder for start, recorded in $RECORD. A folder start
# made itself (marker says mktemp) is removed by the next start: no pile-up in /tmp.
new_dir() {
    local given=${MEMPATH_SLURM_DIR:-}
    if [ -n "$DIR" ] && [ "$DIR" != "$given" ] && [ "$(cat "$DIR/$MARKER" 2>/dev/null || true)" = mktemp ]; then
        rm -rf -- "$DIR"
    fi
    if [ -z "$given" ]; then
        set_dir "$(mktemp -d /tmp/mempath-slurm.XXXXXXXX)"
        echo mktemp > "$DIR/$MARKER"
    else
        check_given_path "$given"
        if [ -e "$given" ] || [ -L "$given" ]; then
            require_private "$given"
            [ -e "$given/$MARKER" ] || [ -z "$(ls -A "$given")" ] ||
                bad_input "MEMPATH_SLURM_DIR=$given is not empty and not a cluster state folder; empty it or name another"
            # Emptied, not removed and made again: the path is never free for someone else.
            find "$given" -mindepth 1 -delete
        else
            mkdir -p -- "$(dirname "$given")"
            mkdir -m 0700 -- "$given"
        fi
        chmod 0700 "$given"
        set_dir "$given"
        echo given > "$DIR/$MARKER"
    fi
    (umask 077 && printf '%s\n' "$DIR" > "$RECORD")
}

install_missing() {
    local missing=() p
    for p in "${PACKAGES[@]}"; do
        dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q 'ok installed' || missing+=("$p")
    done
    [ ${#missing[@]} -eq 0 ] && return 0
    say "installing ${missing[*]}"
    export DEBIAN_FRONTEND=noninteractive
    apt-get update -qq
    apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
}

# running PID COMM: PID is alive (not a zombie) and its /proc/PID/comm is COMM.
running() {
    local stat
    [ "$(cat "/proc/$1/comm" 2>/dev/null || true)" = "$2" ] || return 1
    stat=$(cat "/proc/$1/stat" 2>/dev/null || true)
    stat=${stat##*) }
    [ -n "$stat" ] && [ "${stat%% *}" != Z ]
}

# starttime PID: field 22 of /proc/PID/stat, the process's start time in clock ticks
# since boot; with the PID it names one process for good (a PID is reused, the pair is not;
# exec keeps it).
starttime() {
    local stat fields
    stat=$(cat "/proc/$1/stat" 2>/dev/null) || return 1
    # Fields from the 3rd on: the 2nd, (comm), may hold spaces and parentheses.
    read -r -a fields <<< "${stat##*) }"
    [ ${#fields[@]} -ge 20 ] && echo "${fields[19]}"
}

# record NAME PID: write down the process this script started, in the private folder.
record() {
    local t
    t=$(starttime "$2") || return 1
    (umask 077 && printf '%s %s\n' "$2" "$t" > "$DIR/pids/$1.proc")
}

# recorded NAME COMM: the PID of the process recorded as NAME if it still is that process
# (same start time) and runs as COMM; fails otherwise.
recorded() {
    local pid t
    [ -f "$DIR/pids/$1.proc" ] && [ ! -L "$DIR/pids/$1.proc" ] || return 1
    read -r pid t < "$DIR/pids/$1.proc" || return 1
    [[ $pid =~ ^[0-9]+$ && $t =~ ^[0-9]+$ ]] && running "$pid" "$2" &&
        [ "$(starttime "$pid" || true)" = "$t" ] && echo "$pid"
}

# stop_recorded NAME:COMM...: stop the processes this script recorded under these names,
# each only while it is still that very process: TERM, then KILL after 10 s. Removes the
# records. Never fails.
stop_recorded() {
    local spec pid names=() comms=() pids=() i j left
    for spec in "$@"; do
        pid=$(recorded "${spec%:*}" "${spec##*:}") || continue
        kill -TERM "$pid" 2>/dev/null || continue
        names+=("${spec%:*}") comms+=("${spec##*:}") pids+=("$pid")
    done
    for i in $(seq 50); do
        left=0
        for j in "${!names[@]}"; do
            recorded "${names[$j]}" "${comms[$j]}" >/dev/null && left=1
        done
        [ $left -eq 0 ] && break
        sleep 0.2
    done
    for j in "${!names[@]}"; do
        recorded "${names[$j]}" "${comms[$j]}" >/dev/null && kill -KILL "${pids[$j]}" 2>/dev/null
    done
    for spec in "$@"; do rm -f "$DIR/pids/${spec%:*}.proc"; done
    return 0
}

# Whatever still runs in one of our namespaces (job steps, a shell from `exec`).
kill_netns_pids() {
    local n pids sig
    for sig in TERM KILL; do
        pids=()
        for n in "${NODES[@]}"; do
            [ -e "/run/netns/$(ns "$n")" ] || continue
            mapfile -t -O "${#pids[@]}" pids < <(ip netns pids "$(ns "$n")" 2>/dev/null || true)
        done
        [ ${#pids[@]} -eq 0 ] && return 0
        kill "-$sig" "${pids[@]}" 2>/dev/null || true
        if [ $sig = TERM ]; then sleep 1; fi
    done
    return 0
}

stop() {
    need_root
    local n
    if [ -n "$DIR" ]; then
        stop_recorded slurmd-n1:slurmd slurmd-n2:slurmd slurmctld:slurmctld
    fi
    kill_netns_pids
    if [ -n "$DIR" ]; then
        stop_recorded munged:munged
    fi
    for n in "${NODES[@]}"; do
        ip netns del "$(ns "$n")" 2>/dev/null || true
        rm -rf "/etc/netns/$(ns "$n")"
    done
    rmdir /etc/netns 2>/dev/null || true
    return 0
}

network() {
    local i n
    for i in 1 2; do
        n=$(ns "n$i")
        ip netns add "$n"
        ip -n "$n" link set lo up
        mkdir -p "/etc/netns/$n"
        printf '127.0.0.1 localhost\n%s.1 n1\n%s.2 n2\n' "$NET" "$NET" > "/etc/netns/$n/hosts"
    done
    ip link add mp-n1 netns "$(ns n1)" type veth peer name mp-n2 netns "$(ns n2)"
    for i in 1 2; do
        ip -n "$(ns "n$i")" addr add "$NET.$i/24" dev "mp-n$i"
        ip -n "$(ns "n$i")" link set "mp-n$i" up
    done
}

# The node lines' hardware: the machine's own layout, both nodes alike.
node_hw() {
    if [ -n "${MEMPATH_SLURM_CPUS:-}" ]; then
        echo "CPUs=$MEMPATH_SLURM_CPUS"
        return
    fi
    slurmd -C | head -n1 | tr ' ' '\n' |
        grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore|RealMemory)=' |
        tr '\n' ' '
}

# render TEMPLATE NAME=VALUE...: the template with each @NAME@ replaced by VALUE, literally.
render() {
    local text kv
    text=$(< "$1")
    shift
    for kv in "$@"; do
        text=${text//"@${kv%%=*}@"/${kv#*=}}
    done
    printf '%s\n' "$text"
}

configure() {
    mkdir -p "$DIR"/{etc,state,run,pids,log,spool/slurmd-n1,spool/slurmd-n2,tmp/n1,tmp/n2}
    local hw
    hw=$(node_hw)
    [[ $hw =~ ^[A-Za-z0-9=\ ]+$ ]] || die "unexpected node hardware from slurmd -C: '$hw'"
    render "$HERE/slurm.conf.in" DIR="$DIR" ADDR1="$NET.1" ADDR2="$NET.2" NODE_HW="$hw" > "$CONF"
    cp "$HERE/cgroup.conf.in" "$DIR/etc/cgroup.conf"
    : > "$DIR/etc/plugstack.conf"
}

munge_start() {
    local m=$DIR/munge i pid
    # munged runs as user munge: its group may pass through the state folder to its own.
    chgrp munge "$DIR"
    chmod 0710 "$DIR"
    # The key is never readable by anyone but its owner, not even for a moment.
    (umask 077 && mkdir "$m" && dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none)
    chown -R munge:munge "$m"
    chmod 400 "$m/munge.key"
    runuser -u munge -- /usr/sbin/munged --force --socket="$m/munge.socket" \
        --key-file="$m/munge.key" --pid-file="$m/munged.pid" --log-file="$m/munged.log" \
        --seed-file="$m/munged.seed" </dev/null >"$DIR/log/munged.out" 2>&1 ||
        fail "munged did not start"
    for i in $(seq 50); do
        munge -n -S "$m/munge.socket" 2>/dev/null | unmunge -S "$m/munge.socket" >/dev/null 2>&1 &&
            break
        [ "$i" -lt 50 ] || fail "munge does not answer on $m/munge.socket"
        sleep 0.1
    done
    # User munge writes this pid file: trust it only for a munged of user munge, then record
    # it in the root-only folder.
    pid=$(cat "$m/munged.pid" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ ]] && running "$pid" munged && [ "$(stat -c %U "/proc/$pid")" = munge ] &&
        record munged "$pid" || fail "munged did not write a pid file naming itself"
}

# daemon NODE NAME CMD...: CMD in NODE's namespace with hostname NODE, in the background,
# its pid (the same process after exec) in pids/NAME.pid, and recorded as NAME.
daemon() {
    local node=$1 name=$2
    shift 2
    setsid ip netns exec "$(ns "$node")" unshare --uts \
        sh -c 'echo $$ > "$1"; hostname "$2"; shift 2; exec "$@"' \
        sh "$DIR/pids/$name.pid" "$node" "$@" </dev/null >"$DIR/log/$name.out" 2>&1 &
    # Recorded once it runs as the daemon (its shell has exec'd), so `alive` cannot
    # mistake the moment before for an exit.
    local i pid comm=${1##*/}
    for i in $(seq 100); do
        pid=$(cat "$DIR/pids/$name.pid" 2>/dev/null || true)
        if [[ $pid =~ ^[0-9]+$ ]] && running "$pid" "${comm:0:15}"; then
            record "$name" "$pid" && return 0
        fi
        sleep 0.05
    done
    fail "$name did not start"
}

in_n1() { ip netns exec "$(ns n1)" "$@"; }

logs() {
    local f
    for f in "$DIR"/log/* "$DIR"/munge/munged.log; do
        [ -s "$f" ] || continue
        echo "---- $f (last 40 lines)"
        tail -n 40 "$f"
    done >&2
}

fail() {
    echo "cluster.sh: start failed: $*" >&2
    logs
    stop
    exit 1
}

alive() {  # alive NAME COMM
    recorded "$1" "$2" >/dev/null
}

start() {
    need_root
    check_settings
    local t0=$SECONDS
    install_missing
    use_dir
    stop
    new_dir
    configure
    network
    munge_start
    export SLURM_CONF=$CONF
    daemon n1 slurmctld slurmctld -D -f "$CONF"
    local deadline=$((SECONDS + TIMEOUT)) states n
    until in_n1 scontrol ping >/dev/null 2>&1; do
        alive slurmctld slurmctld || fail "slurmctld exited"
        [ $SECONDS -lt $deadline ] || fail "slurmctld does not answer after ${TIMEOUT} s"
        sleep 0.2
    done
    for n in "${NODES[@]}"; do
        daemon "$n" "slurmd-$n" slurmd -D -f "$CONF" -N "$n"
    done
    while :; do
        states=$(in_n1 sinfo -h -N -o %t 2>/dev/null | sort | tr '\n' ' ' || true)
        [ "$states" = "idle idle " ] && break
        for n in slurmctld slurmd-n1 slurmd-n2; do
            alive "$n" "${n%-n?}" || fail "$n exited"
        done
        [ $SECONDS -lt $deadline ] || fail "nodes not idle after ${TIMEOUT} s (sinfo: ${states:-nothing})"
        sleep 0.5
    done
    say "up in $((SECONDS - t0)) s: nodes n1 n2 ($NET.1, $NET.2), partition ci; state in $DIR"
}

status() {
    need_root
    use_dir
    [ -e "/run/netns/$(ns n1)" ] && [ -n "$DIR" ] || { say "not running"; return 1; }
    SLURM_CONF=$CONF in_n1 sinfo -N -l
}

run_exec() {
    need_root
    [ $# -gt 0 ] || bad_input "usage: $0 exec CMD [ARG...]"
    use_dir
    [ -e "/run/netns/$(ns n1)" ] && [ -n "$DIR" ] && [ -f "$CONF" ] ||
        die "the cluster is not running (slurm/ci/cluster.sh start)"
    export SLURM_CONF=$CONF
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_hwloc_base_binding_policy=none
    exec ip netns exec "$(ns n1)" unshare --uts sh -c 'hostname n1; exec "$@"' sh "$@"
}

main() {
    local cmd=${1:-}
    [ $# -gt 0 ] && shift
    case $cmd in
        start) start ;;
        stop) use_dir; stop ;;
        status) status ;;
        exec) run_exec "$@" ;;
        *) bad_input "usage: $0 start|stop|status|exec CMD [ARG...]" ;;
    esac
}

# Sourced (the unit tests call its functions), it only defines them.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
