// First: on another Node this stops the program before any other module loads.
import '../contract/require-supported-node.js';
import { loadDatabaseUrl } from './config/config.js';
import { connectDatabase, migrationStatus, undoLastMigration } from './db/database.js';

const USAGE = `npm run migrate -- status | down

  status   the migrations the database has, and those this release would apply at start
  down     undo the newest migration (its tables or columns go, with their data): before
           rolling back to a release that does not know it. Stop every control API copy first.

Reads DATABASE_URL, or the Postgres that \`npm run up\` keeps in .data/.
The control API applies pending migrations itself at start (docs/operations.md, "Upgrades").`;

/** The schema's state, and undoing one migration when a release is rolled back (docs/operations.md, "Rolling back a release"). */
async function main(args: string[]): Promise<void> {
  const command = args.length === 1 ? args[0] : undefined;
  if (command !== 'status' && command !== 'down') {
    console.error(USAGE);
    process.exit(2);
  }
  const db = connectDatabase(loadDatabaseUrl(process.env), { min: 0, max: 2 });
  try {
    if (command === 'down') {
      const undone = await undoLastMigration(db);
      console.log(undone ? `Undid ${undone}` : 'No migration to undo');
    }
    const { applied, pending } = await migrationStatus(db);
    console.log(`Applied: ${applied.join(', ') || 'none'}\nPending (applied at the next start of the control API): ${pending.join(', ') || 'none'}`);
  } finally {
    await db.destroy();
  }
}

main(process.argv.slice(2)).catch((error: unknown) => {
  console.error(error instanceof Error ? error.message : error);
  process.exit(1);
});
