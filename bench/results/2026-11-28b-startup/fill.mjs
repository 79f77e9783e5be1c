import { connect } from '../../../dist/client/index.js';
const c = await connect(['ws://127.0.0.1:39001'], { connectTimeoutMs: 5000 });
c.on('failed', () => undefined);
const v = 'x'.repeat(128);
let n = 0;
const N = Number(process.argv[2] ?? 10000);
await Promise.all(Array.from({ length: Number(process.env.INFLIGHT ?? 64) }, async () => { while (n < N) { n++; await c.push(`/bench/s7/data/c${n % 16}`, v, { persistent: true, watch: false }); } }));
await c.close();
console.log('filled', N);
