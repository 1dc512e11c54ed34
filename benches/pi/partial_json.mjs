// pi's side of benches/partial_json.rs: the same `write` argument, cut into the same 8-byte
// fragments, with pi-ai 0.73.1's parseStreamingJson called on the accumulated text after each
// fragment (what pi's providers do for every toolcall_delta).
//
//   PI_NPM=/path/to/.pi-npm node benches/pi/partial_json.mjs [sizeKB ...]   (default: 4 16 64)
//
// PI_NPM is a folder whose node_modules holds @mariozechner/pi-ai (default: /work/main/.pi-npm).
// pi re-parses the whole buffer per fragment, so time grows with the square of the size:
// 256 KB takes minutes. Prints one JSON line per size.
const piNpm = process.env.PI_NPM ?? "/work/main/.pi-npm";
const { parseStreamingJson } = await import(
  `${piNpm}/node_modules/@mariozechner/pi-ai/dist/utils/json-parse.js`
);

// Same text as file_argument() in benches/partial_json.rs.
function fileArgument(size) {
  let content = "";
  for (let i = 0; Buffer.byteLength(content) + 64 < size; i++) {
    content += `fn f${i}() { println!("line ${i}: héllo \\"wörld\\""); }\n`;
  }
  return JSON.stringify({ path: "src/generated.rs", content });
}

// 8-byte fragments that never split a UTF-8 character, as fragments() in the Rust bench.
function fragments(text) {
  const bytes = Buffer.from(text);
  const out = [];
  let from = 0;
  while (from < bytes.length) {
    let to = Math.min(from + 8, bytes.length);
    while (to < bytes.length && (bytes[to] & 0xc0) === 0x80) to++;
    out.push(bytes.subarray(from, to).toString());
    from = to;
  }
  return out;
}

const sizes = process.argv.slice(2).map(Number);
for (const kb of sizes.length ? sizes : [4, 16, 64]) {
  const text = fileArgument(kb * 1024);
  const frags = fragments(text);
  let buffer = "";
  let args;
  const start = process.hrtime.bigint();
  for (const f of frags) {
    buffer += f;
    args = parseStreamingJson(buffer);
  }
  const seconds = Number(process.hrtime.bigint() - start) / 1e9;
  if (args.content.length === 0) throw new Error("nothing parsed");
  console.log(JSON.stringify({
    size_kb: kb,
    bytes: Buffer.byteLength(text),
    fragments: frags.length,
    seconds,
    ns_per_byte: (seconds * 1e9) / Buffer.byteLength(text),
  }));
}
