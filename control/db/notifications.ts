import pg from 'pg';
import type { Database } from './database.js';

export interface Listening {
  /** Resolves once the connection is closed; nothing more is heard after. */
  close(): Promise<void>;
}

/**
 * LISTENs on `channel` on a connection of its own, outside the pool (a listening
 * connection is held for good), with the pool's settings. `onNotify` runs for every
 * NOTIFY committed on it; `onLost` once, when the connection fails (Postgres restarted,
 * the network cut): the caller decides when to listen again.
 */
export async function listen(db: Database, channel: string, onNotify: () => void, onLost: (error: Error) => void): Promise<Listening> {
  const client = new pg.Client(db.client.config.connection as string | pg.ClientConfig);
  let lost = false;
  client.on('error', (error) => {
    if (lost) return;
    lost = true;
    void client.end().catch(() => undefined);
    onLost(error);
  });
  client.on('notification', (message) => {
    if (message.channel === channel) onNotify();
  });
  try {
    await client.connect();
    await client.query(`LISTEN ${client.escapeIdentifier(channel)}`);
  } catch (error) {
    await client.end().catch(() => undefined);
    throw error;
  }
  return {
    close: async () => {
      lost = true;
      await client.end().catch(() => undefined);
    },
  };
}
