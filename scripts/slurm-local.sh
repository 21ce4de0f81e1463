#!/bin/sh
# slurm-local.sh - a one-node Slurm on this machine (root, Debian 12's
# slurmd/slurmctld/munge packages), then p3d-analyze-mpi under srun
# against p3d-analyze on the committed example (issue 23): the JSON and
# the text of `srun --mpi=pmix -n 1`, `-n 2` and `-n 2 --local` must equal
# p3d-analyze's byte for byte; a peer that dies or stalls must end the
# step (not 0, not the timeout).  Not part of `make test` (it starts
# daemons); run by hand after `make all mpi`:
#   sh scripts/slurm-local.sh
set -eu
cd "$(dirname "$0")/.."
command -v slurmd > /dev/null ||
    DEBIAN_FRONTEND=noninteractive apt-get install -y slurmd slurmctld \
        slurm-client munge > /dev/null
H=$(hostname)
mkdir -p /etc/munge /var/log/munge /run/munge /var/lib/munge \
    /var/spool/slurmd /var/spool/slurmctld /var/log/slurm
[ -f /etc/munge/munge.key ] ||
    dd if=/dev/urandom of=/etc/munge/munge.key bs=1024 count=1 2> /dev/null
chown -R munge:munge /etc/munge /var/log/munge /run/munge /var/lib/munge
chmod 400 /etc/munge/munge.key
pgrep -x munged > /dev/null || su -s /bin/sh munge -c munged
cat > /etc/slurm/slurm.conf <<EOF
ClusterName=p3d
SlurmctldHost=$H
SlurmUser=root
SlurmdUser=root
AuthType=auth/munge
StateSaveLocation=/var/spool/slurmctld
SlurmdSpoolDir=/var/spool/slurmd
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
SelectType=select/cons_tres
SelectTypeParameters=CR_CPU
ReturnToService=2
MpiDefault=none
SlurmctldLogFile=/var/log/slurm/slurmctld.log
SlurmdLogFile=/var/log/slurm/slurmd.log
NodeName=$H CPUs=$(nproc) State=UNKNOWN
PartitionName=debug Nodes=$H Default=YES MaxTime=INFINITE State=UP OverSubscribe=YES
EOF
pgrep -x slurmctld > /dev/null || slurmctld
pgrep -x slurmd > /dev/null || slurmd
until sinfo -h -o %t 2> /dev/null | grep -q idle; do sleep 1; done

export OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1
d=traces/example-tp2pp2dp2 t=$(mktemp -d) fails=0
build/p3d-analyze --json "$t/a.json" "$d" > "$t/a.txt" 2> /dev/null || true
for form in "-n 1" "-n 2" "-n 2 --local"; do
    n=${form% --local}; loc=${form#"$n"}
    # shellcheck disable=SC2086
    timeout 120 srun --mpi=pmix $n build/p3d-analyze-mpi $loc \
        --json "$t/m.json" "$d" > "$t/m.txt" 2> "$t/m.err" || true
    if cmp -s "$t/a.json" "$t/m.json" && cmp -s "$t/a.txt" "$t/m.txt"; then
        echo "srun $form: JSON and text as p3d-analyze's"
    else
        echo "FAIL: srun $form differs"; cat "$t/m.err"; fails=$((fails + 1))
    fi
done
# --local with the rank files split between two "nodes" (folders), each
# process seeing only its own, as one process per node would
for k in 0 1 all; do mkdir -p "$t/$k/job"; done
cp "$d"/rank-*.p3d "$t/all/job/"
for f in "$d"/rank-*.p3d; do
    r=$(basename "$f" .p3d | sed 's/^rank-0*//'); r=${r:-0}
    cp "$f" "$t/$((r % 2))/job/"
done
(cd "$t/all" && "$OLDPWD/build/p3d-analyze" --json a.json job > a.txt \
    2> /dev/null) || true
timeout 120 srun --mpi=pmix -n 2 sh -c \
    'cd "$0/$SLURM_PROCID" && exec "$1" --local --json ../m.json job' \
    "$t" "$PWD/build/p3d-analyze-mpi" > "$t/ms.txt" 2> "$t/ms.err" || true
if cmp -s "$t/all/a.json" "$t/m.json" && cmp -s "$t/all/a.txt" "$t/ms.txt"
then
    echo "srun -n 2 --local, files split over two folders: as p3d-analyze's"
else
    echo "FAIL: srun --local over split folders differs"; cat "$t/ms.err"
    fails=$((fails + 1))
fi
for f in exit stall; do
    rc=0
    P3D_MPI_TEST_PEER=$f P3D_MPI_DEADLINE_S=5 timeout 120 srun --mpi=pmix \
        -n 2 build/p3d-analyze-mpi --json "$t/$f.json" "$d" \
        > "$t/$f.out" 2>&1 || rc=$?
    if [ "$rc" -ne 0 ] && [ "$rc" -ne 124 ]; then
        echo "srun, peer $f: step ended, exit $rc"
    else
        echo "FAIL: srun, peer $f: exit $rc"; fails=$((fails + 1))
    fi
done
[ -n "${KEEP:-}" ] || rm -rf "$t"
[ "$fails" -eq 0 ]
