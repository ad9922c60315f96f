#!/usr/bin/env bash
# A private, single-host Slurm for the live tests: munge + MariaDB + slurmdbd + slurmctld +
# one slurmd per node name, from Debian's packages (.ci/debian-packages.txt).
#
#   tests/slurm/cluster.sh start DIR     bring it up under DIR (DIR/env has SLURM_CONF=...)
#   tests/slurm/cluster.sh stop DIR      cancel its jobs, stop every daemon by its PID file
#
# Everything lives under DIR: configs, munge key and socket, database files and socket, state,
# spool, logs, PID files. Daemons listen on 127.0.0.1 only, on free ports picked at start
# (MariaDB on a unix socket only). Nothing system-wide is touched except that the daemons run
# as the munge and mysql users the packages created. Run as root (slurmd must be).
# Settings that make one host work: ../shared/data/slurm-real-run1/HOWTO.md.
set -euo pipefail

NODES=(tn01 tn02 tn03 tn04)
GPU_NODES=(tn03 tn04)
CLUSTER=reltest
SBIN=/usr/sbin

die() { echo "cluster.sh: $*" >&2; exit 1; }

stop_pids() { # pidfile...: TERM each PID, wait up to 15 s for all, then KILL the rest
  local f pid pids=()
  for f in "$@"; do
    [ -f "$f" ] || continue
    pid=$(cat "$f" 2>/dev/null || true)
    if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then kill "$pid" 2>/dev/null || true; pids+=("$pid"); fi
  done
  for _ in $(seq 1 75); do
    local alive=()
    for pid in "${pids[@]}"; do kill -0 "$pid" 2>/dev/null && alive+=("$pid"); done
    pids=("${alive[@]}")
    [ ${#pids[@]} -eq 0 ] && break
    sleep 0.2
  done
  for pid in "${pids[@]}"; do echo "cluster.sh: pid $pid still alive after 15 s: SIGKILL" >&2; kill -9 "$pid" 2>/dev/null || true; done
  rm -f "$@"
}

stop_all() { # W
  local W=$1
  export SLURM_CONF=$W/etc/slurm.conf
  if [ -f "$W/run/slurmctld.pid" ] && kill -0 "$(cat "$W/run/slurmctld.pid")" 2>/dev/null; then
    # jobs first, so that no slurmstepd or job process outlives its slurmd
    local live=pending,running,suspended,completing,configuring ids
    ids=$(timeout 10 squeue -h -t $live -o %i 2>/dev/null || true)
    if [ -n "$ids" ]; then
      # shellcheck disable=SC2086
      timeout 10 scancel $ids 2>/dev/null || true
      for _ in $(seq 1 50); do
        [ -z "$(timeout 5 squeue -h -t $live -o %i 2>/dev/null || true)" ] && break; sleep 0.2
      done
    fi
  fi
  stop_pids "$W"/run/slurmd.*.pid "$W/run/slurmctld.pid"
  stop_pids "$W/run/slurmdbd.pid"
  stop_pids "$W/mysql/run/mysqld.pid" "$W/munge/munged.pid"
}

wait_for() { # seconds description command...
  local secs=$1 what=$2; shift 2
  for _ in $(seq 1 $((secs * 5))); do "$@" >/dev/null 2>&1 && return 0; sleep 0.2; done
  die "timed out after ${secs}s waiting for $what (logs: $W/log, $W/mysql)"
}

start() { # W
  W=$1
  [ "$(id -u)" = 0 ] || die "must run as root (slurmd launches jobs)"
  for b in munged mungekey mariadbd mariadb-install-db slurmdbd slurmctld slurmd; do
    command -v "$b" >/dev/null || [ -x "$SBIN/$b" ] || die "$b not installed (.ci/install-system-packages)"
  done
  id munge >/dev/null 2>&1 && id mysql >/dev/null 2>&1 || die "users munge/mysql missing (packages not installed?)"
  # any failure (set -e, or die) exits: stop whatever was started by then
  trap 'rc=$?; if [ "$rc" -ne 0 ]; then echo "cluster.sh: start failed, stopping what was started" >&2; stop_all "$W"; fi' EXIT
  mkdir -p "$W"/{etc,state,log,run,spool,jobs,out,fakedev,munge,mysql/data,mysql/run}
  chmod 755 "$W"
  chmod 1777 "$W/out"
  runuser -u mysql -- test -x "$W" || die "$W is not reachable by the mysql user (parent directory permissions)"
  export SLURM_CONF=$W/etc/slurm.conf
  host=$(hostname -s)

  # ports: free ones on loopback, picked now (controller, dbd, one per node)
  read -r -a ports < <("${PYTHON:-python3}" -c '
import socket, sys
socks = [socket.socket() for _ in range(int(sys.argv[1]))]
for s in socks:
    s.bind(("127.0.0.1", 0))
print(" ".join(str(s.getsockname()[1]) for s in socks))
' $((2 + ${#NODES[@]})))
  ctld_port=${ports[0]}; dbd_port=${ports[1]}

  # fake GPUs: gres/gpu needs File= on character devices (clones of /dev/null); optional
  gpus=0
  if mknod -m 666 "$W/fakedev/nvidia0" c 1 3 2>/dev/null && mknod -m 666 "$W/fakedev/nvidia1" c 1 3; then
    gpus=2
  fi

  # --- munge: a fresh key in DIR, a private socket ----------------------------------------
  chown munge:munge "$W/munge"
  if ! mungekey --create --keyfile="$W/munge/munge.key" 2>/dev/null; then
    dd if=/dev/urandom of="$W/munge/munge.key" bs=1024 count=1 status=none
  fi
  chown munge:munge "$W/munge/munge.key"; chmod 400 "$W/munge/munge.key"
  runuser -u munge -- "$SBIN/munged" --socket="$W/munge/munge.socket" --key-file="$W/munge/munge.key" \
    --log-file="$W/munge/munged.log" --pid-file="$W/munge/munged.pid" --seed-file="$W/munge/munged.seed"
  wait_for 10 munged test -S "$W/munge/munge.socket"

  # --- MariaDB: unix socket only -------------------------------------------------------
  cat > "$W/mysql/my.cnf" <<EOF
[mysqld]
user=mysql
datadir=$W/mysql/data
socket=$W/mysql/run/mysqld.sock
pid-file=$W/mysql/run/mysqld.pid
log-error=$W/mysql/mysqld.err
skip-networking
innodb_buffer_pool_size=32M
innodb_log_file_size=16M
[client]
socket=$W/mysql/run/mysqld.sock
EOF
  chown -R mysql:mysql "$W/mysql"
  mariadb-install-db --no-defaults --user=mysql --datadir="$W/mysql/data" \
    --auth-root-authentication-method=socket --skip-test-db > "$W/mysql/install.log" 2>&1
  setsid "$SBIN/mariadbd" --defaults-file="$W/mysql/my.cnf" > "$W/mysql/stdout.log" 2>&1 < /dev/null &
  wait_for 30 MariaDB test -S "$W/mysql/run/mysqld.sock"
  wait_for 30 "MariaDB pid file" test -s "$W/mysql/run/mysqld.pid"
  mariadb --defaults-file="$W/mysql/my.cnf" -e "CREATE USER 'slurm'@'localhost' IDENTIFIED BY 'reltest'; GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';"

  # --- Slurm configuration -------------------------------------------------------------
  cat > "$W/etc/slurmdbd.conf" <<EOF
AuthType=auth/munge
AuthInfo=socket=$W/munge/munge.socket
DbdHost=localhost
DbdAddr=127.0.0.1
DbdPort=$dbd_port
SlurmUser=root
DebugLevel=info
LogFile=$W/log/slurmdbd.log
PidFile=$W/run/slurmdbd.pid
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=reltest
StorageLoc=slurm_acct_db
CommunicationParameters=NoInAddrAny
EOF
  chmod 600 "$W/etc/slurmdbd.conf"
  cat > "$W/jobs/prolog.sh" <<'EOF'
#!/bin/sh
# fails for jobs in partition "plfail": Slurm drains the node ("Prolog error") and requeues the job held
[ "$SLURM_JOB_PARTITION" = plfail ] && exit 1
exit 0
EOF
  chmod 755 "$W/jobs/prolog.sh"
  {
    cat <<EOF
ClusterName=$CLUSTER
SlurmctldHost=$host(127.0.0.1)
SlurmUser=root
SlurmctldPort=$ctld_port
CommunicationParameters=NoInAddrAny,NoCtldInAddrAny
AuthType=auth/munge
AuthInfo=socket=$W/munge/munge.socket
CredType=cred/munge
MailProg=/bin/true
StateSaveLocation=$W/state
SlurmdSpoolDir=$W/spool/%n
SlurmctldPidFile=$W/run/slurmctld.pid
SlurmdPidFile=$W/run/slurmd.%n.pid
SlurmctldLogFile=$W/log/slurmctld.log
SlurmdLogFile=$W/log/slurmd.%n.log
SlurmctldDebug=info
SlurmdDebug=info
SlurmdParameters=config_overrides
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=127.0.0.1
AccountingStoragePort=$dbd_port
AccountingStoragePass=$W/munge/munge.socket
AccountingStorageTRES=gres/gpu
JobCompType=jobcomp/none
JobRequeue=1
RequeueExit=99
RequeueExitHold=100
ReturnToService=1
SlurmdTimeout=10
SlurmctldTimeout=10
MessageTimeout=5
KillWait=2
MinJobAge=10
InactiveLimit=0
SchedulerType=sched/backfill
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
PreemptType=preempt/partition_prio
PreemptMode=REQUEUE
GresTypes=gpu
Prolog=$W/jobs/prolog.sh
EOF
    i=2
    for n in "${NODES[@]}"; do
      gres=""
      if [ "$gpus" -gt 0 ] && [[ " ${GPU_NODES[*]} " == *" $n "* ]]; then gres="Gres=gpu:$gpus"; fi
      echo "NodeName=$n NodeAddr=127.0.0.1 NodeHostname=$host Port=${ports[$i]} CPUs=2 RealMemory=1000 $gres State=UNKNOWN"
      i=$((i + 1))
    done
    echo "PartitionName=batch Nodes=ALL Default=YES MaxTime=INFINITE PriorityTier=1 PreemptMode=REQUEUE State=UP"
    echo "PartitionName=high Nodes=ALL MaxTime=INFINITE PriorityTier=10 PreemptMode=OFF State=UP"
    echo "PartitionName=plfail Nodes=ALL MaxTime=INFINITE PriorityTier=1 PreemptMode=OFF State=UP"
  } > "$W/etc/slurm.conf"
  {
    echo "AutoDetect=off"
    if [ "$gpus" -gt 0 ]; then
      for n in "${GPU_NODES[@]}"; do echo "NodeName=$n Name=gpu File=$W/fakedev/nvidia[0-1]"; done
    fi
  } > "$W/etc/gres.conf"
  touch "$W/etc/plugstack.conf"

  # --- daemons -------------------------------------------------------------------------
  MYSQL_UNIX_PORT="$W/mysql/run/mysqld.sock" "$SBIN/slurmdbd"
  wait_for 60 slurmdbd sacctmgr -n show cluster
  sacctmgr -i add cluster "$CLUSTER" > /dev/null
  "$SBIN/slurmctld" -i
  wait_for 30 slurmctld sh -c 'scontrol ping | grep -q UP'
  for n in "${NODES[@]}"; do mkdir -p "$W/spool/$n"; "$SBIN/slurmd" -N "$n"; done
  wait_for 60 "nodes idle" sh -c '[ "$(sinfo -h -N -o "%N %T" | grep -vc " idle$")" -eq 0 ]'
  cat > "$W/env" <<EOF
SLURM_CONF=$W/etc/slurm.conf
RELTEST_CLUSTER=$CLUSTER
RELTEST_NODES=${NODES[*]}
RELTEST_GPU_NODES=$([ "$gpus" -gt 0 ] && echo "${GPU_NODES[*]}")
RELTEST_GPUS_PER_NODE=$gpus
EOF
  trap - EXIT
  echo "cluster up: $CLUSTER, nodes ${NODES[*]}, slurmctld 127.0.0.1:$ctld_port, slurmdbd 127.0.0.1:$dbd_port, under $W"
}

case "${1:-}" in
  start) [ -n "${2:-}" ] || die "usage: $0 start DIR"; start "$(realpath -m "$2")" ;;
  stop) [ -n "${2:-}" ] || die "usage: $0 stop DIR"; stop_all "$(realpath -m "$2")"; echo "cluster stopped" ;;
  *) die "usage: $0 start|stop DIR" ;;
esac
