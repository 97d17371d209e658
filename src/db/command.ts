import { type DatabaseHandle, DatabaseInUseError, openDatabase, optionsFromEnv } from './connection.ts';

/** The database for a command line tool; a clear line and exit code 2 when the embedded one is in use. */
export async function openDatabaseForCommand(): Promise<DatabaseHandle> {
  try {
    return await openDatabase(optionsFromEnv());
  } catch (error) {
    if (!(error instanceof DatabaseInUseError)) throw error;
    console.error(`${error.code}: ${error.message}`);
    process.exit(2);
  }
}
