#!/usr/bin/env bash
# Sets up, on this one Debian machine, the hosts that the back-end tests
# hunt through (tests/integration/hosts_cli.rs):
#   - a real sshd on 127.0.0.1:2222 with a key for root, reached under the
#     ssh config names pgbisect-a, pgbisect-b and pgbisect-c;
#   - a real single-node Slurm cluster (munged, slurmctld, slurmd) whose
#     node is this machine.
# Idempotent: what is already installed, configured or running is kept,
# and a daemon that died is started again. There is no systemd here: the
# daemons are started directly. What the tests read is written to
# .pgbisect-test-cache/hosts.env, which scripts/test.sh sources.
set -euo pipefail
here="$(cd "$(dirname "$0")/.." && pwd)"
say() { echo "hosts-setup.sh: $*"; }
die() { echo "hosts-setup.sh: $*" >&2; exit 1; }
[ "$(id -u)" = 0 ] || die "run as root (it installs packages and starts daemons)"

packages=(openssh-server openssh-client munge slurm-wlm slurm-client)
missing=()
for p in "${packages[@]}"; do
  dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
done
if [ "${#missing[@]}" -gt 0 ]; then
  export DEBIAN_FRONTEND=noninteractive
  apt-get update -qq
  # policy-rc.d: the packages' scripts must not try to start services.
  printf '#!/bin/sh\nexit 101\n' > /usr/sbin/policy-rc.d && chmod 755 /usr/sbin/policy-rc.d
  apt-get install -y -qq --no-install-recommends "${missing[@]}" >/dev/null
  rm -f /usr/sbin/policy-rc.d
fi

# Runs "$@" until it succeeds, at most $1 seconds.
wait_for() {
  local limit=$1; shift
  local end=$((SECONDS + limit))
  until "$@" >/dev/null 2>&1; do
    [ "$SECONDS" -lt "$end" ] || return 1
    sleep 1
  done
}
# True when the pid in file $1 is a live process.
# PIDFILE NAME: the pid file names a live process called NAME (a pid file
# left from before a reboot may name a process that took the number since).
alive() { [ -s "$1" ] && [ "$(cat "/proc/$(cat "$1")/comm" 2>/dev/null)" = "$2" ]; }

# ---- sshd on 127.0.0.1:2222, three names for it ----------------------------
conf_dir=/etc/pgbisect-hosts
mkdir -p "$conf_dir" /run/sshd /root/.ssh
chmod 755 /run/sshd && chmod 700 /root/.ssh
ssh-keygen -A >/dev/null
key=/root/.ssh/pgbisect_hosts
[ -f "$key" ] || ssh-keygen -q -t ed25519 -N '' -C pgbisect-hosts -f "$key"
touch /root/.ssh/authorized_keys && chmod 600 /root/.ssh/authorized_keys
grep -qxF "$(cat "$key.pub")" /root/.ssh/authorized_keys || cat "$key.pub" >> /root/.ssh/authorized_keys
cat > "$conf_dir/sshd_config" <<CONF
Port 2222
ListenAddress 127.0.0.1
PidFile /run/sshd-pgbisect.pid
HostKey /etc/ssh/ssh_host_ed25519_key
PermitRootLogin prohibit-password
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AuthorizedKeysFile .ssh/authorized_keys
MaxStartups 100:30:200
MaxSessions 100
Subsystem sftp internal-sftp
CONF
/usr/sbin/sshd -t -f "$conf_dir/sshd_config" || die "sshd refuses $conf_dir/sshd_config"
if ! alive /run/sshd-pgbisect.pid sshd; then
  /usr/sbin/sshd -f "$conf_dir/sshd_config" || die "sshd did not start"
fi
# The names, in a file of their own (tests add names to a copy of it) and
# in root's ssh config.
cat > "$conf_dir/ssh_config" <<CONF
Host pgbisect-a pgbisect-b pgbisect-c
    HostName 127.0.0.1
    Port 2222
    User root
    IdentityFile $key
    IdentitiesOnly yes
    StrictHostKeyChecking accept-new
    UserKnownHostsFile /root/.ssh/pgbisect_known_hosts
CONF
config=/root/.ssh/config
touch "$config" && chmod 600 "$config"
sed -i '/^# pgbisect test hosts: begin$/,/^# pgbisect test hosts: end$/d' "$config"
{ echo "# pgbisect test hosts: begin"; cat "$conf_dir/ssh_config"; echo "# pgbisect test hosts: end"; } >> "$config"
for h in pgbisect-a pgbisect-b pgbisect-c; do
  wait_for 20 ssh -o BatchMode=yes -o ConnectTimeout=5 "$h" true ||
    die "cannot ssh to $h: $(ssh -o BatchMode=yes -o ConnectTimeout=5 "$h" true 2>&1 | tail -1)"
done
say "sshd on 127.0.0.1:2222 as pgbisect-a, pgbisect-b, pgbisect-c"

# ---- munge ------------------------------------------------------------------
mkdir -p /etc/munge /var/lib/munge /var/log/munge /run/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 status=none
fi
chown -R munge:munge /etc/munge /var/lib/munge /var/log/munge /run/munge
chmod 700 /etc/munge && chmod 400 /etc/munge/munge.key && chmod 755 /run/munge
if ! munge -n 2>/dev/null | unmunge >/dev/null 2>&1; then
  pid=/run/munge/munged.pid
  if alive "$pid" munged; then kill "$(cat "$pid")"; sleep 1; fi
  rm -f /run/munge/munge.socket.2*
  runuser -u munge -- /usr/sbin/munged --force || die "munged did not start"
  wait_for 20 sh -c 'munge -n | unmunge' || die "munge does not answer"
fi
say "munged answers"

# ---- Slurm: this machine is the cluster's one node --------------------------
node=$(hostname -s)
node_line=$(slurmd -C | head -n 1)
case "$node_line" in NodeName=*) ;; *) die "slurmd -C printed no node line: $node_line" ;; esac
mkdir -p /etc/slurm /var/lib/slurm/slurmctld /var/lib/slurm/slurmd /var/log/slurm
cat > /etc/slurm/slurm.conf.new <<CONF
# Written by pgbisect's scripts/hosts-setup.sh: one node, this machine.
ClusterName=pgbisect
SlurmctldHost=$node
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/lib/slurm/slurmctld
SlurmdSpoolDir=/var/lib/slurm/slurmd
SlurmctldPidFile=/run/slurmctld.pid
SlurmdPidFile=/run/slurmd.pid
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
JobAcctGatherType=jobacct_gather/none
AccountingStorageType=accounting_storage/none
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
SchedulerType=sched/backfill
# A batch job is placed when it is submitted, not up to 3 s later (the
# default): pgbisect sends one run a job, and the tests' hunts send dozens.
SchedulerParameters=batch_sched_delay=0
ReturnToService=2
MinJobAge=600
KillWait=5
SlurmdTimeout=60
$node_line State=UNKNOWN
PartitionName=pgbisect Nodes=$node Default=YES MaxTime=INFINITE State=UP
CONF
changed=no
if ! cmp -s /etc/slurm/slurm.conf.new /etc/slurm/slurm.conf; then
  mv /etc/slurm/slurm.conf.new /etc/slurm/slurm.conf
  changed=yes
else
  rm -f /etc/slurm/slurm.conf.new
fi
if ! alive /run/slurmctld.pid slurmctld || ! scontrol ping 2>/dev/null | grep -q UP; then
  alive /run/slurmctld.pid slurmctld && kill "$(cat /run/slurmctld.pid)" && sleep 2
  slurmctld || die "slurmctld did not start: $(tail -5 /var/log/slurm/slurmctld.log)"
  wait_for 30 sh -c 'scontrol ping | grep -q UP' || die "slurmctld does not answer: $(tail -5 /var/log/slurm/slurmctld.log)"
elif [ "$changed" = yes ]; then
  scontrol reconfigure
fi
if ! alive /run/slurmd.pid slurmd; then
  slurmd || die "slurmd did not start: $(tail -5 /var/log/slurm/slurmd.log)"
elif [ "$changed" = yes ]; then
  kill "$(cat /run/slurmd.pid)" && sleep 2 && slurmd
fi
idle() { sinfo -h -N -n "$node" -o %t | grep -qx idle; }
if ! wait_for 30 idle; then
  # A node left down or drained by an earlier try: hand it back.
  scontrol update NodeName="$node" State=RESUME 2>/dev/null || true
  wait_for 60 idle || die "the Slurm node $node is not idle: $(sinfo -N -l)"
fi
say "Slurm cluster up: node $node idle in partition pgbisect"

mkdir -p "$here/.pgbisect-test-cache"
cat > "$here/.pgbisect-test-cache/hosts.env" <<ENV
PGBISECT_TEST_SSH_HOSTS=pgbisect-a,pgbisect-b,pgbisect-c
PGBISECT_TEST_SSH_CONFIG=$conf_dir/ssh_config
PGBISECT_TEST_SLURM_NODE=$node
PGBISECT_TEST_SLURM_PARTITION=pgbisect
ENV
say "ready ($here/.pgbisect-test-cache/hosts.env)"
