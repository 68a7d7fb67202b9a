import type { KeyRow } from '../repositories/keys.js';
import type { KeyView } from '../schemas/keys.js';

export const keyView = (row: KeyRow): KeyView => ({
  id: row.id,
  label: row.label,
  key_preview: row.key_preview,
  created_at: row.created_at.toISOString(),
});
