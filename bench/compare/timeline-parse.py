# Reads the timeline of single puts that bench/compare/tl-probe.ts records (issue 32):
# BASE.strace (strace -f -tt -T of every member) and BASE.marks (each put's client-side
# start and end, each member's threads, the leader), and prints one row per put (ms after
# the leader read the request, per step on each member) and the medians.
#   npx tsx bench/compare/tl-probe.ts /tmp/tl && python3 bench/compare/timeline-parse.py /tmp/tl
import re, sys, statistics as st
base = sys.argv[1]
marks = open(base + '.marks').read().split('\n')
tasks = {}; leader = None; puts = []
for l in marks:
    p = l.split()
    if len(p) >= 3 and p[1] == 'tasks': tasks[p[0]] = [int(x) for x in p[2].split(',')]
    elif len(p) == 3 and p[2] == 'leader': leader = p[0]
    elif len(p) == 3 and p[0].isdigit(): puts.append((int(p[0]), p[1], p[2]))
def ts(s):
    h, m, r = s.split(':'); return (int(h) * 3600 + int(m) * 60 + float(r)) * 1000
owner = {}; main = {}
for mid, tl in tasks.items():
    main[mid] = tl[0]
    for t in tl: owner[t] = mid
recs = []; pending = {}
for line in open(base + '.strace'):
    m = re.match(r'(\d+)\s+(\S+) (.*)', line.rstrip())
    if not m: continue
    tid, t, rest = int(m.group(1)), ts(m.group(2)), m.group(3)
    if rest.startswith('<...'):
        if tid not in pending: continue
        s0, name, args = pending.pop(tid)
        d = re.search(r'<([\d.]+)>$', rest); ret = re.search(r'= (-?\d+)', rest)
        recs.append(dict(tid=tid, t=s0, name=name, args=args, ret=int(ret.group(1)) if ret else None, end=s0 + float(d.group(1)) * 1000 if d else t))
        continue
    nm = re.match(r'(\w+)\((.*)', rest)
    if not nm: continue
    if rest.endswith('<unfinished ...>'):
        pending[tid] = (t, nm.group(1), nm.group(2)); continue
    d = re.search(r'<([\d.]+)>$', rest); ret = re.search(r'= (-?\d+)', rest)
    recs.append(dict(tid=tid, t=t, name=nm.group(1), args=nm.group(2), ret=int(ret.group(1)) if ret else None, end=t + float(d.group(1)) * 1000 if d else t))
recs.sort(key=lambda r: r['t'])
fol = [m for m in tasks if m != leader]
L = main[leader]
def fd(r): return int(r['args'].split(',')[0])
rows = []
for i, a, b in puts:
    t0, t1 = ts(a), ts(b)
    win = [r for r in recs if t0 - 0.2 <= r['t'] <= t1 + 0.5]
    def first(pred, after=t0):
        for r in win:
            if r['t'] >= after and pred(r): return r
        return None
    recv = first(lambda r: r['tid'] == L and r['name'] == 'read' and (r['ret'] or 0) > 150)
    if not recv: continue
    app = first(lambda r: r['tid'] == L and r['name'] == 'write' and (r['ret'] or 0) > 300, recv['t'])
    lsync = first(lambda r: owner.get(r['tid']) == leader and r['tid'] != L and r['name'] == 'fdatasync', recv['t'])
    fs = {}
    for f in fol:
        frecv = first(lambda r: r['tid'] == main[f] and r['name'] == 'read' and (r['ret'] or 0) > 300, recv['t'])
        fsync = first(lambda r: owner.get(r['tid']) == f and r['tid'] != main[f] and r['name'] == 'fdatasync', recv['t'])
        fack = first(lambda r: r['tid'] == main[f] and r['name'] == 'write' and fsync is not None, fsync['end'] if fsync else t1)
        fs[f] = (frecv, fsync, fack)
    reply = first(lambda r: r['tid'] == L and r['name'] == 'writev', recv['t'])
    acks = sorted(x[2]['t'] for x in fs.values() if x[2])
    ackread = first(lambda r: r['tid'] == L and r['name'] == 'read' and 0 < (r['ret'] or 0) < 150 and r['ret'] != 8, acks[0] if acks else t1)
    applyw = first(lambda r: owner.get(r['tid']) == leader and r['tid'] != L and r['name'] == 'write' and (r['ret'] or 0) > 100, lsync['end'] if lsync else recv['t'])
    if applyw and lsync and applyw['t'] < max(lsync['end'], ackread['t'] if ackread else 0) : pass
    rel = lambda x: None if x is None else round(x - recv['t'], 3)
    fsync_first = min((x[1] for x in fs.values() if x[1]), key=lambda r: r['end'])
    row = dict(put=i, client_total=round(t1 - t0, 3), recv_after_client=round(recv['t'] - t0, 3),
        append_sent=rel(app['t'] if app else None), leader_sync_start=rel(lsync['t'] if lsync else None), leader_sync_end=rel(lsync['end'] if lsync else None),
        fol_recv=rel(min(x[0]['t'] for x in fs.values() if x[0])), fol_sync_start=rel(fsync_first['t']), fol_sync_end=rel(fsync_first['end']),
        fol_ack_sent=rel(acks[0] if acks else None), ack_read=rel(ackread['t'] if ackread else None), apply_write=rel(applyw['t'] if applyw else None), reply=rel(reply['t'] if reply else None), reply_to_client_end=round(t1 - reply['t'], 3) if reply else None,
        lsync_dur=round(lsync['end'] - lsync['t'], 3) if lsync else None, fsync_dur=round(fsync_first['end'] - fsync_first['t'], 3))
    rows.append(row)
keys = list(rows[0].keys())
print(' '.join(k for k in keys))
for r in rows: print(' '.join(str(r[k]) for k in keys))
print('median', ' '.join(str(round(st.median([r[k] for r in rows if r[k] is not None]), 3)) for k in keys[1:]))
