// Node module hook for scripts/gen-thinking-golden.mjs: lets each pi-ai provider's
// `streamSimple*` run unchanged, but makes the raw `stream*` it calls hand back the options
// it received instead of opening a connection. Only that one line is added to pi's code.
export async function load(url, context, nextLoad) {
    const result = await nextLoad(url, context);
    if (!/\/pi-ai\/dist\/providers\/[\w-]+\.js$/.test(url)) return result;
    const raw = /export const (stream(?!Simple)[A-Za-z]+) = \(model, context, options(?: = \{\})?\) => \{/g;
    const source = String(result.source).replace(
        raw,
        (m) => `${m} if (globalThis.__piCaptureOptions) return globalThis.__piCaptureOptions(options);`,
    );
    return { ...result, source };
}
