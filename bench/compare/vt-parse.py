# Lines up the vt() traces of bench/compare/vt-probe.ts: per put, each member's events in ms after the client sent.
import sys, os, glob, statistics, collections
d = sys.argv[1]
members = {}; marks = []
for line in open(f'{d}/marks'):
    p = line.split()
    if p[0] == 'member': members[int(p[2])] = ('L' if 'leader' in p else 'F') + p[1]
    else: marks.append((float(p[0]), float(p[1])))
ev = []
for f in glob.glob(f'{d}/*.trace'):
    pid = int(os.path.basename(f).split('.')[0])
    for line in open(f):
        t, lab = line.rstrip('\n').split(' ', 1)
        ev.append((float(t), members.get(pid, str(pid)), lab))
ev.sort()
seqs = collections.defaultdict(list); totals = []
show = int(sys.argv[2]) if len(sys.argv) > 2 else 2
for k, (a, b) in enumerate(marks):
    inwin = [(t - a, who, lab) for (t, who, lab) in ev if a <= t <= b + 0.0]
    totals.append(b - a)
    if k < show or k == len(marks) // 2:
        print(f'--- put {k}: {b - a:.3f} ms')
        for t, who, lab in inwin: print(f'{t:8.3f} {who:4} {lab}')
    cnt = collections.Counter()
    for t, who, lab in inwin:
        key = (who[0], lab.split(' ')[0]); cnt[key] += 1
        seqs[(key, cnt[key])].append(t)
print('median total', statistics.median(totals), 'p10', sorted(totals)[len(totals)//10], 'n', len(totals))
rows = [(statistics.median(v), k, len(v)) for k, v in seqs.items() if len(v) >= len(marks) * 0.6]
for m, k, n in sorted(rows): print(f'{m:8.3f} {k[0][0]} {k[0][1]}#{k[1]} (n={n})')
