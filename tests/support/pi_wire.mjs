// Runs pi-ai 0.73.1 itself against a local server that answers with given bytes, for the
// differential tests of the providers whose requests pi builds in a vendor SDK (Bedrock,
// Mistral): what pi sends (the wire body, key order included) and the events pi makes of
// the same response bytes.
//
//   node pi_wire.mjs <cases.json>   -> JSON array, one {requests, events} per case
//
// A case is {model, context, options, env, response}: pi's model (its `baseUrl` is replaced
// by the local server's address), context and options (`streamSimple` when
// `options.reasoning` is set, else `stream`), environment variables set for that case only,
// and the response: {status, headers, body (base64), chunk (bytes per write, 0 = whole)}.
// `requests` lists every request pi made ({method, path, headers, body}; an SDK may retry),
// `events` pi's events without `partial`, then {"type": "__final_message__", "message"}.
// PI_NPM_MODULES: the node_modules folder holding @mariozechner/pi-ai.
import { readFileSync } from "node:fs";
import { createServer } from "node:http";
import { join } from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.PI_NPM_MODULES;
const pkgDir = join(modules, "@mariozechner", "pi-ai");
const pkg = JSON.parse(readFileSync(join(pkgDir, "package.json"), "utf8"));
if (pkg.version !== "0.73.1") console.error(`warning: pi-ai is ${pkg.version}, not 0.73.1`);
const { stream, streamSimple } = await import(pathToFileURL(join(pkgDir, "dist/index.js")).href);

async function runCase({ model, context, options = {}, env = {}, response }) {
  const requests = [];
  const body = Buffer.from(response.body ?? "", "base64");
  const server = createServer((req, res) => {
    const parts = [];
    req.on("data", (c) => parts.push(c));
    req.on("end", async () => {
      const raw = Buffer.concat(parts).toString("utf8");
      let parsed;
      try {
        parsed = JSON.parse(raw);
      } catch {
        parsed = raw;
      }
      requests.push({ method: req.method, path: req.url, headers: req.headers, body: parsed });
      res.writeHead(response.status ?? 200, response.headers ?? {});
      const step = response.chunk > 0 ? response.chunk : body.length || 1;
      for (let i = 0; i < body.length; i += step) {
        res.write(body.subarray(i, i + step));
        // Separate writes arrive as separate reads: the decoders see split frames.
        await new Promise((r) => setImmediate(r));
      }
      res.end();
    });
  });
  await new Promise((r) => server.listen(0, "127.0.0.1", r));
  const saved = {};
  for (const [k, v] of Object.entries(env)) {
    saved[k] = process.env[k];
    if (v === null) delete process.env[k];
    else process.env[k] = v;
  }
  const events = [];
  try {
    const url = `http://127.0.0.1:${server.address().port}`;
    const m = { ...model, baseUrl: url + (model.baseUrl ?? "") };
    const s = options.reasoning ? streamSimple(m, context, options) : stream(m, context, options);
    for await (const ev of s) {
      const { partial, ...rest } = ev;
      events.push(rest);
    }
    events.push({ type: "__final_message__", message: await s.result() });
  } catch (e) {
    events.push({ type: "__exception__", error: String(e) });
  } finally {
    for (const [k, v] of Object.entries(saved)) {
      if (v === undefined) delete process.env[k];
      else process.env[k] = v;
    }
    server.closeAllConnections?.();
    await new Promise((r) => server.close(r));
  }
  return { requests, events };
}

const cases = JSON.parse(readFileSync(process.argv[2], "utf8"));
const out = [];
for (const c of cases) out.push(await runCase(c));
process.stdout.write(JSON.stringify(out));
