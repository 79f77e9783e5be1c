// The S3 writer process (forked by s3-fanout.ts): connects with the recipe it
// is given, appends one tagged value per 'write' message, reports when the
// write was sent and acknowledged. Exits when its parent goes away.
import { value128 } from '../lib/load.js';
import { connectRecipe } from '../systems/connect.js';
import type { BenchClient } from '../systems/system.js';
import { epochNow, type FromWriter, type ToWriter } from './s3-writer-protocol.js';

let client: BenchClient | null = null;
let list = '';

const reply = (message: FromWriter): void => {
  process.send?.(message);
};

process.on('message', (message: ToWriter) => {
  void handle(message).catch((error: unknown) => reply({ type: 'failed', message: error instanceof Error ? error.message : String(error) }));
});
process.on('disconnect', () => process.exit(0));

async function handle(message: ToWriter): Promise<void> {
  switch (message.type) {
    case 'init':
      list = message.list;
      client = await connectRecipe(message.recipe);
      reply({ type: 'ready' });
      return;
    case 'write': {
      if (client === null) throw new Error('the writer got a write before init');
      const sentAt = epochNow();
      await client.append(list, value128(message.tag));
      reply({ type: 'written', sentAt, ackedAt: epochNow() });
      return;
    }
    case 'close':
      await client?.close();
      reply({ type: 'closed' });
      process.exit(0);
  }
}
