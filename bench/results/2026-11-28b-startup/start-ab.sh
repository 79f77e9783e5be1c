#!/bin/bash
# Interleaved A/B of a lone member's start on its store: spawn -> "started" logged, and its CPU then.
# usage: startab.sh ROUNDS DIR_A DIR_B   (each a built checkout)
rounds=$1; A=$2; B=$3
run() {
  local dir=$1
  local t0=$(date +%s%N)
  : > /tmp/perfwork/ab.out; node $dir/bin/vera.js start --id n1 --data /tmp/perfwork/d1 --client 127.0.0.1:39001 --peer 127.0.0.1:39002 --peers n1=127.0.0.1:39002/39001 --secret sssssssssssssssssss >> /tmp/perfwork/ab.out 2>&1 &
  local pid=$!
  until grep -q '"event":"started"' /tmp/perfwork/ab.out 2>/dev/null; do sleep 0.002; done
  local t1=$(date +%s%N)
  local cpu=$(awk '{print ($14+$15)*10}' /proc/$pid/stat)
  kill -9 $pid; wait $pid 2>/dev/null
  echo "$(basename $dir) $(( (t1-t0)/1000000 )) ms cpu ${cpu} ms"
}
for r in $(seq 1 $rounds); do
  if (( r % 2 )); then run $A; run $B; else run $B; run $A; fi
done
