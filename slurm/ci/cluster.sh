#!/usr/bin/env bash
# A real two-node Slurm cluster on this one machine, for CI and for trying multi-node
# checks by hand (issue 5; shared/SLURM_CI.md says what is known to work).
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
# Variables:
#   MEMPATH_SLURM_DIR      state folder (config, logs, spool, pid files); wiped by start
#                          [/tmp/mempath-slurm]
#   MEMPATH_SLURM_NET      first three octets of the private /24 [10.77.42]
#   MEMPATH_SLURM_TIMEOUT  seconds start waits for both nodes to be idle [60]
#   MEMPATH_SLURM_CPUS     CPUs per node instead of the machine's layout (`slurmd -C`)
set -euo pipefail

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
DIR=${MEMPATH_SLURM_DIR:-/tmp/mempath-slurm}
NET=${MEMPATH_SLURM_NET:-10.77.42}
TIMEOUT=${MEMPATH_SLURM_TIMEOUT:-60}
CONF=$DIR/etc/slurm.conf
NODES=(n1 n2)
MARKER=.mempath-slurm-cluster
PACKAGES=(slurm-wlm munge openmpi-bin libopenmpi-dev libpmix2 iproute2 util-linux procps)

say() { echo "cluster.sh: $*"; }
die() { echo "cluster.sh: $*" >&2; exit 1; }
ns() { echo "mempath-$1"; }

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, daemons)"; }

check_dir() {
    case $DIR in
        /*) ;;
        *) die "MEMPATH_SLURM_DIR must be an absolute path (is '$DIR')" ;;
    esac
    case ${DIR%/} in
        '' | /tmp | /var | /var/tmp | /home | /root | /usr | /etc | /opt | /run)
            die "MEMPATH_SLURM_DIR=$DIR is not a folder this script may wipe" ;;
    esac
    [[ $TIMEOUT =~ ^[0-9]+$ ]] || die "MEMPATH_SLURM_TIMEOUT must be a number of seconds"
    [[ ${MEMPATH_SLURM_CPUS:-1} =~ ^[1-9][0-9]*$ ]] || die "MEMPATH_SLURM_CPUS must be a positive number"
    [[ $NET =~ ^[0-9]+\.[0-9]+\.[0-9]+$ ]] || die "MEMPATH_SLURM_NET must be three octets, e.g. 10.77.42"
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

# stop_pids FILE:COMM...: stop the processes named in these pid files, each only if it
# still runs as COMM (a stale file names someone else's process, or none): TERM, then
# KILL after 10 s. Removes the files. Never fails.
stop_pids() {
    local spec file comm pid pids=() comms=() i j left
    for spec in "$@"; do
        file=${spec%:*} comm=${spec##*:}
        [ -f "$file" ] || continue
        pid=$(cat "$file" 2>/dev/null || true)
        rm -f "$file"
        [[ $pid =~ ^[0-9]+$ ]] && running "$pid" "$comm" || continue
        kill -TERM "$pid" 2>/dev/null || continue
        pids+=("$pid") comms+=("$comm")
    done
    for i in $(seq 50); do
        left=0
        for j in "${!pids[@]}"; do
            running "${pids[$j]}" "${comms[$j]}" && left=1
        done
        [ $left -eq 0 ] && return 0
        sleep 0.2
    done
    for j in "${!pids[@]}"; do
        running "${pids[$j]}" "${comms[$j]}" && kill -KILL "${pids[$j]}" 2>/dev/null
    done
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
    stop_pids "$DIR/pids/slurmd-n1.pid:slurmd" "$DIR/pids/slurmd-n2.pid:slurmd" \
        "$DIR/pids/slurmctld.pid:slurmctld"
    kill_netns_pids
    stop_pids "$DIR/munge/munged.pid:munged"
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

configure() {
    mkdir -p "$DIR"/{etc,state,run,pids,log,spool/slurmd-n1,spool/slurmd-n2,tmp/n1,tmp/n2}
    local hw
    hw=$(node_hw)
    sed -e "s|@DIR@|$DIR|g" -e "s|@ADDR1@|$NET.1|g" -e "s|@ADDR2@|$NET.2|g" \
        -e "s|@NODE_HW@|$hw|g" "$HERE/slurm.conf.in" > "$CONF"
    cp "$HERE/cgroup.conf.in" "$DIR/etc/cgroup.conf"
    : > "$DIR/etc/plugstack.conf"
}

munge_start() {
    local m=$DIR/munge i
    mkdir -p "$m"
    dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none
    chown -R munge:munge "$m"
    chmod 755 "$m"
    chmod 400 "$m/munge.key"
    runuser -u munge -- /usr/sbin/munged --force --socket="$m/munge.socket" \
        --key-file="$m/munge.key" --pid-file="$m/munged.pid" --log-file="$m/munged.log" \
        --seed-file="$m/munged.seed" </dev/null >"$DIR/log/munged.out" 2>&1 ||
        fail "munged did not start"
    for i in $(seq 50); do
        munge -n -S "$m/munge.socket" 2>/dev/null | unmunge -S "$m/munge.socket" >/dev/null 2>&1 &&
            return 0
        sleep 0.1
    done
    fail "munge does not answer on $m/munge.socket"
}

# daemon NODE NAME CMD...: CMD in NODE's namespace with hostname NODE, in the background,
# its pid (the same process after exec) in pids/NAME.pid.
daemon() {
    local node=$1 name=$2
    shift 2
    setsid ip netns exec "$(ns "$node")" unshare --uts \
        sh -c 'echo $$ > "$1"; hostname "$2"; shift 2; exec "$@"' \
        sh "$DIR/pids/$name.pid" "$node" "$@" </dev/null >"$DIR/log/$name.out" 2>&1 &
    local i
    for i in $(seq 100); do
        [ -s "$DIR/pids/$name.pid" ] && return 0
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
    local pid
    pid=$(cat "$DIR/pids/$1.pid" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ ]] && running "$pid" "$2"
}

start() {
    need_root
    check_dir
    local t0=$SECONDS
    install_missing
    stop
    if [ -e "$DIR" ]; then
        [ -e "$DIR/$MARKER" ] || [ -z "$(ls -A "$DIR")" ] ||
            die "$DIR exists and is not a cluster state folder; remove it or set MEMPATH_SLURM_DIR"
        rm -rf "$DIR"
    fi
    mkdir -p "$DIR"
    touch "$DIR/$MARKER"
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
    [ -e "/run/netns/$(ns n1)" ] || { say "not running"; return 1; }
    SLURM_CONF=$CONF in_n1 sinfo -N -l
}

run_exec() {
    need_root
    [ $# -gt 0 ] || die "usage: $0 exec CMD [ARG...]"
    [ -e "/run/netns/$(ns n1)" ] && [ -f "$CONF" ] ||
        die "the cluster is not running (slurm/ci/cluster.sh start)"
    export SLURM_CONF=$CONF
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_hwloc_base_binding_policy=none
    exec ip netns exec "$(ns n1)" unshare --uts sh -c 'hostname n1; exec "$@"' sh "$@"
}

cmd=${1:-}
[ $# -gt 0 ] && shift
case $cmd in
    start) start ;;
    stop) check_dir; stop ;;
    status) status ;;
    exec) run_exec "$@" ;;
    *) echo "usage: $0 start|stop|status|exec CMD [ARG...]" >&2; exit 2 ;;
esac
