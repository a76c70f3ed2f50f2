#!/usr/bin/env bash
# A real single-node Slurm on this machine for the cluster test (scripts/test-slurm.sh):
# Debian's own packages (munge, slurmctld, slurmd, slurm-client), root, no systemd, no cgroups.
#
#   slurm-local.sh [start]   install the packages if missing, write a one-node slurm.conf,
#                            start munged, slurmctld and slurmd, wait until the node takes jobs
#   slurm-local.sh stop      cancel what is still queued, stop only the daemons this script
#                            started (their PIDs are recorded in /run/fbo-slurm-local)
#
# A daemon that was already running (a system munged, say) is used and left alone, and a
# slurm.conf this script did not write is never overwritten: it stops and says so.
set -euo pipefail

action=${1:-start}
state=/run/fbo-slurm-local
conf_dir=/etc/slurm
conf=$conf_dir/slurm.conf
spool=/var/spool/fbo-slurm-local
logs=/var/log/fbo-slurm-local
mark="# written by fbo's scripts/slurm-local.sh"
export PATH=/usr/local/sbin:/usr/local/bin:/usr/sbin:/usr/bin:/sbin:/bin:$PATH
# The short host name without DNS (hostname -s fails when the name does not resolve).
node=$(uname -n)
node=${node%%.*}

say() { printf 'slurm-local: %s\n' "$*" >&2; }
die() {
    say "ERROR: $*"
    exit 1
}
[ "$(id -u)" = 0 ] || die "needs root (it installs Debian packages and starts daemons)"

# A PID that runs and is not a zombie.
running() {
    local st
    st=$(sed -n 's/^[0-9]* (.*) \([A-Za-z]\).*/\1/p' "/proc/$1/stat" 2>/dev/null) || return 1
    [ -n "$st" ] && [ "$st" != Z ] && [ "$st" != X ]
}
# alive PIDFILE NAME: the PID in PIDFILE runs and its command is NAME.
alive() {
    local pid
    [ -s "$1" ] || return 1
    pid=$(cat "$1" 2>/dev/null) || return 1
    [[ $pid =~ ^[0-9]+$ ]] && running "$pid" && [ "$(cat "/proc/$pid/comm" 2>/dev/null)" = "$2" ]
}
# wait_for SECONDS COMMAND...: poll every 0.2 s.
wait_for() {
    local end=$(($(date +%s) + $1))
    shift
    until "$@"; do
        [ "$(date +%s)" -lt "$end" ] || return 1
        sleep 0.2
    done
}
munge_ok() { munge -n 2>/dev/null | unmunge >/dev/null 2>&1; }
node_ready() {
    case "$(sinfo -h -n "$node" -o '%T' 2>/dev/null | head -n1)" in
    idle | mixed | allocated | completing) return 0 ;;
    *) return 1 ;;
    esac
}

install_packages() {
    local c
    for c in munged munge unmunge slurmctld slurmd sbatch squeue sinfo scontrol scancel; do
        command -v "$c" >/dev/null 2>&1 || {
            say "installing munge slurmctld slurmd slurm-client (Debian packages, about 13 MB)"
            export DEBIAN_FRONTEND=noninteractive
            apt-get update -qq
            apt-get install -y -qq --no-install-recommends munge slurmctld slurmd slurm-client >/dev/null
            return 0
        }
    done
}

start_munge() {
    if munge_ok; then
        say "munged already running (not started here; left alone)"
        return 0
    fi
    # munged refuses a key that is not the munge user's with mode 0400.
    install -d -o munge -g munge -m 0700 /etc/munge
    if [ ! -s /etc/munge/munge.key ]; then
        mungekey --create --keyfile=/etc/munge/munge.key 2>/dev/null ||
            dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
    fi
    chown munge:munge /etc/munge/munge.key
    chmod 0400 /etc/munge/munge.key
    install -d -o munge -g munge -m 0755 /run/munge
    install -d -o munge -g munge -m 0700 /var/log/munge
    install -d -o munge -g munge -m 0711 /var/lib/munge
    rm -f /run/munge/munged.pid
    if command -v runuser >/dev/null 2>&1; then
        runuser -u munge -- munged
    else
        su -s /bin/sh munge -c munged
    fi
    wait_for 10 munge_ok || die "munged did not come up (see /var/log/munge/munged.log)"
    wait_for 5 test -s /run/munge/munged.pid || true
    cp /run/munge/munged.pid "$state/munged.pid"
}

write_conf() {
    # (A conf from the slurm-local.sh this one was modelled on counts as one of ours.)
    if [ -e "$conf" ] && ! head -n1 "$conf" | grep -qF "slurm-local.sh"; then
        die "$conf exists and was not written by this script; not overwriting it"
    fi
    local mem
    mem=$(awk '/^MemTotal:/ { printf "%d", $2 / 1024 * 0.9 }' /proc/meminfo)
    install -d -m 0755 "$conf_dir" "$spool/ctld" "$spool/d" "$logs"
    # kill_invalid_depend: a merge job whose afterok dependency failed is cancelled rather than
    # left pending (scripts/slurm-sweep.sh relies on it). batch_sched_delay=0: jobs start at once.
    cat >"$conf.tmp" <<EOF
$mark
ClusterName=fbo-local
SlurmctldHost=${node}(127.0.0.1)
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
MailProg=/bin/true
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
JobCompType=jobcomp/filetxt
JobCompLoc=${logs}/jobcomp.log
MinJobAge=300
SchedulerType=sched/backfill
DependencyParameters=kill_invalid_depend
SchedulerParameters=batch_sched_delay=0
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
KillWait=5
StateSaveLocation=${spool}/ctld
SlurmdSpoolDir=${spool}/d
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=${logs}/slurmctld.log
SlurmdLogFile=${logs}/slurmd.log
NodeName=${node} NodeAddr=127.0.0.1 CPUs=$(nproc) RealMemory=${mem} State=UNKNOWN
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
    mv "$conf.tmp" "$conf"
    chmod 0644 "$conf"
}

# start_daemon NAME PIDFILE ARGS...: the Slurm daemons fork and write PIDFILE themselves.
start_daemon() {
    local name=$1 pidfile=$2
    shift 2
    rm -f "$pidfile"
    "$name" "$@" || die "$name did not start (see $logs/$name.log)"
    wait_for 15 alive "$pidfile" "$name" || {
        tail -n 20 "$logs/$name.log" >&2 || true
        die "$name did not stay up"
    }
    cp "$pidfile" "$state/$name.pid"
}

do_start() {
    install -d -m 0755 "$state"
    install_packages
    if alive /run/slurmctld.pid slurmctld && alive /run/slurmd.pid slurmd; then
        say "slurmctld and slurmd already running; waiting for the node"
    else
        if alive /run/slurmctld.pid slurmctld || alive /run/slurmd.pid slurmd; then
            [ -s "$state/slurmctld.pid" ] || [ -s "$state/slurmd.pid" ] ||
                die "a Slurm daemon not started by this script is running; stop it first"
            do_stop
            install -d -m 0755 "$state"
        fi
        write_conf
        start_munge
        rm -rf "$spool/ctld" "$spool/d" # a clean start: no old jobs
        install -d -m 0755 "$spool/ctld" "$spool/d"
        start_daemon slurmctld /run/slurmctld.pid -c
        start_daemon slurmd /run/slurmd.pid
    fi
    if ! wait_for 60 node_ready; then
        # A node left down by an earlier unclean stop: resume it once.
        scontrol update NodeName="$node" State=RESUME >/dev/null 2>&1 || true
        wait_for 10 node_ready || {
            tail -n 20 "$logs/slurmctld.log" "$logs/slurmd.log" >&2 || true
            die "node $node not ready after 70 s"
        }
    fi
    echo "slurm ready"
}

# stop_one NAME: signal the PID recorded here, if it is still that daemon.
stop_one() {
    local f="$state/$1.pid" pid
    [ -s "$f" ] || return 0
    pid=$(cat "$f")
    if alive "$f" "$1"; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 150); do running "$pid" || break; sleep 0.2; done
        running "$pid" && kill -KILL "$pid" 2>/dev/null || true
        say "stopped $1 ($pid)"
    fi
    rm -f "$f"
}

do_stop() {
    if alive "$state/slurmctld.pid" slurmctld; then
        local ids
        ids=$(squeue -h -o '%A' 2>/dev/null | tr '\n' ' ' || true)
        if [ -n "${ids// /}" ]; then
            # shellcheck disable=SC2086 # one job id per word
            scancel $ids 2>/dev/null || true
            wait_for 15 sh -c '[ -z "$(squeue -h 2>/dev/null)" ]' || say "some jobs still listed at stop"
        fi
    fi
    stop_one slurmd
    stop_one slurmctld
    stop_one munged
    rmdir "$state" 2>/dev/null || true
}

case "$action" in
start) do_start ;;
stop) do_stop ;;
*) die "usage: $0 [start|stop]" ;;
esac
