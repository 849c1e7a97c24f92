// A second Agent Client Protocol client for `bridge acp`: the official SDK
// (@agentclientprotocol/sdk, npm) client-side connection, driving the
// binary over the fake harness through every method and update Bridge
// serves. Every message Bridge sends is also checked against the SDK's own
// generated zod schemas of ACP v1 (a response by the schema of its
// request's method), so a shape the protocol does not allow fails here
// even where the SDK itself would be lenient.
//
// Usage: node acp-sdk.mjs BRIDGE DATA_DIR CWD   (run by cmd/bridge's
// TestACPSDKClientCoversEveryMethod; prints "acp-sdk: ok" and the session
// id on success).
import { spawn } from "node:child_process";
import { Readable, Writable } from "node:stream";
import { createRequire } from "node:module";
import path from "node:path";
import assert from "node:assert/strict";

const require = createRequire(import.meta.url);
const sdkMain = require.resolve("@agentclientprotocol/sdk");
const acp = await import(sdkMain);
// The generated schemas are not exported by the package; load the file.
const zod = await import(path.join(path.dirname(sdkMain), "..", "schema", "zod.gen.js"));

const [bridge, dataDir, cwd] = process.argv.slice(2);
if (!bridge || !dataDir || !cwd) {
  console.error("usage: acp-sdk.mjs BRIDGE DATA_DIR CWD");
  process.exit(2);
}

// The schema of each response, by the method of its request.
const responseSchemas = {
  initialize: zod.zInitializeResponse,
  "session/new": zod.zNewSessionResponse,
  "session/load": zod.zLoadSessionResponse,
  "session/resume": zod.zResumeSessionResponse,
  "session/list": zod.zListSessionsResponse,
  "session/close": zod.zCloseSessionResponse,
  "session/prompt": zod.zPromptResponse,
  "session/set_config_option": zod.zSetSessionConfigOptionResponse,
};
const notificationSchemas = { "session/update": zod.zSessionNotification };
const requestSchemas = { "session/request_permission": zod.zRequestPermissionRequest };

// start runs one `bridge acp` process and returns its SDK stream, with every
// message checked on the way in, and a promise of its exit code.
function start() {
  const child = spawn(bridge, ["--data-dir", dataDir, "acp", "--harness", "fake"], {
    stdio: ["pipe", "pipe", "inherit"],
    env: { ...process.env, BRIDGE_FAKE_GAUGE: "1", BRIDGE_FAKE_WINDOW: "100000" },
  });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code)));
  const raw = acp.ndJsonStream(Writable.toWeb(child.stdin), Readable.toWeb(child.stdout));
  const sent = new Map(); // request id -> method
  const writer = raw.writable.getWriter();
  const writable = new WritableStream({
    write(msg) {
      if (msg.method && msg.id !== undefined) sent.set(String(msg.id), msg.method);
      if (debug) console.error("->", JSON.stringify(msg).slice(0, 300));
      return writer.write(msg);
    },
    close() {
      return writer.close();
    },
  });
  const readable = raw.readable.pipeThrough(
    new TransformStream({
      transform(msg, ctl) {
        check(msg, sent);
        ctl.enqueue(msg);
      },
    }),
  );
  return { child, exited, stream: { readable, writable } };
}

let checked = 0;
const debug = !!process.env.ACP_SDK_DEBUG;
function check(msg, sent) {
  if (debug) console.error("<-", JSON.stringify(msg).slice(0, 300));
  let schema, what;
  if (msg.method) {
    schema = (msg.id !== undefined ? requestSchemas : notificationSchemas)[msg.method];
    what = msg.method;
    if (!schema) throw new Error(`bridge sent an unexpected ${what}: ${JSON.stringify(msg)}`);
    schema.parse(msg.params);
  } else if (msg.result !== undefined) {
    what = sent.get(String(msg.id));
    schema = responseSchemas[what];
    if (schema) schema.parse(msg.result ?? {});
  }
  checked++;
}

// A recording client: session/update notifications are kept; permission
// requests are answered from a queue of option kinds.
function recorder() {
  const updates = [];
  const waiters = [];
  const answers = [];
  const asked = [];
  const app = acp
    .client({ name: "bridge-acp-sdk-test" })
    .onNotification("session/update", ({ params }) => {
      updates.push(params);
      for (const w of [...waiters]) {
        if (w.pred(params)) {
          waiters.splice(waiters.indexOf(w), 1);
          w.resolve(params);
        }
      }
    })
    .onRequest("session/request_permission", ({ params }) => {
      asked.push(params);
      const kind = answers.shift();
      const opt = params.options.find((o) => o.kind === kind);
      if (!opt) return { outcome: { outcome: "cancelled" } };
      return { outcome: { outcome: "selected", optionId: opt.optionId } };
    });
  const waitFor = (pred, label) => {
    const hit = updates.find(pred);
    if (hit) return Promise.resolve(hit);
    return new Promise((resolve, reject) => {
      const t = setTimeout(() => reject(new Error(`no update: ${label}\n${JSON.stringify(updates, null, 1)}`)), 60000);
      waiters.push({ pred, resolve: (v) => (clearTimeout(t), resolve(v)) });
    });
  };
  const of = (sid, kind) => updates.filter((u) => u.sessionId === sid && u.update.sessionUpdate === kind).map((u) => u.update);
  const text = (sid, kind = "agent_message_chunk") => of(sid, kind).map((u) => u.content.text).join("");
  return { app, updates, answers, asked, waitFor, of, text };
}

// renameElsewhere renames a session through a second Bridge process on the
// same data directory: `bridge serve`, JSON-RPC in LSP framing.
async function renameElsewhere(sessionId, title) {
  const child = spawn(bridge, ["--data-dir", dataDir, "serve"], { stdio: ["pipe", "pipe", "inherit"] });
  const exited = new Promise((resolve) => child.on("exit", (code, signal) => resolve(signal ?? code)));
  let buf = Buffer.alloc(0);
  const waiting = new Map(); // id -> resolve
  child.stdout.on("data", (chunk) => {
    buf = Buffer.concat([buf, chunk]);
    for (;;) {
      const end = buf.indexOf("\r\n\r\n");
      if (end < 0) return;
      const len = Number(/Content-Length: *(\d+)/i.exec(buf.subarray(0, end).toString())?.[1]);
      if (buf.length < end + 4 + len) return;
      const msg = JSON.parse(buf.subarray(end + 4, end + 4 + len).toString());
      buf = buf.subarray(end + 4 + len);
      if (msg.id !== undefined && waiting.has(msg.id)) waiting.get(msg.id)(msg);
    }
  });
  let next = 0;
  const call = (method, params) =>
    new Promise((resolve, reject) => {
      const id = ++next;
      waiting.set(id, (msg) => (msg.error ? reject(new Error(`${method}: ${msg.error.message}`)) : resolve(msg.result)));
      const body = JSON.stringify({ jsonrpc: "2.0", id, method, params });
      child.stdin.write(`Content-Length: ${Buffer.byteLength(body)}\r\n\r\n${body}`);
    });
  await call("initialize", { capabilities: {} });
  await call("session/rename", { sessionId, title });
  await call("shutdown", null);
  const exit = JSON.stringify({ jsonrpc: "2.0", method: "exit" });
  child.stdin.end(`Content-Length: ${Buffer.byteLength(exit)}\r\n\r\n${exit}`);
  assert.equal(await exited, 0, "bridge serve exits 0 after shutdown and exit");
}

const initParams = {
  protocolVersion: acp.PROTOCOL_VERSION,
  clientCapabilities: { fs: { readTextFile: false, writeTextFile: false }, terminal: false },
  clientInfo: { name: "acp-sdk-test", version: "1" },
};

const checkpointReply =
  'next json {"summary": "greeted and listed the folder", "decisions": ["keep the fake"], "filesTouched": [], "openWork": ["run the tests"]}';

// --- First process: a new session and everything a turn shows. ---
const one = start();
const r1 = recorder();
let sid, forked, target;
await r1.app.connectWith(one.stream, async (agent) => {
  const init = await agent.request("initialize", initParams);
  assert.equal(init.protocolVersion, 1);
  assert.equal(init.agentCapabilities.loadSession, true);
  for (const k of ["list", "resume", "close"]) assert.ok(init.agentCapabilities.sessionCapabilities[k], `sessionCapabilities.${k}`);
  assert.equal(init.agentCapabilities.promptCapabilities.image, true);
  assert.equal(init.agentInfo.name, "bridge");

  const created = await agent.request("session/new", { cwd, mcpServers: [] });
  sid = created.sessionId;
  assert.match(sid, /^s_/, "the ACP session id is the Bridge session id");
  const model = created.configOptions.find((o) => o.category === "model");
  assert.ok(model && model.options.length >= 2, "a model choice");
  const cmds = await r1.waitFor((u) => u.sessionId === sid && u.update.sessionUpdate === "available_commands_update", "commands");
  const names = cmds.update.availableCommands.map((c) => c.name);
  for (const n of ["compact", "checkpoint", "fork", "migrate", "search"]) assert.ok(names.includes(n), `/${n} announced`);

  // One turn: thinking, text, an approved tool, another tool, a plan, usage.
  r1.answers.push("allow_once");
  const res = await agent.request("session/prompt", {
    sessionId: sid,
    prompt: [
      { type: "text", text: "think weighing the options\nsay hello from the fake\nask Bash ls -la\ntool Read main.go\nplan completed:look; in_progress:write; pending:test\nusage 4200" },
    ],
  });
  assert.equal(res.stopReason, "end_turn");
  assert.equal(r1.text(sid, "agent_thought_chunk"), "weighing the options");
  assert.ok(r1.text(sid).includes("hello from the fake"));
  assert.equal(r1.asked.length, 1, "one permission request");
  const ask = r1.asked[0];
  assert.equal(ask.sessionId, sid);
  assert.equal(ask.toolCall.kind, "execute");
  assert.deepEqual(ask.options.map((o) => o.kind).sort(), ["allow_always", "allow_once", "reject_always", "reject_once"]);
  const calls = r1.of(sid, "tool_call");
  const bash = calls.find((c) => c.title.startsWith("Bash"));
  assert.ok(bash && bash.kind === "execute" && bash.status === "in_progress" && bash.rawInput !== undefined, "Bash tool_call");
  const read = calls.find((c) => c.title.startsWith("Read"));
  assert.ok(read && read.kind === "read", "Read tool_call");
  const done = r1.of(sid, "tool_call_update").filter((u) => u.status === "completed");
  assert.ok(done.some((u) => u.toolCallId === bash.toolCallId && String(u.rawOutput).includes("fake Bash done")), "Bash completed");
  assert.ok(done.some((u) => u.toolCallId === read.toolCallId), "Read completed");
  const plan = r1.of(sid, "plan").at(-1);
  assert.deepEqual(plan.entries.map((e) => [e.content, e.status]), [["look", "completed"], ["write", "in_progress"], ["test", "pending"]]);
  const usage = await r1.waitFor((u) => u.sessionId === sid && u.update.sessionUpdate === "usage_update", "usage_update");
  assert.equal(usage.update.size, 100000);
  assert.ok(usage.update.used >= 4200, "the gauge reading");

  // A denied tool: the client's reject_once reaches the harness.
  r1.answers.push("reject_once");
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "ask Bash rm -rf /" }] });
  const refused = r1.of(sid, "tool_call").find((c) => c.status === "failed");
  assert.ok(refused && String(refused.rawOutput).includes("refused (reject_once, by user)"), "the refused tool failed");

  // Cancel: a turn that hangs ends "cancelled" on session/cancel.
  const hanging = agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "say waiting\nhang" }] });
  await r1.waitFor((u) => u.sessionId === sid && u.update.content?.text === "waiting", "the hanging turn began");
  await agent.notify("session/cancel", { sessionId: sid });
  assert.equal((await hanging).stopReason, "cancelled");

  // An image in the prompt reaches the harness (the fake names what it got).
  const png = "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mNkYPhfDwAChwGA60e6kgAAAABJRU5ErkJggg==";
  let before = r1.text(sid).length;
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "what is this?" }, { type: "image", data: png, mimeType: "image/png" }] });
  assert.match(r1.text(sid).slice(before), /1 image\(s\): image\/png/);

  // Model selection through a config option.
  const set = await agent.request("session/set_config_option", { sessionId: sid, configId: "model", value: "fake-large" });
  assert.equal(set.configOptions.find((o) => o.id === "model").currentValue, "fake-large");

  // Bridge's own slash commands.
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "say noted\n" + checkpointReply }] });
  before = r1.text(sid).length;
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/checkpoint" }] });
  assert.match(r1.text(sid).slice(before), /Checkpoint saved \(manual, agent/);
  assert.ok(!r1.text(sid).includes("greeted and listed the folder"), "Bridge's own checkpoint exchange is not shown");
  before = r1.text(sid).length;
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/search hello" }] });
  assert.match(r1.text(sid).slice(before), new RegExp(`match\\(es\\) for "hello":\\n- .*${sid}`));
  before = r1.text(sid).length;
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/fork" }] });
  forked = /Forked into session (s_\w+)/.exec(r1.text(sid).slice(before))?.[1];
  assert.ok(forked && forked !== sid, "/fork names the new session");

  // /migrate writes the five-part handoff as a message the user can edit
  // and send back; /migrate-go starts the target from the edited text.
  before = r1.text(sid).length;
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "/migrate fake readonly" }] });
  const shown = r1.text(sid).slice(before);
  const back = /\n(\/migrate-go p_\w+\n[\s\S]*)$/.exec(shown)?.[1];
  assert.ok(back && /Goal/.test(back) && /Next step/.test(back), `the handoff to send back: ${shown}`);
  before = r1.text(sid).length;
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: back.trim() + "\nAlso: keep the fake harness." }] });
  target = /the target session is (s_\w+)/.exec(r1.text(sid).slice(before))?.[1];
  assert.ok(target && target !== sid && target !== forked, `/migrate-go names the target: ${r1.text(sid).slice(before)}`);

  // The agent's session list.
  const list = await agent.request("session/list", { cwd });
  assert.ok(list.sessions.some((s) => s.sessionId === sid && s.cwd === cwd), "session/list has the session");

  await agent.request("session/close", { sessionId: sid });
});
one.child.stdin.end(); // the editor goes away
assert.equal(await one.exited, 0, "bridge acp exits 0 when stdin closes");

// --- Second process: load replays the record, then the harness comes back. ---
const two = start();
const r2 = recorder();
await r2.app.connectWith(two.stream, async (agent) => {
  await agent.request("initialize", initParams);
  const loaded = await agent.request("session/load", { sessionId: sid, cwd, mcpServers: [] });
  assert.equal(loaded._meta.bridge.restoreMode, "native");
  const kinds = r2.updates.filter((u) => u.sessionId === sid).map((u) => u.update.sessionUpdate);
  for (const k of ["user_message_chunk", "agent_message_chunk", "agent_thought_chunk", "tool_call", "tool_call_update", "plan"]) {
    assert.ok(kinds.includes(k), `the replay has ${k}: ${kinds}`);
  }
  assert.ok(r2.text(sid, "user_message_chunk").includes("say hello from the fake"), "the user's prompt replayed");
  const restored = r2.of(sid, "agent_message_chunk").find((u) => u.content.text.startsWith("[Bridge] Session restored"));
  assert.equal(restored?._meta?.bridge?.restoreMode, "native", "the restoration notice says the mode in _meta");
  // The replay comes first, the restoration notice after it.
  const idxRestored = r2.updates.findIndex((u) => u.update === restored);
  const idxLastUser = r2.updates.findLastIndex((u) => u.update.sessionUpdate === "user_message_chunk");
  assert.ok(idxRestored > idxLastUser, "the restoration follows the replay");

  const res = await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "say back again" }] });
  assert.equal(res.stopReason, "end_turn");
  assert.ok(r2.text(sid).includes("back again"));

  // Another process sharing the record (a `bridge serve`) renames the
  // session: the client is told with a session_info_update.
  await renameElsewhere(sid, "renamed by another process");
  const info = await r2.waitFor(
    (u) => u.sessionId === sid && u.update.sessionUpdate === "session_info_update" && u.update.title === "renamed by another process",
    "session_info_update with the new title",
  );
  assert.equal(info.update._meta?.bridge?.archived, false, "the session_info_update says the session is not archived");

  await agent.request("session/close", { sessionId: sid });
  const resumed = await agent.request("session/resume", { sessionId: sid, cwd, mcpServers: [] });
  assert.equal(resumed._meta.bridge.restoreMode, "native");
  const before = r2.updates.length;
  await agent.request("session/prompt", { sessionId: sid, prompt: [{ type: "text", text: "say resumed fine\n" + checkpointReply }] });
  assert.ok(!r2.updates.slice(before).some((u) => u.update.sessionUpdate === "user_message_chunk"), "resume replays nothing");

  // session/fork (unstable in ACP; Bridge offers it).
  const f = await agent.request("session/fork", { sessionId: sid, cwd, mcpServers: [] });
  assert.match(f.sessionId, /^s_/);
  assert.notEqual(f.sessionId, sid);

  // A request for a session that does not exist: ACP's "resource not found".
  await assert.rejects(agent.request("session/load", { sessionId: "s_00000000000000000000000000", cwd, mcpServers: [] }), (e) => e.code === -32002);
});
two.child.stdin.end();
assert.equal(await two.exited, 0, "bridge acp exits 0 when stdin closes");
assert.ok(checked > 20, "messages were checked");
console.log(`acp-sdk: ok ${sid} ${target} (${checked} messages checked against the ACP v1 schemas)`);
