import sys, statistics as st
rows=[]
for l in open(sys.argv[1]):
    p=l.rstrip('\n').split(' ',2)
    if len(p)<3: continue
    rows.append((float(p[0]), int(p[1]), p[2]))
rows.sort()
leader=int(sys.argv[2])
reqs=[]; cur=None
for t,pid,l in rows:
    if l.startswith('C.send'): cur={'kind':l.split()[1],'t0':t,'ev':[]}
    elif l=='C.recv' and cur: cur['t1']=t; reqs.append(cur); cur=None
    elif cur is not None: cur['ev'].append((t, 'L' if pid==leader else 'F%d'%pid, l))
def first(ev, who, pre, after=0):
    for t,w,l in ev:
        if t>=after and (w==who or (who=='F' and w.startswith('F'))) and l.startswith(pre): return t
    return None
G={}
def add(k,v):
    if v is not None: G.setdefault(k,[]).append(v)
for r in reqs[40:]:
    ev=r['ev']; k=r['kind']
    lin=first(ev,'L','in'); out=first(ev,'L','out'); unc=first(ev,'L','uncork')
    add(k+' client send -> leader in', lin and lin-r['t0'])
    add(k+' leader in -> h.start', lin and (first(ev,'L','h.start') or lin)-lin)
    add(k+' leader in -> out', lin and out and out-lin)
    add(k+' out -> uncork', out and unc and unc-out)
    add(k+' uncork -> client recv', unc and r['t1']-unc)
    add(k+' total', r['t1']-r['t0'])
    if k=='new':
        rd=first(ev,'L','ready e1'); fa=first(ev,'F','step app'); 
        ps=first(ev,'L','persist.start'); pe=first(ev,'L','persist.end')
        add('new L propose -> ready', rd and rd-first(ev,'L','propose'))
        add('new L persist (fsync)', pe and ps and pe-ps)
        add('new L ready -> first F step app', fa and rd and fa-rd)
        # follower fsyncs
        fps=[(t,w) for t,w,l in ev if w.startswith('F') and l=='persist.start']
        fpe=[(t,w) for t,w,l in ev if w.startswith('F') and l=='persist.end']
        for (t0,w) in fps[:2]:
            e=[t for t,w2 in fpe if w2==w and t>=t0]
            if e: add('new F persist (fsync)', e[0]-t0)
        fe=min([t for t,w in fpe], default=None)
        ack=first(ev,'L','step appResp', fe or 0)
        add('new first F persist.end -> L step appResp', fe and ack and ack-fe)
        c1=first(ev,'L','ready e0 c1')
        add('new L commit ready - max(L persist.end, ack)', c1 and ack and pe and c1-max(ack,pe))
        add('new L leader persist end - first ack', ack and pe and pe-ack)
        pl=first(ev,'L','planned'); wr=first(ev,'L','written')
        add('new L apply.start -> planned', pl and c1 and pl-c1)
        add('new L planned -> written', pl and wr and wr-pl)
        add('new L written -> out', wr and out and out-wr)
        add('new L propose -> commit ready', c1 and c1-first(ev,'L','propose'))
for k,v in G.items(): print('%-50s n %3d p50 %.3f mean %.3f'%(k,len(v),st.median(v),st.mean(v)))
