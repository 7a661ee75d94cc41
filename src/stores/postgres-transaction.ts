import type pg from 'pg';

/**
 * Run `body` in a transaction on one pooled connection. It commits when `keep(result)` says
 * so and rolls back otherwise (a conflict or duplicate changes nothing), or on any throw.
 *
 * While the connection is checked out, the pool no longer listens to it: a server that ends it
 * (a restart, a failover, `pg_terminate_backend`) makes it emit `'error'`, which without a
 * listener of ours would end the process. The listener marks the connection broken, so it is
 * destroyed on release instead of pooled; the query in flight fails on its own.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  body: (client: pg.PoolClient) => Promise<T>,
  keep: (result: T) => boolean = () => true,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  const onError = (error: Error) => {
    broken ??= error;
  };
  client.on('error', onError);
  try {
    await client.query('BEGIN');
    const result = await body(client);
    await client.query(keep(result) ? 'COMMIT' : 'ROLLBACK');
    return result;
  } catch (error) {
    // A connection that cannot even roll back is broken: destroy it rather than pool it.
    if (broken === undefined) {
      await client.query('ROLLBACK').catch((rollbackError: unknown) => {
        broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
      });
    }
    throw error;
  } finally {
    // A broken connection keeps the listener while the pool destroys it.
    if (broken === undefined) client.off('error', onError);
    client.release(broken);
  }
}
