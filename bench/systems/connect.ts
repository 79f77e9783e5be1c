// Connects a client from a recipe, for load-generator pieces that run in a
// child process (the S3 writer).
import { connectEtcd } from './etcd.js';
import type { BenchClient, ClientRecipe, ConnectOptions } from './system.js';
import { connectVera } from './vera.js';
import { connectZooKeeper } from './zookeeper.js';

export function connectRecipe(recipe: ClientRecipe, options: ConnectOptions = {}): Promise<BenchClient> {
  switch (recipe.system) {
    case 'vera':
      return connectVera(recipe.ports, options, { ...(recipe.ca === undefined ? {} : { ca: recipe.ca }), ...(recipe.token === undefined ? {} : { token: recipe.token }) });
    case 'etcd':
      return connectEtcd(recipe.ports);
    case 'zookeeper':
      return connectZooKeeper(recipe.ports, options);
  }
}
