import type pg from 'pg';

/**
 * Run `body` in a transaction on one pooled connection. It commits when `keep(result)` says
 * so and rolls back otherwise (a conflict or duplicate changes nothing), or on any throw.
 */
export async function inTransaction<T>(
  pool: pg.Pool,
  body: (client: pg.PoolClient) => Promise<T>,
  keep: (result: T) => boolean = () => true,
): Promise<T> {
  const client = await pool.connect();
  let broken: Error | undefined;
  try {
    await client.query('BEGIN');
    const result = await body(client);
    await client.query(keep(result) ? 'COMMIT' : 'ROLLBACK');
    return result;
  } catch (error) {
    // A connection that cannot even roll back is broken: destroy it rather than pool it.
    await client.query('ROLLBACK').catch((rollbackError: unknown) => {
      broken = rollbackError instanceof Error ? rollbackError : new Error(String(rollbackError));
    });
    throw error;
  } finally {
    client.release(broken);
  }
}
