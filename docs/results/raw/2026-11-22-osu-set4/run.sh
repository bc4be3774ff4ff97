#!/bin/bash
# Alternating rounds, each rank bound to its own core (n1 -> cpu0, n2 -> cpu1) for both tools.
cd /work/main
B='taskset -c $SLURM_NODEID'
for r in $(seq 1 10); do
  srun --mpi=pmix -N2 --ntasks-per-node=1 bash -c "$B third_party/osu/mpi/pt2pt/osu_bw" > /tmp/osu4/osu_bw.$r.txt 2>&1
  srun --mpi=pmix -N2 --ntasks-per-node=1 bash -c "$B build/mempath-mpi bw --mode uni --min-size 1MiB --max-size 4MiB --reps 5 --output /tmp/osu4/mp_uni.$r.h5" > /tmp/osu4/mp_uni.$r.txt 2>&1
  srun --mpi=pmix -N2 --ntasks-per-node=1 bash -c "$B third_party/osu/mpi/pt2pt/osu_bibw" > /tmp/osu4/osu_bibw.$r.txt 2>&1
  srun --mpi=pmix -N2 --ntasks-per-node=1 bash -c "$B build/mempath-mpi bw --mode bi --min-size 1MiB --max-size 4MiB --reps 5 --output /tmp/osu4/mp_bi.$r.h5" > /tmp/osu4/mp_bi.$r.txt 2>&1
done
date -u
