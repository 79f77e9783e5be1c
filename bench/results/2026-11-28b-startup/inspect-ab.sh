#!/bin/bash
# Interleaved: a lone member's start with and without --inspect=127.0.0.1:0 (as the bench launches Vera for profiles).
run() {
  local flag=$1 label=$2
  : > /tmp/perfwork/ia.out
  local t0=$(date +%s%N)
  node $flag /work/wt/perf/bin/vera.js start --id n1 --data /tmp/perfwork/d1 --client 127.0.0.1:39001 --peer 127.0.0.1:39002 --peers n1=127.0.0.1:39002/39001 --secret sssssssssssssssssss >> /tmp/perfwork/ia.out 2>&1 &
  local pid=$!
  until grep -q '"event":"started"' /tmp/perfwork/ia.out 2>/dev/null; do sleep 0.002; done
  local t1=$(date +%s%N)
  local cpu=$(awk '{print ($14+$15)*10}' /proc/$pid/stat)
  kill -9 $pid; wait $pid 2>/dev/null
  echo "$label $(( (t1-t0)/1000000 )) ms cpu ${cpu} ms"
}
for r in $(seq 1 $1); do
  if (( r % 2 )); then run "" plain; run "--inspect=127.0.0.1:0" inspect; else run "--inspect=127.0.0.1:0" inspect; run "" plain; fi
done
