import type { SettingReader } from '../../contract/settings-reader.js';

/** The four ways to give the keys; exactly one is set. The first two hold a list, the last two one key. */
const SOURCES = ['MASTER_KEYS', 'MASTER_KEYS_FILE', 'MASTER_KEY', 'MASTER_KEY_FILE'] as const;
type Source = (typeof SOURCES)[number];

/** Base64 as MASTER_KEY always took it (Node's decoder: url-safe letters and missing padding pass too), nothing else. */
const BASE64 = /^[A-Za-z0-9+/_-]+={0,2}$/;

/**
 * The master keys, the current one first, then older ones still needed to open what they
 * sealed (docs/operations.md, "Master-key rotation"). MASTER_KEYS lists them separated by
 * commas or newlines (a file may hold `#` comment lines); MASTER_KEY and MASTER_KEY_FILE,
 * from before rotation, are a list of one. Problems name the setting and the key's place
 * in the list, never the key.
 */
export function readMasterKeys(read: SettingReader): Buffer[] {
  const given = SOURCES.filter((name) => read.optionalString(name) !== null);
  if (given.length === 0) {
    read.report(`${SOURCES.slice(0, -1).join(', ')} or ${SOURCES.at(-1)}: one is required, 32 bytes in base64 each (openssl rand -base64 32); they encrypt model keys and secrets at rest`);
    return [];
  }
  if (given.length > 1) {
    read.report(`${given.join(' and ')}: set only one of them (MASTER_KEYS lists the current key first, then older ones)`);
    return [];
  }
  const source = given[0]!;
  const text = source.endsWith('_FILE') ? read.file(source) : read.optionalString(source);
  if (text === null) return []; // an unreadable file, reported by read.file
  return parseKeys(read, source, text);
}

function parseKeys(read: SettingReader, source: Source, text: string): Buffer[] {
  const items = text
    .split('\n')
    .filter((line) => !line.trim().startsWith('#'))
    .flatMap((line) => line.split(','))
    .map((item) => item.trim())
    .filter(Boolean);
  const isList = source.startsWith('MASTER_KEYS');
  if (items.length === 0) read.report(`${source}: holds no key`);
  if (!isList && items.length > 1) read.report(`${source}: holds one key; give several (the current first) in MASTER_KEYS or MASTER_KEYS_FILE`);
  const keys: (Buffer | null)[] = items.map((item) => (BASE64.test(item) ? Buffer.from(item, 'base64') : null));
  keys.forEach((key, index) => {
    const which = isList ? `${source}: key ${index + 1} of ${items.length}` : source;
    if (key === null) {
      read.report(`${which} is not base64 (openssl rand -base64 32 makes a key)`);
      return;
    }
    if (key.length !== 32) {
      read.report(`${which} must decode from base64 to exactly 32 bytes (openssl rand -base64 32), got ${key.length}`);
      return;
    }
    const earlier = keys.findIndex((other) => other?.equals(key));
    if (earlier < index) read.report(`${which} repeats key ${earlier + 1}: each key once, the current first`);
  });
  return keys.filter((key): key is Buffer => key !== null);
}
