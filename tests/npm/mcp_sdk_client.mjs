// Drives `recur mcp` with the official TypeScript SDK client (@modelcontextprotocol/sdk) over
// stdio: every tool's success path and its error paths. The SDK validates each result against the
// tool's declared outputSchema and throws -32602 when a result's structuredContent does not match,
// so a tool error must come back as isError with text content (and no mismatching structure).
//
//   node mcp_sdk_client.mjs RECUR WORKDIR
// WORKDIR (the server's folder) holds trace.json, tiny.gguf, gates/rmsnorm-speed.toml and
// episode.toml (tests/mcp_sdk_test.sh writes them). Exits 0 when every case passes.
import fs from "node:fs";
import path from "node:path";
import { Client } from "@modelcontextprotocol/sdk/client/index.js";
import { StdioClientTransport } from "@modelcontextprotocol/sdk/client/stdio.js";

const [recur, work] = process.argv.slice(2);
if (!recur || !work) {
  console.error("usage: node mcp_sdk_client.mjs RECUR WORKDIR");
  process.exit(2);
}

let failures = 0;
function fail(what, detail) {
  failures += 1;
  console.error(`FAIL: ${what}: ${detail}`);
}

const text = (result) => (result.content ?? []).map((c) => c.text ?? "").join("\n");

// One call; the SDK throws on a protocol error or a result that breaks the output schema.
async function call(client, name, args) {
  try {
    return await client.callTool({ name, arguments: args }, undefined, { timeout: 120000 });
  } catch (e) {
    return { thrown: `${e.code ?? ""} ${e.message}` };
  }
}

async function expectOk(client, name, args, check = () => true) {
  const r = await call(client, name, args);
  if (r.thrown) return fail(`${name} ${JSON.stringify(args)}`, `the SDK threw ${r.thrown}`);
  if (r.isError) return fail(`${name} ${JSON.stringify(args)}`, `a tool error: ${text(r)}`);
  if (!r.structuredContent) return fail(`${name} ${JSON.stringify(args)}`, "no structuredContent");
  if (!check(r.structuredContent)) return fail(`${name} ${JSON.stringify(args)}`, JSON.stringify(r.structuredContent).slice(0, 400));
  console.log(`  ok   ${name}: ${text(r).slice(0, 100)}`);
}

async function expectError(client, name, args, words) {
  const r = await call(client, name, args);
  if (r.thrown) return fail(`${name} ${JSON.stringify(args)}`, `the SDK threw ${r.thrown}`);
  if (!r.isError) return fail(`${name} ${JSON.stringify(args)}`, `expected a tool error, got ${text(r)}`);
  if (r.structuredContent !== undefined) fail(`${name} ${JSON.stringify(args)}`, "an error result carries structuredContent");
  if (!text(r).includes(words)) return fail(`${name} ${JSON.stringify(args)}`, `the error '${text(r)}' does not say '${words}'`);
  console.log(`  err  ${name}: ${text(r).slice(0, 100)}`);
}

async function connect(extraArgs) {
  const transport = new StdioClientTransport({
    command: recur,
    args: ["mcp", "--call-timeout-s", "120", ...extraArgs],
    cwd: work,
    stderr: fs.openSync(path.join(work, "mcp.err"), "a"),
  });
  const client = new Client({ name: "mcp_sdk_client.mjs", version: "1" });
  await client.connect(transport);
  return client;
}

const client = await connect(["--allow-exec", "/bin/true", "--allow-candidates"]);
const tools = (await client.listTools()).tools.map((t) => t.name);
const expected = ["knobs", "trace_analyze", "bench", "check", "gate", "engine_bench", "journal_query", "episode_list",
                  "episode_run_step", "bench_cmd", "candidate_build"];
if (JSON.stringify(tools) !== JSON.stringify(expected)) fail("tools/list", JSON.stringify(tools));

const isFeedback = (probe) => (s) => s.probe.startsWith(probe) && typeof s.verdict === "string";

await expectOk(client, "knobs", { filter: "kernel.rmsnorm" }, (s) => s.knobs.length > 0);
await expectError(client, "knobs", { filter: 7 }, "arguments.filter");

await expectOk(client, "trace_analyze", { verb: "breakdown", traces: ["trace.json"] }, isFeedback("analyze"));
await expectError(client, "trace_analyze", { verb: "breakdown", traces: ["../outside.json"] }, "outside");
await expectError(client, "trace_analyze", { verb: "nope", traces: ["trace.json"] }, "arguments.verb");

await expectOk(client, "check", { kernel: "rmsnorm", variant: "scalar", shape: "M4,N256", seeds: "1" }, isFeedback("check"));
await expectError(client, "check", { kernel: "no_such_kernel" }, "no_such_kernel");
await expectError(client, "check", { kernel: "-rf" }, "may not start with '-'");

await expectOk(client, "bench", { kernel: "rmsnorm", variant: "scalar", shape: "M4,N256", budget_s: 0.2 }, isFeedback("bench"));
await expectError(client, "bench", { kernel: 7 }, "expected a string");
await expectError(client, "bench", { kernel: "no_such_kernel" }, "no_such_kernel");

await expectOk(client, "gate", { spec: "gates/rmsnorm-speed.toml" }, isFeedback("gate"));
await expectError(client, "gate", { spec: "../../etc/passwd" }, "outside");

await expectOk(client, "engine_bench", { model: "tiny.gguf", prefill: 4, decode: 4, runs: 1, warmup: 0 }, isFeedback("bench.engine"));
await expectError(client, "engine_bench", { model: "/etc/passwd" }, "outside");

await expectOk(client, "episode_list", { dir: "." }, (s) => s.episodes.some((e) => e.name === "rms-sdk"));
await expectError(client, "episode_list", { dir: "/etc" }, "outside");

await expectOk(client, "episode_run_step", { episode: "episode.toml", run: "sdk-run" }, (s) => s.run === "sdk-run");
await expectError(client, "episode_run_step", {}, "give `episode`");
// Run names become folders (runs/RUN/...): names that leave the folder are refused.
for (const run of ["../../escaped-run", "/tmp/escaped-run", "a/b", ".."])
  await expectError(client, "episode_run_step", { episode: "episode.toml", run }, "arguments.run");
for (const p of [path.join(work, "..", "..", "escaped-run"), "/tmp/escaped-run"])
  if (fs.existsSync(p)) fail("episode_run_step", `a run name escaped the server's folder: ${p} exists`);

await expectOk(client, "journal_query", {}, (s) => s.runs.some((r) => r.name === "sdk-run"));
await expectOk(client, "journal_query", { run: "sdk-run" }, (s) => s.experiments.length >= 1 && s.experiments[0].step === 0);
await expectError(client, "journal_query", { journal: "runs/none.db" }, "none.db");

await expectOk(client, "bench_cmd", { command: ["/bin/true"], budget_s: 0.2 }, isFeedback("bench"));
await expectError(client, "bench_cmd", { command: ["/bin/sh", "-c", "true"] }, "not an allowed program");

// The served folder is no git repository: the candidate's build fails, as a Feedback or an error.
const cand = await call(client, "candidate_build", { patch: "not a diff" });
if (cand.thrown) fail("candidate_build", `the SDK threw ${cand.thrown}`);
else console.log(`  ${cand.isError ? "err " : "ok  "} candidate_build: ${text(cand).slice(0, 100)}`);
await expectError(client, "candidate_build", { patch: "x", kernel: "-x" }, "may not start with '-'");

// An unknown tool is a protocol error (JSON-RPC -32602), which the SDK raises.
const unknown = await call(client, "no_such_tool", {});
if (!unknown.thrown || !unknown.thrown.includes("-32602")) fail("no_such_tool", JSON.stringify(unknown));

await client.close();
if (failures > 0) {
  console.error(`mcp_sdk_client: ${failures} failures`);
  process.exit(1);
}
console.log("mcp_sdk_client: every tool's success and error paths pass through the official SDK client");
