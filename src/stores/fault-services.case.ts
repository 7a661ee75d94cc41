/**
 * Faults for tests, all on loopback and all of the test's own making: a port nothing listens
 * on, a server that accepts connections and never answers, a Redis server of its own to kill
 * and restart, and the termination of one's own PostgreSQL connections. The shared services
 * other tests use are never paused or restarted.
 */
import { type ChildProcess, spawn } from 'node:child_process';
import { createServer, type Server, type Socket } from 'node:net';
import pg from 'pg';
import { probeRedis } from './test-services.case.js';

/** A loopback port that nothing listens on (bound, then released). */
export async function closedPort(): Promise<number> {
  const server = createServer();
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  await new Promise<void>((resolve) => server.close(() => resolve()));
  return port;
}

/** A store URL of `kind` on a loopback port nothing listens on. */
export async function closedStoreUrl(kind: 'postgres' | 'redis'): Promise<string> {
  const port = await closedPort();
  return kind === 'postgres' ? `postgres://postgres@127.0.0.1:${port}/test` : `redis://127.0.0.1:${port}/0`;
}

export interface SilentServer {
  port: number;
  /** Connections accepted so far. */
  connections(): number;
  close(): Promise<void>;
}

/** A TCP server that accepts every connection and never sends a byte: a hung store. */
export async function startSilentServer(): Promise<SilentServer> {
  const sockets = new Set<Socket>();
  let accepted = 0;
  const server: Server = createServer((socket) => {
    accepted += 1;
    sockets.add(socket);
    socket.on('error', () => undefined);
    socket.on('close', () => sockets.delete(socket));
  });
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const { port } = server.address() as { port: number };
  return {
    port,
    connections: () => accepted,
    close: () =>
      new Promise<void>((resolve) => {
        for (const socket of sockets) socket.destroy();
        server.close(() => resolve());
      }),
  };
}

export interface OwnRedis {
  port: number;
  url: string;
  /** Kill the server by its PID (SIGKILL) and wait until it is gone. */
  kill(): Promise<void>;
  /** Start it again on the same port. */
  restart(): Promise<void>;
}

const REDIS_START_ATTEMPTS = 50;
const REDIS_START_PAUSE_MS = 100;

/** A `redis-server` of the test's own on a free port, without persistence. */
export async function startOwnRedis(): Promise<OwnRedis> {
  const port = await closedPort();
  const url = `redis://127.0.0.1:${port}/0`;
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', '--save', ''], {
      stdio: 'ignore',
    });
    child = started;
    for (let attempt = 0; attempt < REDIS_START_ATTEMPTS; attempt += 1) {
      if ((await probeRedis(url)) === undefined) return;
      if (started.exitCode !== null) break;
      await new Promise((resolve) => setTimeout(resolve, REDIS_START_PAUSE_MS));
    }
    started.kill('SIGKILL');
    throw new Error(`redis-server on port ${port} did not start`);
  };
  await start();
  return {
    port,
    url,
    async kill() {
      const running = child;
      if (running === undefined || running.exitCode !== null || running.pid === undefined) return;
      const exited = new Promise((resolve) => running.once('exit', resolve));
      process.kill(running.pid, 'SIGKILL');
      await exited;
    },
    restart: start,
  };
}

/** End every PostgreSQL connection named `applicationName` (as a restart or failover would). */
export async function terminatePostgresConnections(
  adminUrl: string,
  applicationName: string,
): Promise<number> {
  const client = new pg.Client({ connectionString: adminUrl });
  client.on('error', () => undefined);
  await client.connect();
  try {
    const { rows } = await client.query<{ ended: boolean }>(
      'SELECT pg_terminate_backend(pid) AS ended FROM pg_stat_activity WHERE application_name = $1 AND pid <> pg_backend_pid()',
      [applicationName],
    );
    return rows.filter((row) => row.ended).length;
  } finally {
    await client.end().catch(() => undefined);
  }
}

/** A PostgreSQL URL whose connections carry `applicationName`, so a test can find and end them. */
export function withApplicationName(url: string, applicationName: string): string {
  const parsed = new URL(url);
  parsed.searchParams.set('application_name', applicationName);
  return parsed.toString();
}
