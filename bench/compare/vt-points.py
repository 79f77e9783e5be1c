# Probe tooling (issue 32): adds or removes temporary timestamp points ("vt") on a put's path
# in src/ (client frame in, proposal, Ready, writes, peer frames, apply batch, reply). Never
# commit them: apply, build, run bench/compare/vt-probe.ts, then strip.
#   python3 bench/compare/vt-points.py apply && npx tsc -p tsconfig.build.json
#   VERA_TRACE=/tmp/vt npx tsx bench/compare/vt-probe.ts && python3 bench/compare/vt-parse.py /tmp/vt
#   python3 bench/compare/vt-points.py strip
import os, re, subprocess, sys

VTRACE = """// TEMPORARY probe (bench/compare/vt-points.py; never committed): timestamps flushed to $VERA_TRACE/<pid>.trace.
import { appendFileSync } from 'node:fs';
const dir = process.env.VERA_TRACE;
const buf: string[] = [];
if (dir) setInterval(() => { if (buf.length) { appendFileSync(`${dir}/${process.pid}.trace`, buf.join('\\n') + '\\n'); buf.length = 0; } }, 500).unref();
export function vt(label: string): void {
  if (!dir) return;
  buf.push(`${(performance.timeOrigin + performance.now()).toFixed(3)} ${label}`);
}
"""

def strip():
    if os.path.exists('src/raft/vtrace.ts'): os.remove('src/raft/vtrace.ts')
    for f in subprocess.check_output(['git', 'diff', '--name-only', '--', 'src'], text=True).split():
        s = open(f).read()
        s = re.sub(r"\{ vt\('(pin|cin)'\); (this\.onFrame\(toBuffer\(data\), isBinary\)); \}", r"\2", s)
        open(f, 'w').write('\n'.join(l for l in s.split('\n') if not re.search(r"\bvt\(|vtrace", l)))

if sys.argv[1:] == ['strip']:
    strip(); sys.exit(0)
open('src/raft/vtrace.ts', 'w').write(VTRACE)
def edit(path, old, new, count=1):
    s=open(path).read()
    assert s.count(old)>=1, (path, old)
    s=s.replace(old,new,count)
    open(path,'w').write(s)
p='src/raft/driver.ts'
edit(p,"import { mayBeSentBeforePersist } from './types.js';","import { mayBeSentBeforePersist } from './types.js';\nimport { vt } from './vtrace.js';")
edit(p,"    const { transport } = this.opts;\n    this.noteRoundsSent","    const { transport } = this.opts;\n    vt(`rdy e${rd.entries.length} c${rd.committedEntries.length} m${rd.messages.map((m) => m.type).join(',')}`);\n    this.noteRoundsSent")
edit(p,"    await this.opts.storage.persist(rd.hardState, rd.entries);\n","    vt('persist-start');\n    await this.opts.storage.persist(rd.hardState, rd.entries);\n    vt('persist-done');\n")
edit(p,"      await this.opts.apply(rd.committedEntries, (entry, result) => {","      vt('apply-start');\n      await this.opts.apply(rd.committedEntries, (entry, result) => {\n        vt('applied-cb');")
edit(p,"    this.node.step(message);\n    this.schedule();","    vt(`step ${message.type} ${message.from}`);\n    this.node.step(message);\n    this.schedule();")
edit(p,"  private settleProposal(entry: Entry, result: R): void {\n","  private settleProposal(entry: Entry, result: R): void {\n    vt('settle');\n")
edit(p,"      void this.runReadyLoop();","      vt('loop');\n      void this.runReadyLoop();")
p='src/raft/transport/outbound-link.ts'
edit(p,"import ","import { vt } from '../vtrace.js';\nimport ")
edit(p,"      dial.ws.send(frame, { binary: true }, (err) => {","      vt(`flush ${peer.id} ${batch.map((m) => m.type).join(',')}`);\n      dial.ws.send(frame, { binary: true }, (err) => {")
p='src/raft/transport/inbound-connection.ts'
edit(p,"import ","import { vt } from '../vtrace.js';\nimport ")
edit(p,"    ws.on('message', (data, isBinary) => this.onFrame(toBuffer(data), isBinary));","    ws.on('message', (data, isBinary) => { vt('pin'); this.onFrame(toBuffer(data), isBinary); });")
p='src/server/front/client-connection.ts'
edit(p,"import ","import { vt } from '../../raft/vtrace.js';\nimport ")
edit(p,"    ws.on('message', (data, isBinary) => this.onFrame(toBuffer(data), isBinary));","    ws.on('message', (data, isBinary) => { vt('cin'); this.onFrame(toBuffer(data), isBinary); });")
edit(p,"    if (cork) this.corkUntilTurnEnds();","    vt('cout');\n    if (cork) this.corkUntilTurnEnds();")
edit(p,"    socket.uncork();","    socket.uncork();\n    vt('uncork');")
p='src/server/node/vera-node.ts'
edit(p,"import ","import { vt } from '../../raft/vtrace.js';\nimport ")
edit(p,"    let bytes: Uint8Array;\n    try {","    vt('propose');\n    let bytes: Uint8Array;\n    try {")
p='src/statemachine/write-batch.ts'
edit(p,"import ","import { vt } from '../raft/vtrace.js';\nimport ")
edit(p,"  await batch.write();","  vt('wb-start');\n  await batch.write();\n  vt('wb-done');")
p='src/raft/leveldb-storage.ts'
edit(p,"import ","import { vt } from './vtrace.js';\nimport ")
edit(p,"        await this.db.batch(ops, { ...BUFFERS, sync: true });","        vt('sync-start');\n        await this.db.batch(ops, { ...BUFFERS, sync: true });\n        vt('sync-done');")
