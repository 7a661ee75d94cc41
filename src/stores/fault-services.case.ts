/**
 * Faults for tests, all on loopback and all of the test's own making: a port nothing listens
 * on, a server that accepts connections and never answers, a Redis server and a PostgreSQL
 * cluster of its own to stop, pause and restart, and the termination of one's own PostgreSQL
 * connections. The shared services other tests use are never paused or restarted.
 */
import { type ChildProcess, execFile, spawn } from 'node:child_process';
import { chownSync, existsSync, mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { createServer, type Server, type Socket } from 'node:net';
import { tmpdir, userInfo } from 'node:os';
import { join } from 'node:path';
import { promisify } from 'node:util';
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
  /** Kill it and delete its files. */
  remove(): Promise<void>;
}

const REDIS_START_ATTEMPTS = 50;
const REDIS_START_PAUSE_MS = 100;

/**
 * A `redis-server` of the test's own on a free port: without persistence, or with `durable` an
 * append-only file synced on every write (in a directory of its own, which `remove` deletes), so
 * a kill loses nothing it acknowledged.
 */
export async function startOwnRedis(options: { durable?: boolean } = {}): Promise<OwnRedis> {
  const port = await closedPort();
  const url = `redis://127.0.0.1:${port}/0`;
  const directory = options.durable === true ? mkdtempSync(join(tmpdir(), 'selfgc-own-redis-')) : undefined;
  const persistence =
    directory === undefined
      ? ['--save', '']
      : ['--save', '', '--appendonly', 'yes', '--appendfsync', 'always', '--dir', directory];
  let child: ChildProcess | undefined;
  const start = async () => {
    const started = spawn('redis-server', ['--port', String(port), '--bind', '127.0.0.1', ...persistence], {
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
  const kill = async () => {
    const running = child;
    if (running === undefined || running.exitCode !== null || running.pid === undefined) return;
    const exited = new Promise((resolve) => running.once('exit', resolve));
    process.kill(running.pid, 'SIGKILL');
    await exited;
  };
  await start();
  return {
    port,
    url,
    kill,
    restart: start,
    async remove() {
      await kill();
      if (directory !== undefined) rmSync(directory, { recursive: true, force: true });
    },
  };
}

export interface OwnPostgres {
  port: number;
  url: string;
  /** Stop the server at once (`pg_ctl stop -m immediate`: no shutdown checkpoint, as a crash). */
  stop(): Promise<void>;
  /** Start it again on the same port and data directory. */
  restart(): Promise<void>;
  /** Stop it and remove its data directory. */
  remove(): Promise<void>;
}

const run = promisify(execFile);

/** The directory of the installed PostgreSQL server's programs, or undefined when there is none. */
function postgresBinDirectory(): string | undefined {
  const root = '/usr/lib/postgresql';
  if (!existsSync(root)) return undefined;
  const versions = readdirSync(root).sort((a, b) => Number(b) - Number(a));
  return versions.map((version) => join(root, version, 'bin')).find((bin) => existsSync(join(bin, 'initdb')));
}

/** Why `startOwnPostgres` cannot run here, or undefined when it can. */
export function ownPostgresUnavailable(): string | undefined {
  if (postgresBinDirectory() === undefined) return 'no PostgreSQL server programs under /usr/lib/postgresql';
  if (userInfo().uid === 0 && !existsSync('/usr/sbin/runuser')) return 'root without runuser';
  return undefined;
}

/**
 * A PostgreSQL cluster of the test's own: `initdb` into a fresh directory, the server on a free
 * loopback port with trust authentication. The server refuses to run as root, so under root it
 * runs as the `postgres` user.
 */
export async function startOwnPostgres(): Promise<OwnPostgres> {
  const bin = postgresBinDirectory();
  if (bin === undefined) throw new Error('no PostgreSQL server programs under /usr/lib/postgresql');
  const directory = mkdtempSync(join(tmpdir(), 'selfgc-own-pg-'));
  const data = join(directory, 'data');
  const asOwner = async (program: string, args: string[]) => {
    const command = join(bin, program);
    return userInfo().uid === 0
      ? run('runuser', ['-u', 'postgres', '--', command, ...args])
      : run(command, args);
  };
  if (userInfo().uid === 0) {
    const { stdout } = await run('id', ['-u', 'postgres']);
    const { stdout: group } = await run('id', ['-g', 'postgres']);
    chownSync(directory, Number(stdout.trim()), Number(group.trim()));
  }
  await asOwner('initdb', ['-D', data, '-A', 'trust', '-U', 'postgres', '--no-sync', '-E', 'UTF8']);
  const port = await closedPort();
  const options = `-p ${port} -k ${directory} -c listen_addresses=127.0.0.1 -c fsync=off`;
  const start = async () => {
    await asOwner('pg_ctl', ['-D', data, '-o', options, '-l', join(directory, 'server.log'), '-w', 'start']);
  };
  const stop = async () => {
    await asOwner('pg_ctl', ['-D', data, '-m', 'immediate', '-w', 'stop']).catch(() => undefined);
  };
  await start();
  return {
    port,
    url: `postgres://postgres@127.0.0.1:${port}/postgres`,
    stop,
    restart: start,
    async remove() {
      await stop();
      rmSync(directory, { recursive: true, force: true });
    },
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
