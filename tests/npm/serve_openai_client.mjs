// Drives `recur serve` with the official OpenAI client (the `openai` npm package): chat and
// completions, streamed and not; logprobs and top_logprobs in both formats; echo with prompt
// logprobs (max_tokens 0, as evaluation harnesses score choices); and every unsupported field
// refused with a 400 that the client surfaces as an APIError naming the field.
//
//   node serve_openai_client.mjs PORT API_KEY MODEL
// Exits 0 when every case passes.
import OpenAI from "openai";

const [port, apiKey, model] = process.argv.slice(2);
if (!port || !apiKey || !model) {
  console.error("usage: node serve_openai_client.mjs PORT API_KEY MODEL");
  process.exit(2);
}
const client = new OpenAI({ baseURL: `http://127.0.0.1:${port}/v1`, apiKey, maxRetries: 0, timeout: 30000 });

let failures = 0;
function check(ok, what) {
  if (!ok) {
    failures += 1;
    console.error(`FAIL: ${what}`);
  }
}
const near = (a, b) => Math.abs(a - b) < 1e-4;
const messages = [{ role: "user", content: "Hello" }];
const prompt = "Once upon a time";

// Top alternatives: most likely first, a probability mass of at most 1, the greedy token the first.
function checkTop(what, logprob, top) {
  let mass = 0;
  top.forEach((t, k) => {
    mass += Math.exp(t.logprob);
    if (k > 0) check(top[k - 1].logprob >= t.logprob, `${what}: top_logprobs out of order`);
  });
  check(mass <= 1 + 1e-6, `${what}: top_logprobs hold a mass of ${mass}`);
  check(top.length > 0 && near(top[0].logprob, logprob), `${what}: greedy token ${logprob} is not the most likely ${top[0]?.logprob}`);
}

async function chat() {
  const whole = await client.chat.completions.create({ model, messages, max_tokens: 6, temperature: 0 });
  const text = whole.choices[0].message.content;
  check(whole.object === "chat.completion" && typeof text === "string" && text.length > 0, `chat: ${JSON.stringify(whole)}`);
  check(whole.usage.completion_tokens === 6 || whole.choices[0].finish_reason === "stop", `chat usage: ${JSON.stringify(whole.usage)}`);
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 6, temperature: 0, stream: true, stream_options: { include_usage: true },
  });
  let streamed = "";
  let usage = null;
  for await (const chunk of stream) {
    if (chunk.usage) usage = chunk.usage;
    for (const c of chunk.choices) streamed += c.delta?.content ?? "";
  }
  check(streamed === text, `chat streamed ${JSON.stringify(streamed)} != ${JSON.stringify(text)}`);
  check(usage && usage.completion_tokens === whole.usage.completion_tokens, `chat stream usage: ${JSON.stringify(usage)}`);
}

async function chatLogprobs() {
  const r = await client.chat.completions.create({ model, messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3 });
  const content = r.choices[0].logprobs?.content ?? [];
  check(content.length === r.usage.completion_tokens, `chat logprobs: ${content.length} entries for ${r.usage.completion_tokens} tokens`);
  check(content.map((e) => e.token).join("") === r.choices[0].message.content, "chat logprobs: tokens do not spell the content");
  content.forEach((e, i) => {
    check(e.logprob <= 0 && Array.isArray(e.bytes) && e.top_logprobs.length === 3, `chat logprobs[${i}]: ${JSON.stringify(e)}`);
    checkTop(`chat logprobs[${i}]`, e.logprob, e.top_logprobs);
  });
  const stream = await client.chat.completions.create({
    model, messages, max_tokens: 5, temperature: 0, logprobs: true, top_logprobs: 3, stream: true,
  });
  const streamed = [];
  for await (const chunk of stream) for (const c of chunk.choices) streamed.push(...(c.logprobs?.content ?? []));
  check(JSON.stringify(streamed) === JSON.stringify(content), "chat logprobs: streamed entries differ from the whole response's");
}

async function completions() {
  const r = await client.completions.create({ model, prompt, max_tokens: 4, temperature: 0, logprobs: 2 });
  const text = r.choices[0].text;
  check(r.object === "text_completion" && text.length > 0, `completion: ${JSON.stringify(r)}`);
  const lp = r.choices[0].logprobs;
  const n = r.usage.completion_tokens;
  check(lp && lp.tokens.length === n && lp.token_logprobs.length === n && lp.top_logprobs.length === n && lp.text_offset.length === n,
        `completion logprobs shape: ${JSON.stringify(lp)}`);
  check(lp.tokens.join("") === text, "completion logprobs: tokens do not spell the text");
  let offset = 0;
  lp.tokens.forEach((t, i) => {
    check(lp.text_offset[i] === offset, `completion text_offset[${i}] ${lp.text_offset[i]} != ${offset}`);
    offset += Buffer.byteLength(t);
    const top = Object.entries(lp.top_logprobs[i]).map(([token, logprob]) => ({ token, logprob })).sort((a, b) => b.logprob - a.logprob);
    check(top.length >= 2 && top.length <= 3, `completion top_logprobs[${i}]: ${JSON.stringify(lp.top_logprobs[i])}`);
    checkTop(`completion logprobs[${i}]`, lp.token_logprobs[i], top);
  });
  const stream = await client.completions.create({ model, prompt, max_tokens: 4, temperature: 0, logprobs: 2, stream: true });
  let streamed = "";
  const tokens = [];
  for await (const chunk of stream) for (const c of chunk.choices) {
    streamed += c.text;
    tokens.push(...(c.logprobs?.tokens ?? []));
  }
  check(streamed === text && tokens.join("") === text, `completion streamed ${JSON.stringify(streamed)} != ${JSON.stringify(text)}`);
  return r;
}

// Echo scores the prompt: the first token has no logprob; the prompt's entries are the same
// whether or not tokens follow; a generated token's logprob equals a plain completion's.
async function echo(plain) {
  const scored = await client.completions.create({ model, prompt, max_tokens: 0, echo: true, logprobs: 1 });
  const lp = scored.choices[0].logprobs;
  const n = scored.usage.prompt_tokens;
  check(scored.choices[0].text === prompt, `echo text ${JSON.stringify(scored.choices[0].text)}`);
  check(scored.usage.completion_tokens === 0 && lp.tokens.length === n, `echo: ${lp.tokens.length} entries for ${n} prompt tokens`);
  check(lp.token_logprobs[0] === null && lp.top_logprobs[0] === null, "echo: the first prompt token has a logprob");
  check(lp.tokens.join("") === prompt, `echo tokens ${JSON.stringify(lp.tokens)}`);
  check(lp.token_logprobs.slice(1).every((x) => typeof x === "number" && x <= 0), `echo logprobs ${lp.token_logprobs}`);
  const more = await client.completions.create({ model, prompt, max_tokens: 1, echo: true, logprobs: 1, temperature: 0 });
  const m = more.choices[0].logprobs;
  check(more.choices[0].text === prompt + plain.choices[0].logprobs.tokens[0], `echo + 1: ${JSON.stringify(more.choices[0].text)}`);
  check(m.token_logprobs.slice(0, n).every((x, i) => x === lp.token_logprobs[i] || near(x, lp.token_logprobs[i])),
        "echo: prompt logprobs differ with a token generated after them");
  check(near(m.token_logprobs[n], plain.choices[0].logprobs.token_logprobs[0]), "echo: generated token's logprob differs from a plain completion's");
  const stream = await client.completions.create({ model, prompt, max_tokens: 0, echo: true, logprobs: 1, stream: true });
  let text = "";
  const logprobs = [];
  for await (const chunk of stream) for (const c of chunk.choices) {
    text += c.text;
    logprobs.push(...(c.logprobs?.token_logprobs ?? []));
  }
  check(text === prompt && JSON.stringify(logprobs) === JSON.stringify(lp.token_logprobs), "echo streamed differs");
}

// Each refused request must reach the caller as an APIError with status 400, the field as param
// and the server's message.
async function refused(what, create, param, words) {
  try {
    await create();
    check(false, `${what}: accepted`);
  } catch (e) {
    check(e instanceof OpenAI.APIError && e.status === 400, `${what}: ${e}`);
    check(e.param === param, `${what}: param ${e.param}, expected ${param}`);
    check(e.error?.type === "invalid_request_error" && typeof e.message === "string" && e.message.includes(words),
          `${what}: message ${JSON.stringify(e.message)} lacks ${JSON.stringify(words)}`);
  }
}

async function unsupported() {
  const chatWith = (extra) => () => client.chat.completions.create({ model, messages, max_tokens: 2, ...extra });
  const completionWith = (extra) => () => client.completions.create({ model, prompt, max_tokens: 2, ...extra });
  const tool = { type: "function", function: { name: "f", parameters: { type: "object", properties: {} } } };
  const cases = [
    ["tools", chatWith({ tools: [tool] })],
    ["tool_choice", chatWith({ tool_choice: "required" })],
    ["functions", chatWith({ functions: [{ name: "f" }] })],
    ["function_call", chatWith({ function_call: "auto" })],
    ["response_format", chatWith({ response_format: { type: "json_object" } })],
    ["n", chatWith({ n: 2 })],
    ["n", completionWith({ n: 2 })],
    ["best_of", completionWith({ best_of: 3 })],
    ["logit_bias", chatWith({ logit_bias: { 5: 10 } })],
    ["presence_penalty", chatWith({ presence_penalty: 0.5 })],
    ["frequency_penalty", completionWith({ frequency_penalty: 1 })],
    ["suffix", completionWith({ suffix: "end" })],
    ["audio", chatWith({ audio: { voice: "alloy", format: "wav" } })],
    ["modalities", chatWith({ modalities: ["text", "audio"] })],
    ["reasoning_effort", chatWith({ reasoning_effort: "low" })],
    ["store", chatWith({ store: true })],
  ];
  for (const [field, create] of cases) await refused(field, create, field, `'${field}' is not supported`);
  await refused("max_tokens over the limit", completionWith({ max_tokens: 1 << 25 }), "max_tokens", "expected 1 to 16777216");
  await refused("max_tokens 0 without echo", completionWith({ max_tokens: 0 }), "max_tokens", "only with 'echo'");
  await refused("empty prompt", () => client.completions.create({ model, prompt: [], max_tokens: 2 }), "prompt", "empty array");
  await refused("top_logprobs without logprobs", chatWith({ top_logprobs: 2 }), "top_logprobs", "needs 'logprobs': true");
}

try {
  await chat();
  await chatLogprobs();
  await echo(await completions());
  await unsupported();
} catch (e) {
  check(false, `unexpected error: ${e?.stack ?? e}`);
}
if (failures > 0) {
  console.error(`serve_openai_client: ${failures} failure(s)`);
  process.exit(1);
}
console.log("serve_openai_client: ok");
