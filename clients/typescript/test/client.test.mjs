// The client package against the real bridge binary ($BRIDGE_BIN), over
// stdio (spawnBridge) and over bridge web's WebSocket (connectWebSocket).
// Run by `go test ./clients/typescript` (which builds the binary), or by
// hand: BRIDGE_BIN=/path/to/bridge node --experimental-websocket --test test/
import assert from "node:assert/strict";
import { spawn } from "node:child_process";
import { mkdtempSync } from "node:fs";
import { tmpdir } from "node:os";
import path from "node:path";
import { after, test } from "node:test";
import { CancellationTokenSource } from "vscode-jsonrpc/node.js";
import { ClosedError, connectWebSocket, errorCode, spawnBridge } from "../dist/esm/index.js";

const bin = process.env.BRIDGE_BIN;
if (!bin) throw new Error("BRIDGE_BIN must name the bridge binary to test");
const tmp = () => mkdtempSync(path.join(tmpdir(), "bridge-client-test-"));
const text = (t) => [{ type: "text", text: t }];

// exercise runs the same calls over any transport.
async function exercise(client) {
  const init = await client.initialize({ clientInfo: { name: "node-test" } });
  assert.equal(init.serverInfo.name, "bridge");
  const updates = [];
  client.onNotification("session/update", (p) => updates.push(p));

  const s = await client.request("session/create", { harness: "fake", cwd: tmp(), title: "node test" });
  assert.equal(s.harness, "fake");
  const r = await client.request("session/prompt", { sessionId: s.sessionId, content: text("say hello from node") });
  assert.equal(r.stopReason, "end_turn");
  const h = await client.request("session/history", { sessionId: s.sessionId });
  assert.ok(h.entries.some((e) => JSON.stringify(e.payload).includes("hello from node")), "history holds the reply");
  for (let i = 0; i < 100 && !updates.some((u) => u.sessionId === s.sessionId); i++) {
    await new Promise((res) => setTimeout(res, 20));
  }
  assert.ok(updates.some((u) => u.sessionId === s.sessionId), "session/update arrived");

  const list = await client.request("session/list", {});
  assert.ok(list.items.some((i) => i.sessionId === s.sessionId));

  await assert.rejects(client.request("session/history", { sessionId: "s_missing" }), (err) => {
    assert.equal(errorCode(err), "not_found");
    return true;
  });

  // Cancellation sends $/cancelRequest: the hanging prompt answers -32800.
  const cts = new CancellationTokenSource();
  const hanging = client.request("session/prompt", { sessionId: s.sessionId, content: text("hang") }, cts.token);
  await client.request("session/list", {});
  cts.cancel();
  await assert.rejects(hanging, (err) => {
    assert.equal(err.code, -32800);
    return true;
  });
  return s.sessionId;
}

test("spawnBridge: typed calls over stdio", async () => {
  const client = spawnBridge({ command: bin, dataDir: tmp() });
  await exercise(client);
  await client.shutdown();
  assert.equal(await client.process.exited, 0);
});

// startWeb runs bridge web and resolves to its URL line's parts (and the process).
function startWeb(dataDir) {
  const child = spawn(bin, ["web", "--data-dir", dataDir, "--listen", "127.0.0.1:0"], { stdio: ["ignore", "pipe", "inherit"] });
  after(() => child.kill("SIGTERM"));
  return new Promise((resolve, reject) => {
    let buf = "";
    child.stdout.setEncoding("utf8");
    child.stdout.on("data", (d) => {
      buf += d;
      const line = buf.split("\n")[0];
      if (!buf.includes("\n")) return;
      const m = /^Bridge WebUI: (http:\/\/127\.0\.0\.1:\d+)\/#token=(\S+)$/.exec(line);
      if (!m) reject(new Error(`unexpected first line ${JSON.stringify(line)}`));
      else resolve({ base: m[1], token: m[2], rpc: `ws${m[1].slice(4)}/rpc?token=${m[2]}`, child });
    });
    child.on("exit", (code) => reject(new Error(`bridge web exited ${code}`)));
  });
}

test("connectWebSocket: the same calls over bridge web", async () => {
  const web = await startWeb(tmp());
  const client = await connectWebSocket(web.rpc);
  const sid = await exercise(client);
  // A second tab shares the service and the database.
  const other = await connectWebSocket(web.rpc);
  await other.initialize();
  const list = await other.request("session/list", {});
  assert.ok(list.items.some((i) => i.sessionId === sid), "the second connection lists the first one's session");
  await client.shutdown();
  assert.ok((await other.request("session/list", {})).items.length > 0, "shutdown of one tab leaves the other working");
  other.dispose();

  await assert.rejects(connectWebSocket(`ws${web.base.slice(4)}/rpc?token=wrong`), /could not open/);
});

// settledOrHung resolves to how p settled, or to "still pending" once the
// connection's close has had a few event-loop turns to reach it: a request
// that outlives its connection must fail, never wait forever.
async function settledOrHung(p) {
  const hung = new Promise((resolve) => setTimeout(() => resolve("still pending"), 10_000));
  return Promise.race([p.then(() => "resolved", (err) => err), hung]);
}

// A request in flight when Bridge goes away (the process dies, or bridge web
// closes a connection that fell behind) is rejected with ClosedError, and
// so is any later request.
async function closedMidRequest(client, kill) {
  await client.initialize();
  const s = await client.request("session/create", { harness: "fake", cwd: tmp(), title: "dies" });
  const hanging = client.request("session/prompt", { sessionId: s.sessionId, content: text("hang") });
  await client.request("session/list", {}); // the prompt is in Bridge's hands
  kill();
  const got = await settledOrHung(hanging);
  assert.ok(got instanceof ClosedError, `the pending prompt settled as ${got}`);
  assert.equal(got.method, "session/prompt");
  assert.match(got.message, /connection closed before Bridge answered session\/prompt/);
  await assert.rejects(client.request("session/list", {}), ClosedError);
  client.dispose();
}

test("spawnBridge: a request in flight when the process dies is rejected, not left pending", async () => {
  const client = spawnBridge({ command: bin, dataDir: tmp() });
  await closedMidRequest(client, () => client.process.kill("SIGKILL"));
});

test("connectWebSocket: a request in flight when bridge web dies is rejected, not left pending", async () => {
  const web = await startWeb(tmp());
  const client = await connectWebSocket(web.rpc);
  await closedMidRequest(client, () => web.child.kill("SIGKILL"));
});
