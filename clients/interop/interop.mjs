// Interop test: drives a Bridge server binary over stdio with the
// vscode-jsonrpc 8.2.1 client that editor extensions use.
//
//   node clients/interop/interop.mjs <path-to-server-binary> [args...]
//
// It initializes, creates a session with the "fake" harness, prompts it and
// collects session/update notifications, reads session/history and
// session/list, cancels a slow prompt (expecting -32800), then shuts down
// and exits, expecting exit code 0. It prints "interop: ok" and exits 0 on
// success; on failure it prints the reason and exits 1.
import { spawn } from 'node:child_process';
import assert from 'node:assert/strict';
import jsonrpc from 'vscode-jsonrpc/node.js';

const { createMessageConnection, StreamMessageReader, StreamMessageWriter, CancellationTokenSource, ResponseError } = jsonrpc;

const [bin, ...args] = process.argv.slice(2);
if (!bin) {
  console.error('usage: node interop.mjs <path-to-server-binary> [args...]');
  process.exit(2);
}

const child = spawn(bin, args, { stdio: ['pipe', 'pipe', 'inherit'] });
const exited = new Promise((resolve, reject) => {
  child.on('exit', (code, signal) => resolve({ code, signal }));
  child.on('error', reject);
});

const conn = createMessageConnection(new StreamMessageReader(child.stdout), new StreamMessageWriter(child.stdin));
const updates = [];
const waiters = [];
conn.onNotification('session/update', (p) => {
  updates.push(p);
  for (const w of waiters.splice(0)) w();
});
// Resolves once pred holds on the updates seen so far (no sleeps).
function awaitUpdates(pred) {
  return new Promise((resolve) => {
    const check = () => (pred(updates) ? resolve() : waiters.push(check));
    check();
  });
}
conn.onNotification('window/logMessage', (p) => console.error(`server log: ${p.message}`));
conn.listen();

async function main() {
  const init = await conn.sendRequest('initialize', {
    processId: process.pid,
    clientInfo: { name: 'interop', version: '1' },
    capabilities: {},
  });
  assert.equal(init.serverInfo.name, 'bridge');
  assert.ok(init.capabilities.methods.includes('session/prompt'), 'initialize lists session/prompt');
  await conn.sendNotification('initialized', {});

  const created = await conn.sendRequest('session/create', { harness: 'fake', cwd: process.cwd(), title: 'interop' });
  assert.equal(created.harness, 'fake');
  const sessionId = created.sessionId;
  assert.equal(typeof sessionId, 'string');

  const turn = await conn.sendRequest('session/prompt', { sessionId, content: [{ type: 'text', text: 'hello' }] });
  assert.equal(turn.stopReason, 'end_turn');
  await awaitUpdates((u) => u.filter((x) => x.sessionId === sessionId).length >= 2);
  const mine = updates.filter((x) => x.sessionId === sessionId);
  assert.equal(mine[0].entry.kind, 'user.message');
  assert.equal(mine[0].entry.payload.text, 'hello');
  assert.equal(mine[1].entry.kind, 'assistant.message');
  assert.equal(mine[1].entry.parentId, mine[0].entry.id);

  const history = await conn.sendRequest('session/history', { sessionId, maxMessages: 10 });
  assert.equal(history.hasMore, false);
  assert.deepEqual(history.entries.map((e) => e.id), mine.map((u) => u.entry.id));
  assert.ok(history.entries.every((e) => typeof e.seq === 'number' && typeof e.createdAt === 'string'));

  const list = await conn.sendRequest('session/list', {});
  assert.ok(list.items.some((s) => s.sessionId === sessionId && s.harness === 'fake' && s.archived === false),
    `session/list lacks ${sessionId}: ${JSON.stringify(list)}`);

  // Unknown method and invalid params keep their codes through the client.
  await assert.rejects(conn.sendRequest('session/teleport', {}), (e) => e instanceof ResponseError && e.code === -32601);
  await assert.rejects(conn.sendRequest('session/history', {}), (e) => e.code === -32602 && /sessionId/.test(e.message));

  // Cancel a blocked prompt: the client sends $/cancelRequest once the
  // server has recorded the prompt; the reply is -32800.
  const cts = new CancellationTokenSource();
  const before = updates.length;
  // "hang" is adapters/fake's directive to block until cancelled; the test
  // server does the same.
  const slow = conn.sendRequest('session/prompt', { sessionId, content: [{ type: 'text', text: 'hang' }] }, cts.token);
  await awaitUpdates((u) => u.slice(before).some((x) => x.entry.payload.text === 'hang'));
  cts.cancel();
  await assert.rejects(slow, (e) => e instanceof ResponseError && e.code === -32800);

  await conn.sendRequest('shutdown');
  await conn.sendNotification('exit');
  const { code, signal } = await exited;
  assert.equal(signal, null);
  assert.equal(code, 0, 'exit code after shutdown');
  conn.dispose();
}

main().then(
  () => {
    console.log('interop: ok');
    process.exit(0);
  },
  (err) => {
    console.error(`interop: FAIL: ${err && err.stack ? err.stack : err}`);
    child.kill();
    process.exit(1);
  },
);
