#!/usr/bin/env node
// A small session host written with vscode-jsonrpc: the client side of
// Bridge's host/* contract (ARCHITECTURE.md, The client contract), for interop tests. It speaks JSON-RPC
// 2.0 with LSP (Content-Length) framing on stdin/stdout, keeps its sessions in
// memory, and answers every host/<capability> request Bridge may send. The
// "model" is scripted:
//
//   - a prompt with a line "say X" answers X;
//   - a prompt containing "Bridge checkpoint request" answers a JSON object
//     {"summary": ..., "decisions": [...], ...};
//   - a prompt containing "You write handoffs" answers a five-section handoff;
//   - anything else answers a short greeting.
//
// Each turn's events go out as host/event notifications (an assistant.message
// entry, then a context gauge) before the host/session.prompt reply, as the
// contract requires.
//
// Usage: node host.mjs [--harness NAME] [--bridge-client]   (default NAME: node-host)
// Diagnostics go to stderr; stdout is the protocol.

import { randomUUID } from 'node:crypto';
import rpc from 'vscode-jsonrpc/node.js';

const { createMessageConnection, StreamMessageReader, StreamMessageWriter, ResponseError } = rpc;

const args = process.argv.slice(2);
const harnessArg = args.indexOf('--harness');
const HARNESS = harnessArg >= 0 && args[harnessArg + 1] ? args[harnessArg + 1] : 'node-host';
const VERSION = '0.1.0';
const WINDOW = 200000;

// Capabilities this host implements, in doctor's spelling.
export const REQUIRED = [
  'session.list', 'session.create', 'session.history', 'session.models', 'session.selectModel',
  'session.prompt', 'session.cancel', 'session.rename', 'workspace.list', 'workspace.archiveSession',
  'agentPreset.list', 'goal.create', 'goal.pause',
];
export const OPTIONAL = [
  'session.attachment', 'goal.clear', 'native.resume', 'compaction.command', 'compaction.focus', 'context.gauge',
];
const NOT_IMPLEMENTED = ['session.historyWindow'];

const MODELS = [
  { id: 'node-large', name: 'Node Large', efforts: ['low', 'medium', 'high'], vision: true },
  { id: 'node-small', name: 'Node Small', efforts: ['low'] },
];
const PRESETS = [
  { name: 'coder', harness: HARNESS, description: 'edits files' },
  { name: 'reviewer', harness: HARNESS, description: 'read-only review', model: 'node-small' },
];

const CODE_NOT_FOUND = -32004;
const CODE_INVALID = -32602;
const CODE_BUSY = -32005;

/** sessions by nativeId */
const sessions = new Map();

const log = (...a) => process.stderr.write(`[${HARNESS}] ${a.join(' ')}\n`);

const conn = createMessageConnection(new StreamMessageReader(process.stdin), new StreamMessageWriter(process.stdout));

function notFound(id) {
  return new ResponseError(CODE_NOT_FOUND, `session ${id} not found`);
}

function session(id, { live = false } = {}) {
  const s = sessions.get(id);
  if (!s) throw notFound(id);
  if (live && !s.live) throw new ResponseError(CODE_INVALID, `session ${id} is not live (create or resume it first)`);
  return s;
}

function newSession(p) {
  const id = `node-${randomUUID()}`;
  const s = {
    id, cwd: p.cwd || process.cwd(), title: p.title || '', preset: p.preset?.name || '',
    model: p.model || p.preset?.model || MODELS[0].id, effort: p.effort || '',
    live: true, archived: false, busy: false, cancelled: false,
    entries: [], seq: 0, used: 0, goals: new Map(), attachments: new Map(),
    updatedAt: new Date().toISOString(),
  };
  sessions.set(id, s);
  return s;
}

function record(s, kind, payload, tag) {
  s.seq += 1;
  const e = { kind, payload, nativeId: `${s.id}:${tag}${s.seq}` };
  s.entries.push(e);
  s.updatedAt = new Date().toISOString();
  return e;
}

async function event(s, body) {
  await conn.sendNotification('host/event', { nativeId: s.id, ...body });
}

const HANDOFF = `## Goal
Carry the hosted task on; done when the tests pass.

## Current state
The node host answered every prompt; the budget is 4096 tokens.

## Key decisions & conventions
- Keep the scripted host small.

## Key files
- clients/interop/host/host.mjs

## Next step
Restate the task and wait.
`;

function answer(text) {
  if (text.includes('Bridge checkpoint request')) {
    return JSON.stringify({
      summary: 'The node host answered the prompts it was given.',
      decisions: ['keep the scripted host small'],
      filesTouched: [],
      openWork: ['wait for the next prompt'],
    });
  }
  if (text.includes('You write handoffs')) return HANDOFF;
  const m = /^say (.+)$/m.exec(text);
  if (m) return m[1].trim();
  return `Hello from ${HARNESS}.`;
}

conn.onRequest('host/probe', () => ({
  harness: HARNESS, binary: process.execPath, version: VERSION,
  capabilities: [
    ...REQUIRED.map((name) => ({ name, required: true, available: true })),
    ...OPTIONAL.map((name) => ({ name, required: false, available: true })),
    ...NOT_IMPLEMENTED.map((name) => ({ name, required: false, available: false, detail: 'not implemented by the node host' })),
  ],
}));

conn.onRequest('host/session.list', (p) => ({
  sessions: [...sessions.values()]
    .filter((s) => !s.archived && (!p?.cwd || s.cwd === p.cwd))
    .map((s) => ({ nativeId: s.id, title: s.title || undefined, cwd: s.cwd, updatedAt: s.updatedAt })),
}));

conn.onRequest('host/session.create', (p) => {
  if (!p || typeof p.cwd !== 'string' || p.cwd === '') throw new ResponseError(CODE_INVALID, 'cwd is required');
  const s = newSession(p);
  log('created', s.id, 'preset', s.preset || '(default)');
  return { nativeId: s.id };
});

conn.onRequest('host/native.resume', (p) => {
  const s = sessions.get(p?.nativeId);
  if (!s) throw new ResponseError(CODE_NOT_FOUND, `no stored session ${p?.nativeId} to resume`);
  if (s.live) throw new ResponseError(CODE_BUSY, `session ${s.id} is already live`);
  s.live = true;
  if (p.model) s.model = p.model;
  return { nativeId: s.id };
});

conn.onRequest('host/session.history', (p) => ({ entries: session(p?.nativeId).entries }));

conn.onRequest('host/session.models', () => ({ models: MODELS }));

conn.onRequest('host/session.selectModel', (p) => {
  const s = session(p?.nativeId, { live: true });
  if (p.model) {
    if (!MODELS.some((m) => m.id === p.model)) throw new ResponseError(CODE_INVALID, `unknown model ${p.model}`);
    s.model = p.model;
  }
  if (p.effort) s.effort = p.effort;
  return {};
});

conn.onRequest('host/session.prompt', async (p, token) => {
  const s = session(p?.nativeId, { live: true });
  if (!Array.isArray(p.content) || p.content.length === 0) throw new ResponseError(CODE_INVALID, 'content is empty');
  const text = [];
  let images = 0;
  for (const [i, c] of p.content.entries()) {
    if (c.type === 'text') text.push(c.text || '');
    else if (c.type === 'image') {
      if (!c.data || !c.mediaType) throw new ResponseError(CODE_INVALID, `content[${i}]: an image needs mediaType and data`);
      images += 1;
      s.attachments.set(`img-${s.seq + 1}-${images}`, { type: 'image', mediaType: c.mediaType, data: c.data });
    } else throw new ResponseError(CODE_INVALID, `content[${i}]: unknown type ${JSON.stringify(c.type)}`);
  }
  if (s.busy) throw new ResponseError(CODE_BUSY, `session ${s.id} is running a turn`);
  s.busy = true;
  s.cancelled = false;
  try {
    const prompt = text.join('\n');
    const userPayload = { text: prompt };
    if (images) userPayload.images = images;
    record(s, 'user.message', userPayload, 'u'); // kept in the host's history, not echoed as an event
    if (token.isCancellationRequested || s.cancelled) return { stopReason: 'cancelled' };
    const reply = answer(prompt);
    const e = record(s, 'assistant.message', { text: reply }, 'a');
    await event(s, { entry: e });
    s.used += Math.ceil((prompt.length + reply.length) / 4) + 1;
    await event(s, { gauge: { used: s.used, size: WINDOW } });
    return { stopReason: 'end_turn' };
  } finally {
    s.busy = false;
  }
});

conn.onRequest('host/session.cancel', (p) => {
  const s = session(p?.nativeId);
  s.cancelled = true;
  return {};
});

conn.onRequest('host/session.rename', (p) => {
  const s = session(p?.nativeId);
  s.title = p.title || '';
  return {};
});

conn.onRequest('host/session.close', (p) => {
  const s = session(p?.nativeId);
  s.live = false;
  return {};
});

conn.onRequest('host/session.attachment', (p) => {
  const s = session(p?.nativeId);
  const c = s.attachments.get(p.ref);
  if (!c) throw new ResponseError(CODE_NOT_FOUND, `attachment ${p.ref} not found in session ${s.id}`);
  return { content: c };
});

conn.onRequest('host/workspace.list', () => {
  const paths = new Set([process.cwd(), ...[...sessions.values()].map((s) => s.cwd)]);
  return { workspaces: [...paths].map((path) => ({ path })) };
});

conn.onRequest('host/workspace.archiveSession', (p) => {
  const s = session(p?.nativeId);
  s.archived = true;
  s.live = false;
  return {};
});

conn.onRequest('host/agentPreset.list', () => ({ presets: PRESETS }));

conn.onRequest('host/goal.create', (p) => {
  const s = session(p?.nativeId, { live: true });
  if (!p.text) throw new ResponseError(CODE_INVALID, 'goal text is required');
  const goalId = `goal-${s.goals.size + 1}`;
  s.goals.set(goalId, { text: p.text, rounds: p.rounds || 1, status: 'active' });
  return { goalId };
});

function goal(p) {
  const s = session(p?.nativeId);
  const g = s.goals.get(p.goalId);
  if (!g) throw new ResponseError(CODE_NOT_FOUND, `goal ${p.goalId} not found in session ${s.id}`);
  return g;
}

conn.onRequest('host/goal.pause', (p) => {
  goal(p).status = 'paused';
  return {};
});

conn.onRequest('host/goal.clear', (p) => {
  goal(p).status = 'cleared';
  return {};
});

conn.onRequest('host/compaction.command', async (p) => {
  const s = session(p?.nativeId, { live: true });
  const pre = s.used;
  s.used = Math.ceil(s.used / 4);
  s.seq += 1;
  const payload = {
    harness: HARNESS, trigger: 'manual', preTokens: pre, postTokens: s.used, nativeId: `${s.id}:c${s.seq}`,
    summary: 'The node host compacted its window.', raw: { command: 'compact' },
  };
  if (p.focus) {
    payload.focus = p.focus;
    payload.focusApplied = true;
  }
  const e = { kind: 'context.compacted', payload, nativeId: payload.nativeId };
  s.entries.push(e);
  await event(s, { entry: e });
  return { focusApplied: Boolean(p.focus) };
});

// --bridge-client: also act as the Bridge client on the same connection
// (stdin/stdout are then Bridge's stdout/stdin): initialize as a hosting
// client, run one hosted session through Bridge, check what comes back, shut
// Bridge down, and exit 0 on success or 1 with the reason on stderr.
async function runAsBridgeClient() {
  const updates = [];
  conn.onNotification('session/update', (p) => updates.push(p));
  const fail = (msg) => {
    throw new Error(msg);
  };
  const init = await conn.sendRequest('initialize', {
    processId: process.pid,
    clientInfo: { name: HARNESS, version: VERSION },
    capabilities: {},
    initializationOptions: { hostsSessions: true, hostHarness: HARNESS, hostCapabilities: [...REQUIRED, ...OPTIONAL] },
  });
  if (init?.serverInfo?.name !== 'bridge') fail(`initialize answered ${JSON.stringify(init)}`);
  await conn.sendNotification('initialized', {});
  const doctor = await conn.sendRequest('bridge/doctor', { harness: HARNESS });
  const mine = doctor.adapters?.find((a) => a.harness === HARNESS);
  if (!mine?.ok) fail(`doctor does not report ${HARNESS} ok: ${JSON.stringify(doctor)}`);
  const created = await conn.sendRequest('session/create', { harness: HARNESS, cwd: process.cwd(), title: 'interop' });
  const sessionId = created.sessionId;
  if (!sessionId || !created.nativeSessionId?.startsWith('node-')) fail(`session/create answered ${JSON.stringify(created)}`);
  const turn = await conn.sendRequest('session/prompt', { sessionId, content: [{ type: 'text', text: 'say hello from node' }] });
  if (turn.stopReason !== 'end_turn') fail(`session/prompt answered ${JSON.stringify(turn)}`);
  const hist = await conn.sendRequest('session/history', { sessionId });
  const kinds = hist.entries.map((e) => `${e.kind}:${e.payload?.text ?? ''}`);
  if (!kinds.includes('user.message:say hello from node') || !kinds.includes('assistant.message:hello from node')) {
    fail(`session/history holds ${JSON.stringify(kinds)}`);
  }
  if (!updates.some((u) => u.sessionId === sessionId && u.entry?.kind === 'assistant.message')) {
    fail('no session/update carried the assistant.message');
  }
  const cp = await conn.sendRequest('session/checkpoint', { sessionId });
  // A hosting client offers no fork of its sessions, so Bridge rebuilds the
  // checkpoint from the record rather than asking inside the live thread.
  if (cp.method !== 'reconstructed' || cp.provenance !== 'reconstructed' || !cp.entryId) {
    fail(`session/checkpoint answered ${JSON.stringify(cp)}`);
  }
  await conn.sendRequest('shutdown', null);
  await conn.sendNotification('exit');
  process.stderr.write(`RESULT ${JSON.stringify({ sessionId, kinds, checkpoint: cp })}\n`);
}

conn.onClose(() => process.exit(0));
conn.onError(([err]) => log('connection error:', err?.message || err));
conn.listen();
log('ready');
if (args.includes('--bridge-client')) {
  runAsBridgeClient().then(
    () => setTimeout(() => process.exit(0), 50),
    (err) => {
      log('bridge client failed:', err?.message || String(err));
      process.exit(1);
    },
  );
}
