// Tool handlers of the example template. Each receives one object holding the
// arguments the model sent (strings or numbers) and returns a JSON-serialisable
// value, or a promise of one. A thrown error is reported to the model.

export function add({ a, b }) {
  const x = Number(a);
  const y = Number(b);
  if (!Number.isFinite(x) || !Number.isFinite(y)) {
    throw new Error(`add needs two numbers, got ${JSON.stringify(a)} and ${JSON.stringify(b)}`);
  }
  return { sum: x + y };
}

export function currentTime() {
  return { utc: new Date().toISOString() };
}
