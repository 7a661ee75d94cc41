import { SelfGcError, StoreError } from '../core/errors.js';

/**
 * Run one store operation and turn whatever the backend throws into a `StoreError` that says
 * which operation failed. Errors that already carry a Self-GC code pass through unchanged.
 */
export async function withStoreErrors<T>(operation: string, run: () => Promise<T> | T): Promise<T> {
  try {
    return await run();
  } catch (error) {
    if (error instanceof SelfGcError) throw error;
    const reason = error instanceof Error ? error.message : String(error);
    throw new StoreError(`${operation} failed: ${reason}`, { cause: error });
  }
}
