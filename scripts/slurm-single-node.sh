#!/bin/bash
# A one-node SLURM on this machine for testing `oltpscope sweep --emit slurm` and
# `oltpscope merge` (crates/cli/tests/all/slurm.rs, OLTPSCOPE_SLURM_TESTS=1): installs
# Debian's slurm-wlm and munge if missing, writes a minimal slurm.conf naming this
# host, and starts munged, slurmctld and slurmd if they are not running. Needs root.
# Idempotent: a second run only checks that the node is up.
set -euo pipefail

if ! command -v slurmctld >/dev/null || ! command -v munged >/dev/null; then
    export DEBIAN_FRONTEND=noninteractive
    apt-get update
    apt-get install -y slurm-wlm munge
fi

host=$(hostname -s)
cpus=$(nproc)
mem_mb=$(( $(awk '/MemTotal/ {print $2}' /proc/meminfo) / 1024 - 1024 ))
conf=/etc/slurm/slurm.conf
mkdir -p /etc/slurm /var/spool/slurmctld /var/spool/slurmd /var/log/slurm
if [ ! -f "$conf" ] || ! grep -q "^# oltpscope single node" "$conf"; then
    if [ -f "$conf" ]; then
        echo "$conf exists and is not ours: leaving it, refusing to go on" >&2
        exit 2
    fi
    cat > "$conf" <<CONF
# oltpscope single node (scripts/slurm-single-node.sh)
ClusterName=oltpscope
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
SchedulerType=sched/backfill
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
ReturnToService=2
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$host NodeAddr=127.0.0.1 CPUs=$cpus RealMemory=$mem_mb State=UNKNOWN
PartitionName=local Nodes=$host Default=YES MaxTime=INFINITE State=UP
CONF
fi

if [ ! -s /etc/munge/munge.key ]; then
    if command -v mungekey >/dev/null; then
        mungekey --create --keyfile=/etc/munge/munge.key
    else
        dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key 2>/dev/null
    fi
fi
chown munge:munge /etc/munge/munge.key
chmod 400 /etc/munge/munge.key
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if ! pgrep -x munged >/dev/null; then
    runuser -u munge -- /usr/sbin/munged
fi
pgrep -x slurmctld >/dev/null || slurmctld
pgrep -x slurmd >/dev/null || slurmd

for _ in $(seq 1 30); do
    state=$(sinfo -h -N -o %t 2>/dev/null | head -1 || true)
    case "$state" in
        idle|mix|alloc) echo "slurm: node $host $state"; exit 0 ;;
        down*|drain*) scontrol update nodename="$host" state=resume 2>/dev/null || true ;;
    esac
    sleep 1
done
echo "slurm: node $host did not come up (state '${state:-none}'; see /var/log/slurm)" >&2
exit 1
