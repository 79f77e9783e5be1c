// Data: a tree of paths kept live by watches (no refresh button), the items of
// the selected list with owner, index and size, a page at a time, large values
// cut with a download, search by path prefix, and push and delete (a whole
// subtree, confirmed first) when the user may and read-only mode is off.
import { useEffect, useMemo, useRef, useState } from 'preact/hooks';
import { VeraError, type Item } from '../../client/index.js';
import type { Pending } from '../confirm.js';
import { describe, type Dashboard } from '../dashboard.js';
import { KvClient } from '../../families/kv/client.js';
import { bytes, count, download, preview } from '../util.js';

const PAGE = 100;

function join(parent: string, child: string): string {
  return parent === '/' ? `/${child}` : `${parent}/${child}`;
}

function parentOf(path: string): string {
  const cut = path.lastIndexOf('/');
  return cut <= 0 ? '/' : path.slice(0, cut);
}

/** The paths from the root to `path`, root excluded ('/a/b' -> ['/a', '/a/b']). */
function ancestry(path: string): string[] {
  const out: string[] = [];
  for (let p = path; p !== '/'; p = parentOf(p)) out.unshift(p);
  return out;
}

interface TreeState {
  readonly children: ReadonlyMap<string, readonly string[]>;
  readonly open: ReadonlySet<string>;
  /** Paths that just changed, for a moment's highlight. */
  readonly flashed: ReadonlySet<string>;
}

export function DataPanel({ dash, readOnly, confirm, liveEvents }: { dash: Dashboard; readOnly: boolean; confirm: (p: Pending) => void; liveEvents: (listener: (paths: readonly string[]) => void) => () => void }) {
  const client = dash.client;
  const [tree, setTree] = useState<TreeState>({ children: new Map(), open: new Set(['/']), flashed: new Set() });
  const [selected, setSelected] = useState<string | null>(null);
  const [items, setItems] = useState<Item[] | null>(null);
  const [page, setPage] = useState(0);
  const [error, setError] = useState<string | null>(null);
  const [search, setSearch] = useState('');
  const [newValue, setNewValue] = useState('');
  /** The index of the item whose value the editor was loaded from, if any (said above the editor). */
  const [editing, setEditing] = useState<number | null>(null);
  const selectedRef = useRef<string | null>(null);
  selectedRef.current = selected;

  const loadChildren = async (path: string): Promise<void> => {
    try {
      const r = await client.ls(path);
      setTree((t) => ({ ...t, children: new Map(t.children).set(path, [...r.children].sort()) }));
    } catch (e) {
      setError(`ls ${path}: ${describe(e)}`);
    }
  };

  const loadItems = async (path: string): Promise<void> => {
    try {
      const r = await client.get(path);
      if (selectedRef.current === path) setItems([...r.items]);
    } catch (e) {
      setError(`get ${path}: ${describe(e)}`);
    }
  };

  useEffect(() => {
    void loadChildren('/');
  }, []);

  // Live: every change event reloads what it touches that is on screen.
  useEffect(
    () =>
      liveEvents((changed) => {
        const paths = new Set(changed);
        setTree((t) => {
          const flashed = new Set<string>();
          for (const p of paths) for (const a of ancestry(p)) flashed.add(a);
          return { ...t, flashed };
        });
        // A new child may have appeared (or the last item of one gone) under each open ancestor: each reread once.
        const parents = new Set<string>();
        for (const p of paths) for (const a of ['/', ...ancestry(p).slice(0, -1)]) if (tree.open.has(a)) parents.add(a);
        for (const a of parents) void loadChildren(a);
        if (selectedRef.current !== null && paths.has(selectedRef.current)) void loadItems(selectedRef.current);
      }),
    [tree.open],
  );

  useEffect(() => {
    setItems(null);
    setPage(0);
    if (selected !== null) {
      void loadItems(selected);
      // A list the prefix watch does not cover (a user without watch on '/') is watched by itself.
      client.watch(selected).catch(() => undefined);
    }
  }, [selected]);

  const toggle = (path: string): void => {
    const open = new Set(tree.open);
    if (open.has(path)) open.delete(path);
    else {
      open.add(path);
      void loadChildren(path);
    }
    setTree({ ...tree, open });
    setSelected(path);
  };

  const goTo = async (path: string): Promise<void> => {
    const open = new Set(tree.open);
    for (const a of ['/', ...ancestry(path).slice(0, -1)]) {
      open.add(a);
      await loadChildren(a);
    }
    setTree((t) => ({ ...t, open }));
    setSelected(path);
  };

  const renderNode = (path: string, depth: number) => {
    const kids = tree.children.get(path) ?? [];
    return kids.map((name) => {
      const p = join(path, name);
      const isOpen = tree.open.has(p);
      return (
        <div key={p}>
          <div
            class={`node${selected === p ? ' selected' : ''}${tree.flashed.has(p) ? ' flash' : ''}`}
            style={{ paddingLeft: `${depth * 14 + 4}px` }}
            onClick={() => toggle(p)}
            data-path={p}
          >
            {isOpen ? '▾' : '▸'} {name}
          </div>
          {isOpen && renderNode(p, depth + 1)}
        </div>
      );
    });
  };

  const pageCount = items === null ? 0 : Math.max(1, Math.ceil(items.length / PAGE));
  const shown = useMemo(() => (items === null ? [] : items.slice(page * PAGE, (page + 1) * PAGE)), [items, page]);

  const deleteSubtree = async (root: string): Promise<void> => {
    // Every list at or below `root`: found by ls, deleted item by item (each delete is one entry).
    const lists: Array<{ path: string; items: Item[] }> = [];
    const walk = async (p: string): Promise<void> => {
      const got = await client.get(p).catch(() => ({ items: [] as Item[] }));
      if (got.items.length > 0) lists.push({ path: p, items: [...got.items] });
      for (const child of (await client.ls(p)).children) await walk(join(p, child));
    };
    await walk(root);
    const n = lists.reduce((s, l) => s + l.items.length, 0);
    confirm({
      title: `Delete everything under ${root}?`,
      consequence: `This deletes ${count(n)} items in ${lists.length} lists at or below ${root}, one committed entry each. Watchers are notified; it cannot be undone.`,
      action: `Delete ${count(n)} items`,
      run: async () => {
        for (const l of lists) for (const it of l.items) await client.delete(l.path, it.index);
        if (selectedRef.current !== null) await loadItems(selectedRef.current);
      },
    });
  };

  /** The editor's text as a value: JSON only, so a typo is refused here rather than stored as text. */
  const editorValue = (): { ok: true; data: unknown } | { ok: false } => {
    try {
      const data: unknown = JSON.parse(newValue);
      setError(null); // an earlier complaint is answered
      return { ok: true, data };
    } catch (e) {
      setError(`The value is not JSON (${e instanceof Error ? e.message : String(e)}); text goes in double quotes, "like this". Nothing was written.`);
      return { ok: false };
    }
  };

  const pushValue = (path: string): void => {
    const v = editorValue();
    if (!v.ok) return;
    client.push(path, v.data, { persistent: true, watch: false }).then(
      () => {
        setNewValue('');
        setEditing(null);
        setError(null);
      },
      (err: unknown) => setError(describe(err)),
    );
  };

  /** Put: the list's value becomes the editor's, in one entry, only if the list is still as shown (else CONFLICT). */
  const putValue = (path: string): void => {
    const v = editorValue();
    if (!v.ok || items === null) return;
    const ifLastIndex = items.length === 0 ? 0 : items[items.length - 1]!.index;
    const run = async (): Promise<void> => {
      try {
        await new KvClient(client).put(path, v.data, { ifLastIndex });
      } catch (err) {
        if (!(err instanceof VeraError) || err.code !== 'CONFLICT') throw err;
        await loadItems(path);
        throw new VeraError('CONFLICT', `${err.message}: the list changed after it was shown. It is shown again now; look, then put again`);
      }
      setNewValue('');
      setEditing(null);
      setError(null);
      await loadItems(path);
    };
    if (items.length <= 1) {
      run().catch((err: unknown) => setError(`put ${path}: ${describe(err)}`));
      return;
    }
    confirm({
      title: `Put a new value at ${path}?`,
      consequence: `The list's ${count(items.length)} items are replaced by one item holding the edited value, in one committed entry. Watchers are notified; it cannot be undone.`,
      action: `Replace ${count(items.length)} items`,
      run,
    });
  };

  return (
    <div class="grid2" data-testid="data-panel">
      <section class="card">
        <h2>Paths</h2>
        <form
          class="row"
          onSubmit={(e) => {
            e.preventDefault();
            if (search.startsWith('/')) void goTo(search.replace(/\/+$/, '') || '/');
          }}
        >
          <input placeholder="/path/prefix" value={search} onInput={(e) => setSearch((e.target as HTMLInputElement).value)} data-testid="search" />
          <button type="submit">Go</button>
        </form>
        <div class="tree" data-testid="tree">
          {renderNode('/', 0)}
        </div>
      </section>
      <section class="card">
        {error !== null && (
          <div class="error" onClick={() => setError(null)}>
            {error}
          </div>
        )}
        {selected === null ? (
          <p class="muted">Pick a path.</p>
        ) : (
          <div>
            <h2 class="mono" data-testid="selected">
              {selected}
            </h2>
            {items === null ? (
              <p class="muted">Reading…</p>
            ) : (
              <div>
                <div class="row">
                  <span data-testid="item-count">{count(items.length)} items</span>
                  {pageCount > 1 && (
                    <span class="row">
                      <button disabled={page === 0} onClick={() => setPage(page - 1)} data-testid="prev">
                        ‹ prev
                      </button>
                      <span data-testid="page">
                        page {page + 1} of {pageCount}
                      </span>
                      <button disabled={page + 1 >= pageCount} onClick={() => setPage(page + 1)} data-testid="next">
                        next ›
                      </button>
                    </span>
                  )}
                  {!readOnly && (
                    <button class="danger" onClick={() => void deleteSubtree(selected)}>
                      delete subtree…
                    </button>
                  )}
                </div>
                <table data-testid="items">
                  <thead>
                    <tr>
                      <th class="num">index</th>
                      <th>owner</th>
                      <th class="num">size</th>
                      <th>value</th>
                      <th />
                    </tr>
                  </thead>
                  <tbody>
                    {shown.map((it) => {
                      const v = preview(it.data);
                      return (
                        <tr key={it.index} data-index={it.index}>
                          <td class="num">{it.index}</td>
                          <td class="mono">{it.owner ?? <span class="muted">persistent</span>}</td>
                          <td class="num">{bytes(new TextEncoder().encode(v.full).length)}</td>
                          <td class="value mono">
                            {v.text}
                            {v.cut && (
                              <button onClick={() => download(`${selected.slice(1).replace(/\//g, '_')}-${it.index}.json`, v.full)} style={{ marginLeft: '6px' }}>
                                download
                              </button>
                            )}
                          </td>
                          <td>
                            {!readOnly && (
                              <span class="row" style={{ flexWrap: 'nowrap', marginBottom: 0 }}>
                                <button
                                  data-testid="edit"
                                  onClick={() => {
                                    setNewValue(JSON.stringify(it.data, null, 2));
                                    setEditing(it.index);
                                  }}
                                >
                                  edit
                                </button>
                                <button
                                  onClick={() => {
                                    client.delete(selected, it.index).then(() => loadItems(selected), (e: unknown) => setError(describe(e)));
                                  }}
                                >
                                  delete
                                </button>
                              </span>
                            )}
                          </td>
                        </tr>
                      );
                    })}
                  </tbody>
                </table>
              </div>
            )}
            {!readOnly && (
              <form
                style={{ marginTop: '12px' }}
                data-testid="editor"
                onSubmit={(e) => {
                  e.preventDefault();
                  pushValue(selected);
                }}
              >
                <p class="muted" style={{ margin: '0 0 6px' }}>
                  {editing === null ? 'A value, as JSON:' : `Item ${editing}'s value, as JSON: push it as a new item, or put it as the list's only value.`}
                </p>
                <textarea
                  class="editor"
                  spellcheck={false}
                  placeholder={'{\n  "hello": "world"\n}'}
                  value={newValue}
                  onInput={(e) => setNewValue((e.target as HTMLTextAreaElement).value)}
                  data-testid="push-value"
                />
                <div class="row" style={{ marginTop: '6px' }}>
                  <button type="submit" class="primary" data-testid="push">
                    push (persistent)
                  </button>
                  <button type="button" data-testid="put" onClick={() => putValue(selected)}>
                    put (replace the list)
                  </button>
                  <button
                    type="button"
                    data-testid="format"
                    onClick={() => {
                      const v = editorValue();
                      if (v.ok) setNewValue(JSON.stringify(v.data, null, 2));
                    }}
                  >
                    format JSON
                  </button>
                </div>
              </form>
            )}
          </div>
        )}
      </section>
    </div>
  );
}
