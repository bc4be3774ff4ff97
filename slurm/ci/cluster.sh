#!/usr/bin/env bash
# A real Slurm cluster of several nodes on this one machine, for CI, for trying multi-node
# checks by hand, and on a lent GPU machine for running every batch script as a centre does
# (shared/SLURM_CI.md says what is known to work; docs/reframe.md, "The CI Slurm cluster").
#
#   slurm/ci/cluster.sh start          # (re)start: stop, wipe the state folder, start
#   slurm/ci/cluster.sh status         # sinfo with each node's GPUs; exit 1 when not up
#   slurm/ci/cluster.sh exec CMD...    # run CMD against the cluster (beside node n1)
#   slurm/ci/cluster.sh stop           # stop everything; never fails when nothing runs
#   slurm/ci/cluster.sh kill NODE [--all]  # a fault: NODE's slurmd killed (--all: the node's
#                                      # every process, as a node that fails)
#   slurm/ci/cluster.sh download DIR   # where apt works: the Debian packages to carry to a
#                                      # machine without Slurm or internet (MEMPATH_SLURM_DEBS)
#
# Shape: one network namespace per node (mempath-n1, mempath-n2, ...), two joined by one
# veth pair, more by a bridge in a namespace of its own (mempath-net), in a private /24 with
# no default route (nothing leaves the machine); /etc/netns/<ns>/hosts names every node.
# One munged (own key and socket in the state folder); slurmctld and slurmd n1 in
# mempath-n1, slurmd nK in mempath-nK, each in its own UTS namespace with its own hostname.
# Every node describes the machine's real cores: they share them, so timings taken on this
# cluster are functional only. slurm.conf and cgroup.conf come from the templates beside
# this script. No accounting: ReFrame uses its `squeue` scheduler.
#
# GPUs (MEMPATH_SLURM_GPUS=auto): the machine's /dev/nvidiaN are the nodes' gres (gres.conf
# File=), split in equal consecutive shares (4 GPUs, 2 nodes: n1 0-1, n2 2-3); with fewer
# GPUs than nodes every node lists all of them (the nodes share them: functional runs
# only; `start` says so and writes `shared` in the layout). MEMPATH_SLURM_FENCE=nK: node nK
# lists one GPU less (its last), as a node that lost one: nothing on the card is touched.
# No cgroups: what hides a GPU from a job is CUDA_VISIBLE_DEVICES. Slurm sets it for a step
# that was given GPUs; a task prolog gives every other task its node's own GPUs (the node's
# hardware, as a centre's node without device constraints shows it), an empty list on a
# node with none.
#
# `exec` runs CMD in mempath-n1 with hostname n1 (ReFrame's site_configs/ci.py selects
# itself there), SLURM_CONF set, and Open MPI allowed to run as root without binding.
#
# Needs root (namespaces, daemons as root). Installs what is missing with apt-get, or, with
# MEMPATH_SLURM_DEBS, unpacks Debian 12's packages from that folder (`dpkg -x`, into the state
# folder) and runs them from there: the daemons with LD_LIBRARY_PATH, the client commands
# through wrappers in STATE/bin that hand the library path to the dynamic loader alone (so
# nothing of it reaches a job's environment), munged as root where there is no user munge.
# Debian's PMIx plugin opens libpmix by its install path; there, that path in a copy of the
# plugin is rewritten to the unpacked PMIx (STATE/pmix, a path no longer than Debian's).
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
#   MEMPATH_SLURM_NODES    number of nodes, 1 to 16 [2]
#   MEMPATH_SLURM_GPUS     auto: the machine's GPUs as gres (above); none: no gres [auto]
#   MEMPATH_SLURM_FENCE    a node (nK) whose gres lists one GPU less [none]
#   MEMPATH_SLURM_DEBS     folder of Debian 12 .deb files (`download`): used instead of apt
#   MEMPATH_SLURM_NET      first three octets of the private /24 [10.77.42]
#   MEMPATH_SLURM_TIMEOUT  seconds start waits for the nodes to be idle [60]
#   MEMPATH_SLURM_CPUS     CPUs per node instead of the machine's layout (`slurmd -C`)
#   MEMPATH_SLURM_DEV      where the GPUs' device files are [/dev] (tests use fake ones)
#   MEMPATH_SLURM_HEALTHCHECK  a HealthCheckProgram (absolute path) that slurmd runs on each
#                          idle node every MEMPATH_SLURM_HEALTHCHECK_INTERVAL seconds [none; 60]
set -euo pipefail
# `&` in a ${var//pattern/replacement} replacement stays literal (bash 5.2 made it special).
shopt -u patsub_replacement 2>/dev/null || true

HERE=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
NET=${MEMPATH_SLURM_NET:-10.77.42}
TIMEOUT=${MEMPATH_SLURM_TIMEOUT:-60}
NODE_COUNT=${MEMPATH_SLURM_NODES:-2}
GPU_MODE=${MEMPATH_SLURM_GPUS:-auto}
FENCE=${MEMPATH_SLURM_FENCE:-}
DEBS=${MEMPATH_SLURM_DEBS:-}
DEV=${MEMPATH_SLURM_DEV:-/dev}
HEALTH=${MEMPATH_SLURM_HEALTHCHECK:-}
HEALTH_INTERVAL=${MEMPATH_SLURM_HEALTHCHECK_INTERVAL:-60}
NODES=(n1 n2)  # set from NODE_COUNT by start, from the state folder by the other commands
MARKER=.mempath-slurm-cluster
# Where the state folder in use is written down (root-only /run: no one else can plant it).
RECORD=/run/mempath-slurm-cluster.path
# The unpacked PMIx, by a path short enough for Debian's plugin (unpack_debs).
PMIX_LINK=/run/mempath-slurm-pmix
DIR=  # the state folder; set by use_dir or new_dir
CONF=
PACKAGES=(slurm-wlm munge openmpi-bin libopenmpi-dev libpmix2 iproute2 util-linux procps)
# What `download` fetches for MEMPATH_SLURM_DEBS: Debian 12's Slurm, munge, PMIx and
# iproute2 with every library they need that an Ubuntu 24.04 or Debian image may lack (the
# unpacked ones are used by these programs alone, so a library twice costs nothing).
DEB_PACKAGES=(slurmd slurmctld slurm-client slurm-wlm-basic-plugins munge libmunge2 libpmix2
              iproute2 libhwloc15 libhwloc-plugins liblz4-1 libnuma1 libreadline8 libdbus-1-3
              libjson-c5 liblua5.1-0 libyaml-0-2 libgcrypt20 libgpg-error0 libevent-core-2.1-7
              libevent-pthreads-2.1-7 libbpf1 libbsd0 libcap2 libdb5.3 libelf1 libmnl0
              libselinux1 libtirpc3 libxtables12 libmd0 libpcre2-8-0 libltdl7 libudev1)
# Debian's install path of libpmix, compiled into its mpi_pmix plugins.
DEBIAN_PMIX=/usr/lib/x86_64-linux-gnu/pmix2/lib
SBIN=  # where slurmd, slurmctld and slurmstepd are: empty for PATH; STATE/sbin with debs
LIBS=  # the library path of the unpacked packages (debs only)

say() { echo "cluster.sh: $*"; }
die() { echo "cluster.sh: $*" >&2; exit 1; }
bad_input() { echo "cluster.sh: $*" >&2; exit 2; }
ns() { echo "mempath-$1"; }

need_root() { [ "$(id -u)" -eq 0 ] || die "must run as root (network namespaces, daemons)"; }

check_settings() {
    [[ $TIMEOUT =~ ^[0-9]+$ ]] || bad_input "MEMPATH_SLURM_TIMEOUT must be a number of seconds"
    [[ $NODE_COUNT =~ ^[1-9][0-9]?$ ]] && ((NODE_COUNT <= 16)) ||
        bad_input "MEMPATH_SLURM_NODES=$NODE_COUNT; valid: a number of nodes from 1 to 16"
    [[ $GPU_MODE == auto || $GPU_MODE == none ]] ||
        bad_input "MEMPATH_SLURM_GPUS=$GPU_MODE; valid: auto (the machine's GPUs as gres) or none"
    if [ -n "$FENCE" ]; then
        [[ $FENCE =~ ^n([1-9][0-9]?)$ ]] && ((${BASH_REMATCH[1]} <= NODE_COUNT)) ||
            bad_input "MEMPATH_SLURM_FENCE=$FENCE; valid: a node of this cluster, n1 to n$NODE_COUNT"
    fi
    if [ -n "$HEALTH" ]; then
        [[ $HEALTH =~ ^/[A-Za-z0-9._/-]+$ ]] && [ -x "$HEALTH" ] ||
            bad_input "MEMPATH_SLURM_HEALTHCHECK=$HEALTH; valid: the absolute path of an executable health check (slurm/healthcheck.sh)"
    fi
    [[ $HEALTH_INTERVAL =~ ^[1-9][0-9]*$ ]] ||
        bad_input "MEMPATH_SLURM_HEALTHCHECK_INTERVAL=$HEALTH_INTERVAL; valid: whole seconds > 0"
    if [ -n "$DEBS" ]; then
        [[ $DEBS =~ ^/[A-Za-z0-9._/-]+$ ]] && [ -d "$DEBS" ] && compgen -G "$DEBS/slurmd_*.deb" >/dev/null ||
            bad_input "MEMPATH_SLURM_DEBS=$DEBS; valid: an absolute folder holding the .deb files of '$0 download DIR'"
    fi
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

# download DIR: the .deb files of DEB_PACKAGES into DIR, for MEMPATH_SLURM_DEBS on a machine
# without internet (apt-get download: no root needed, nothing installed here).
download() {
    [ $# -eq 1 ] || bad_input "usage: $0 download DIR"
    mkdir -p -- "$1" && cd -- "$1" || die "cannot write to $1"
    apt-get download "${DEB_PACKAGES[@]}" >/dev/null || die "apt-get download failed (is this Debian 12 with its package lists?)"
    say "$(ls -1 ./*.deb | wc -l) packages in $PWD; on the other machine: MEMPATH_SLURM_DEBS=$PWD $0 start"
}

# unpack_debs: MEMPATH_SLURM_DEBS's packages unpacked into STATE/pkg. The daemons run
# from STATE/sbin under their plain names (Debian names them slurmd-wlm...), with LIBS as
# their library path; each client command gets a wrapper in STATE/bin that runs it through
# the dynamic loader with that path (`--library-path`), so the path never enters the
# environment a job inherits from sbatch or srun.
unpack_debs() {
    local pkg=$DIR/pkg f name loader
    mkdir -p "$pkg" "$DIR/bin" "$DIR/sbin"
    for f in "$DEBS"/*.deb; do
        dpkg-deb -x "$f" "$pkg" || die "cannot unpack $f (dpkg-deb)"
    done
    LIBS=$pkg/usr/lib/x86_64-linux-gnu:$pkg/lib/x86_64-linux-gnu:$pkg/usr/lib/x86_64-linux-gnu/slurm-wlm:$pkg$DEBIAN_PMIX
    loader=$(readlink -f /lib64/ld-linux-x86-64.so.2) || die "no dynamic loader at /lib64/ld-linux-x86-64.so.2"
    for f in "$pkg"/usr/bin/* "$pkg"/bin/ip; do
        [ -f "$f" ] && [ -x "$f" ] || continue
        name=${f##*/}
        printf '#!/bin/sh\nexec %s --library-path %s %s "$@"\n' "$loader" "$LIBS" "$f" > "$DIR/bin/$name"
        chmod 0755 "$DIR/bin/$name"
    done
    for name in slurmd slurmctld slurmstepd; do
        [ -x "$pkg/usr/sbin/$name-wlm" ] || die "no $name-wlm in $DEBS (slurmd, slurmctld packages)"
        ln -s "$pkg/usr/sbin/$name-wlm" "$DIR/sbin/$name"
    done
    # Debian's PMIx plugin opens "$DEBIAN_PMIX/libpmix.so"; this copy opens the unpacked one.
    local plugin=$pkg/usr/lib/x86_64-linux-gnu/slurm-wlm/mpi_pmix_v4.so
    mkdir -p "$DIR/pmix"
    ln -s "$pkg$DEBIAN_PMIX/libpmix.so.2" "$DIR/pmix/libpmix.so"
    ln -sfn "$DIR/pmix" "$PMIX_LINK"
    python3 - "$plugin" "$DEBIAN_PMIX" "$PMIX_LINK" <<'PY' || die "cannot point $plugin at the unpacked PMIx"
import sys
path, old, new = sys.argv[1], sys.argv[2].encode(), sys.argv[3].encode()
data = open(path, "rb").read()
old_z = old + b"\0"
assert data.count(old_z) == 1 and len(new) <= len(old), "the plugin's PMIx path is not where expected"
open(path, "wb").write(data.replace(old_z, new + b"\0" * (len(old) - len(new) + 1)))
PY
    SBIN=$DIR/sbin
    export PATH=$DIR/bin:$PATH
}

# daemon_env: the environment the unpacked daemons need (nothing with apt's packages).
daemon_env() {
    [ -n "$LIBS" ] || return 0
    local pkg=$DIR/pkg
    echo "LD_LIBRARY_PATH=$LIBS"
    # PMIx and hwloc find their plugins under their install prefix: the unpacked one.
    echo "PMIX_INSTALL_PREFIX=$pkg${DEBIAN_PMIX%/lib}"
    echo "HWLOC_PLUGINS_PATH=$pkg/usr/lib/x86_64-linux-gnu/hwloc"
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

# set_nodes N: NODES=(n1 ... nN).
set_nodes() {
    local i
    NODES=()
    for ((i = 1; i <= $1; i++)); do NODES+=("n$i"); done
}

# load_layout: NODES and, for unpacked packages, PATH and LIBS of the cluster that runs (or
# ran last), from its state folder; the default two nodes where it has none.
load_layout() {
    [ -n "$DIR" ] && [ -f "$DIR/etc/nodes" ] || return 0
    mapfile -t NODES < "$DIR/etc/nodes"
    if [ -d "$DIR/bin" ]; then
        export PATH=$DIR/bin:$PATH
    fi
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
    local n specs=()
    load_layout
    for n in "${NODES[@]}"; do specs+=("slurmd-$n:slurmd"); done
    if [ -n "$DIR" ]; then
        stop_recorded "${specs[@]}" slurmctld:slurmctld
    fi
    kill_netns_pids
    if [ -n "$DIR" ]; then
        stop_recorded munged:munged
    fi
    for n in "${NODES[@]}" net; do
        ip netns del "$(ns "$n")" 2>/dev/null || true
        rm -rf "/etc/netns/$(ns "$n")"
    done
    rmdir /etc/netns 2>/dev/null || true
    [ -L "$PMIX_LINK" ] && rm -f "$PMIX_LINK"
    return 0
}

# network: a namespace per node with the hosts file naming them all; two nodes joined by a
# veth pair, more (or one) through a bridge in the namespace mempath-net.
network() {
    local i n hosts
    hosts=$(printf '127.0.0.1 localhost\n'; for i in "${!NODES[@]}"; do printf '%s.%d %s\n' "$NET" $((i + 1)) "${NODES[$i]}"; done)
    for n in "${NODES[@]}"; do
        ip netns add "$(ns "$n")"
        ip -n "$(ns "$n")" link set lo up
        mkdir -p "/etc/netns/$(ns "$n")"
        printf '%s\n' "$hosts" > "/etc/netns/$(ns "$n")/hosts"
    done
    if [ ${#NODES[@]} -eq 2 ]; then
        ip link add mp-n1 netns "$(ns n1)" type veth peer name mp-n2 netns "$(ns n2)"
    else
        ip netns add "$(ns net)"
        ip -n "$(ns net)" link add mp-br type bridge || die "cannot make a bridge for ${#NODES[@]} nodes (kernel without bridge support?); valid: MEMPATH_SLURM_NODES=2"
        ip -n "$(ns net)" link set mp-br up
        for n in "${NODES[@]}"; do
            ip link add "mp-$n" netns "$(ns "$n")" type veth peer name "br-$n" netns "$(ns net)"
            ip -n "$(ns net)" link set "br-$n" master mp-br
            ip -n "$(ns net)" link set "br-$n" up
        done
    fi
    for i in "${!NODES[@]}"; do
        n=${NODES[$i]}
        ip -n "$(ns "$n")" addr add "$NET.$((i + 1))/24" dev "mp-$n"
        ip -n "$(ns "$n")" link set "mp-$n" up
    done
}

# The node lines' hardware: the machine's own layout, every node alike.
node_hw() {
    if [ -n "${MEMPATH_SLURM_CPUS:-}" ]; then
        echo "CPUs=$MEMPATH_SLURM_CPUS"
        return
    fi
    local -a envs=()
    mapfile -t envs < <(daemon_env)
    env "${envs[@]}" "${SBIN:+$SBIN/}slurmd" -C | head -n1 | tr ' ' '\n' |
        grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore|RealMemory)=' |
        tr '\n' ' '
}

# machine_gpus: the numbers N of the machine's /dev/nvidiaN, in order (none with
# MEMPATH_SLURM_GPUS=none).
machine_gpus() {
    [ "$GPU_MODE" = auto ] || return 0
    local f
    for f in "$DEV"/nvidia[0-9]*; do
        [[ ${f##*/} =~ ^nvidia([0-9]+)$ ]] && [ -e "$f" ] && echo "${BASH_REMATCH[1]}"
    done | sort -n
}

# gpu_layout: one line per node, "NODE GPU..." (the device numbers it lists as gres):
# consecutive equal shares, or all of them on every node when there are fewer GPUs than
# nodes; the fenced node without its last one.
gpu_layout() {
    local gpus=() i per list
    mapfile -t gpus < <(machine_gpus)
    per=0
    [ ${#gpus[@]} -ge ${#NODES[@]} ] && per=$((${#gpus[@]} / ${#NODES[@]}))
    for i in "${!NODES[@]}"; do
        if [ ${#gpus[@]} -eq 0 ]; then
            list=()
        elif [ "$per" -eq 0 ]; then
            list=("${gpus[@]}")
        else
            list=("${gpus[@]:$((i * per)):$per}")
        fi
        if [ "${NODES[$i]}" = "$FENCE" ] && [ ${#list[@]} -gt 0 ]; then
            unset 'list[-1]'
        fi
        echo "${NODES[$i]}${list[*]:+ ${list[*]}}"
    done
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
    local n hw lines="" gpus gres layout shared=no i
    for n in "${NODES[@]}"; do mkdir -p "$DIR/spool/slurmd-$n" "$DIR/tmp/$n"; done
    mkdir -p "$DIR"/{etc,state,run,pids,log}
    printf '%s\n' "${NODES[@]}" > "$DIR/etc/nodes"
    hw=$(node_hw)
    [[ $hw =~ ^[A-Za-z0-9=\ ]+$ ]] || die "unexpected node hardware from slurmd -C: '$hw'"
    layout=$(gpu_layout)
    printf '%s\n' "$layout" > "$DIR/etc/gpus"
    : > "$DIR/etc/gres.conf"
    for i in "${!NODES[@]}"; do
        n=${NODES[$i]}
        read -r -a gpus <<< "$(sed -n "$((i + 1))p" <<< "$layout")"
        gpus=("${gpus[@]:1}")
        gres=
        if [ ${#gpus[@]} -gt 0 ]; then
            gres=" Gres=gpu:${#gpus[@]}"
            printf "NodeName=$n Name=gpu File=$DEV/nvidia%s\n" "${gpus[@]}" >> "$DIR/etc/gres.conf"
        fi
        # The task prolog's list for this node: its GPUs as CUDA numbers them.
        (IFS=,; printf '%s\n' "${gpus[*]}") > "$DIR/etc/gpus-$n"
        lines+="NodeName=$n NodeAddr=$NET.$((i + 1)) $hw$gres State=UNKNOWN"$'\n'
    done
    if [ -s "$DIR/etc/gres.conf" ] && [ "$(machine_gpus | wc -l)" -lt ${#NODES[@]} ]; then
        shared=yes
    fi
    echo "$shared" > "$DIR/etc/shared"
    local nodelist
    nodelist=$(IFS=,; echo "${NODES[*]}")
    render "$HERE/slurm.conf.in" DIR="$DIR" ADDR1="$NET.1" NODE_LINES="${lines%$'\n'}" NODE_LIST="$nodelist" \
        GRES_TYPES="$( [ -s "$DIR/etc/gres.conf" ] && echo 'GresTypes=gpu' || echo '# GresTypes: no GPUs')" \
        HEALTH_CHECK="$( [ -n "$HEALTH" ] && printf 'HealthCheckProgram=%s\nHealthCheckInterval=%s\nHealthCheckNodeState=IDLE' \
            "$HEALTH" "$HEALTH_INTERVAL" || echo '# HealthCheckProgram: none (MEMPATH_SLURM_HEALTHCHECK)')" \
        PLUGIN_DIR="$( [ -n "$SBIN" ] && echo "PluginDir=$DIR/pkg/usr/lib/x86_64-linux-gnu/slurm-wlm" || echo '# PluginDir: the packages'"'"' own')" \
        > "$CONF"
    cp "$HERE/cgroup.conf.in" "$DIR/etc/cgroup.conf"
    render "$HERE/task_prolog.sh.in" DIR="$DIR" > "$DIR/etc/task_prolog.sh"
    chmod 0755 "$DIR/etc/task_prolog.sh"
    : > "$DIR/etc/plugstack.conf"
}

munge_start() {
    local m=$DIR/munge i pid user=munge
    # Unpacked packages made no user munge: munged runs as root then (--force allows it).
    id munge >/dev/null 2>&1 || user=root
    if [ $user = munge ]; then
        # munged runs as user munge: its group may pass through the state folder to its own.
        chgrp munge "$DIR"
        chmod 0710 "$DIR"
    fi
    # The key is never readable by anyone but its owner, not even for a moment.
    (umask 077 && mkdir "$m" && dd if=/dev/urandom of="$m/munge.key" bs=1024 count=1 status=none)
    chown -R "$user:$user" "$m"
    chmod 400 "$m/munge.key"
    local -a munged=(/usr/sbin/munged)
    [ -n "$SBIN" ] && munged=(env "LD_LIBRARY_PATH=$LIBS" "$DIR/pkg/usr/sbin/munged")
    runuser -u "$user" -- "${munged[@]}" --force --socket="$m/munge.socket" \
        --key-file="$m/munge.key" --pid-file="$m/munged.pid" --log-file="$m/munged.log" \
        --seed-file="$m/munged.seed" </dev/null >"$DIR/log/munged.out" 2>&1 ||
        fail "munged did not start"
    for i in $(seq 50); do
        munge -n -S "$m/munge.socket" 2>/dev/null | unmunge -S "$m/munge.socket" >/dev/null 2>&1 &&
            break
        [ "$i" -lt 50 ] || fail "munge does not answer on $m/munge.socket"
        sleep 0.1
    done
    # User munge writes this pid file: trust it only for a munged of that user, then record
    # it in the root-only folder.
    pid=$(cat "$m/munged.pid" 2>/dev/null || true)
    [[ $pid =~ ^[0-9]+$ ]] && running "$pid" munged && [ "$(stat -c %U "/proc/$pid")" = $user ] &&
        record munged "$pid" || fail "munged did not write a pid file naming itself"
}

# daemon NODE NAME CMD...: CMD in NODE's namespace with hostname NODE, in the background,
# its pid (the same process after exec) in pids/NAME.pid, and recorded as NAME.
daemon() {
    local node=$1 name=$2
    shift 2
    local -a envs=()
    mapfile -t envs < <(daemon_env)
    setsid ip netns exec "$(ns "$node")" unshare --uts \
        sh -c 'echo $$ > "$1"; hostname "$2"; shift 2; exec "$@"' \
        sh "$DIR/pids/$name.pid" "$node" env "${envs[@]}" "$@" </dev/null >"$DIR/log/$name.out" 2>&1 &
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
    [ -n "$DEBS" ] || install_missing
    use_dir
    stop
    set_nodes "$NODE_COUNT"
    new_dir
    hash -r  # the old state folder's client wrappers may be gone with it
    [ -z "$DEBS" ] || unpack_debs
    configure
    network
    munge_start
    export SLURM_CONF=$CONF
    daemon n1 slurmctld "${SBIN:+$SBIN/}slurmctld" -D -f "$CONF"
    local deadline=$((SECONDS + TIMEOUT)) states n want stepd=()
    until in_n1 scontrol ping >/dev/null 2>&1; do
        alive slurmctld slurmctld || fail "slurmctld exited"
        [ $SECONDS -lt $deadline ] || fail "slurmctld does not answer after ${TIMEOUT} s"
        sleep 0.2
    done
    # slurmd starts slurmstepd from its compiled-in folder unless told where it is.
    [ -n "$SBIN" ] && stepd=(-d "$SBIN/slurmstepd")
    for n in "${NODES[@]}"; do
        daemon "$n" "slurmd-$n" "${SBIN:+$SBIN/}slurmd" -D -f "$CONF" -N "$n" "${stepd[@]}"
    done
    want=$(printf 'idle %.0s' "${NODES[@]}")
    while :; do
        states=$(in_n1 sinfo -h -N -o %t 2>/dev/null | sort | tr '\n' ' ' || true)
        [ "$states" = "$want" ] && break
        alive slurmctld slurmctld || fail "slurmctld exited"
        for n in "${NODES[@]}"; do
            alive "slurmd-$n" slurmd || fail "slurmd-$n exited"
        done
        [ $SECONDS -lt $deadline ] || fail "nodes not idle after ${TIMEOUT} s (sinfo: ${states:-nothing})"
        sleep 0.5
    done
    say "up in $((SECONDS - t0)) s: nodes ${NODES[*]} ($NET.1-${#NODES[@]}), partition ci; state in $DIR"
    describe_gpus
}

# describe_gpus: each node's GPUs, and whether the nodes share them.
describe_gpus() {
    local line
    [ -s "$DIR/etc/gres.conf" ] || { say "no GPUs as gres (MEMPATH_SLURM_GPUS=$GPU_MODE)"; return 0; }
    while read -r line; do
        say "node ${line%% *}: GPUs $( [ "$line" = "${line%% *}" ] && echo none || echo "${line#* }")"
    done < "$DIR/etc/gpus"
    if [ "$(cat "$DIR/etc/shared")" = yes ]; then
        say "the nodes share the machine's GPUs: runs here are functional, their timings are not a node's"
    fi
}

status() {
    need_root
    use_dir
    load_layout
    [ -e "/run/netns/$(ns n1)" ] && [ -n "$DIR" ] || { say "not running"; return 1; }
    SLURM_CONF=$CONF in_n1 sinfo -N -o '%N %t %c %G'
}

run_exec() {
    need_root
    [ $# -gt 0 ] || bad_input "usage: $0 exec CMD [ARG...]"
    use_dir
    load_layout
    [ -e "/run/netns/$(ns n1)" ] && [ -n "$DIR" ] && [ -f "$CONF" ] ||
        die "the cluster is not running (slurm/ci/cluster.sh start)"
    export SLURM_CONF=$CONF
    export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
    export OMPI_MCA_hwloc_base_binding_policy=none
    exec ip netns exec "$(ns n1)" unshare --uts sh -c 'hostname n1; exec "$@"' sh "$@"
}

# kill_node NODE [--all]: a fault as a cluster has it: the node's slurmd killed (SIGKILL);
# with --all also every process in the node's namespace (its job steps), as when the node
# itself fails. Slurm notices after SlurmdTimeout.
kill_node() {
    need_root
    use_dir
    load_layout
    [ $# -ge 1 ] && [[ " ${NODES[*]} " == *" $1 "* ]] ||
        bad_input "usage: $0 kill NODE [--all]; valid nodes: ${NODES[*]}"
    local node=$1 pid
    pid=$(recorded "slurmd-$node" slurmd) || die "slurmd of $node is not running"
    kill -KILL "$pid"
    say "killed slurmd of $node (pid $pid)"
    if [ "${2:-}" = --all ]; then
        local pids
        mapfile -t pids < <(ip netns pids "$(ns "$node")" 2>/dev/null || true)
        [ ${#pids[@]} -gt 0 ] && kill -KILL "${pids[@]}" 2>/dev/null
        say "killed the ${#pids[@]} other processes of $node"
    fi
    return 0
}

main() {
    local cmd=${1:-}
    [ $# -gt 0 ] && shift
    case $cmd in
        start) start ;;
        stop) use_dir; stop ;;
        status) status ;;
        exec) run_exec "$@" ;;
        download) download "$@" ;;
        kill) kill_node "$@" ;;
        *) bad_input "usage: $0 start|stop|status|exec CMD [ARG...]|kill NODE [--all]|download DIR" ;;
    esac
}

# Sourced (the unit tests call its functions), it only defines them.
if [ "${BASH_SOURCE[0]}" = "$0" ]; then
    main "$@"
fi
