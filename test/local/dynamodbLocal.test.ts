import { execFileSync, spawn } from 'node:child_process';
import { mkdirSync, mkdtempSync, rmSync, writeFileSync } from 'node:fs';
import { connect } from 'node:net';
import { networkInterfaces, tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { setTimeout as sleep } from 'node:timers/promises';
import { CreateTableCommand, DynamoDBClient, PutItemCommand } from '@aws-sdk/client-dynamodb';
import {
  DescribeStreamCommand,
  DynamoDBStreamsClient,
  GetRecordsCommand,
  GetShardIteratorCommand,
} from '@aws-sdk/client-dynamodb-streams';
import { describe, expect, it } from 'vitest';
import { LAUNCHER_CLASS, libraryJars, loopbackLauncherDir } from '../../local/dynamodb/loopbackLauncher.js';
import { dynamoDbLocalJar, LISTENING_LINE, startDynamoDbLocal } from '../../local/dynamodbLocal.js';
import { freePort } from '../../local/freePort.js';

/**
 * Issue 17 §4: DynamoDB Local accepts any credentials, so it must listen on loopback only, like every
 * other part of the local stack (docs/local-stack.md). Its own options cannot say so; the launcher does.
 */
function reachable(host: string, port: number): Promise<boolean> {
  return new Promise((resolve) => {
    const socket = connect({ host, port, timeout: 2000 });
    socket.once('connect', () => {
      socket.destroy();
      resolve(true);
    });
    socket.once('error', () => resolve(false));
    socket.once('timeout', () => {
      socket.destroy();
      resolve(false);
    });
  });
}

/** This machine's own addresses that are not loopback (where a listener on every interface answers). */
const outwardAddresses = Object.values(networkInterfaces())
  .flat()
  .filter((address) => address !== undefined && !address.internal && address.family === 'IPv4')
  .map((address) => address?.address as string);

describe('DynamoDB Local in the local stack', () => {
  it('answers on 127.0.0.1 and nowhere else', async () => {
    const db = await startDynamoDbLocal({ port: await freePort() });
    try {
      expect(db.listensOn).toBe('loopback');
      expect(await reachable('127.0.0.1', db.port)).toBe(true);
      for (const address of outwardAddresses) expect(await reachable(address, db.port)).toBe(false);
    } finally {
      await db.stop();
    }
  }, 60_000);

  // Decisions 0308 and 0311: the engine keeps every stream's records in one SQLite table keyed by
  // sequence number alone. It looks up a stream's first record on every write to a table with a
  // stream, and reads a shard from its iterator's position on every GetRecords. The launcher indexes
  // the records by stream; the engine's own SQLite must then answer both from a seek, not a walk.
  it('indexes the stream records by stream, and each stream still reads only its own records in order', async () => {
    const dataDir = mkdtempSync(join(tmpdir(), 'postdate-ddb-index-'));
    const db = await startDynamoDbLocal({ port: await freePort(), dataDir });
    try {
      const config = {
        endpoint: db.endpoint,
        region: 'us-east-1',
        credentials: { accessKeyId: 'local', secretAccessKey: 'local' },
      };
      const tables = new DynamoDBClient(config);
      const streams = new DynamoDBStreamsClient(config);
      const arns: string[] = [];
      for (const name of ['first', 'second']) {
        const created = await tables.send(
          new CreateTableCommand({
            TableName: name,
            BillingMode: 'PAY_PER_REQUEST',
            AttributeDefinitions: [{ AttributeName: 'pk', AttributeType: 'S' }],
            KeySchema: [{ AttributeName: 'pk', KeyType: 'HASH' }],
            StreamSpecification: { StreamEnabled: true, StreamViewType: 'KEYS_ONLY' },
          }),
        );
        arns.push(created.TableDescription?.LatestStreamArn as string);
      }
      // Interleaved, so that each stream's records sit between the other's.
      for (let i = 0; i < 6; i += 1) {
        await tables.send(
          new PutItemCommand({ TableName: i % 2 ? 'second' : 'first', Item: { pk: { S: `k${i}` } } }),
        );
      }
      const keysOf = async (arn: string) => {
        const { StreamDescription } = await streams.send(new DescribeStreamCommand({ StreamArn: arn }));
        const { ShardIterator } = await streams.send(
          new GetShardIteratorCommand({
            StreamArn: arn,
            ShardId: StreamDescription?.Shards?.[0]?.ShardId as string,
            ShardIteratorType: 'TRIM_HORIZON',
          }),
        );
        const { Records } = await streams.send(new GetRecordsCommand({ ShardIterator }));
        return (Records ?? []).map((record) => record.dynamodb?.Keys?.pk?.S);
      };
      expect(await keysOf(arns[0] as string)).toEqual(['k0', 'k2', 'k4']);
      expect(await keysOf(arns[1] as string)).toEqual(['k1', 'k3', 'k5']);
    } finally {
      await db.stop();
    }
    try {
      const file = join(dataDir, 'shared-local-instance.db');
      const plans = enginePlans(file);
      // A stream's first record (DescribeStream, every write): from the index, by stream.
      expect(plans.firstRecordOfStream).toMatch(/USING COVERING INDEX \S+ \(StreamID=\?\)/);
      // GetRecords from an iterator: a seek to its position in the stream (`rowid>?`), not a walk of
      // every record of the stream that a poll at the stream's end would repeat (0311).
      expect(plans.recordsFromIterator).toMatch(/USING INDEX \S+ \(StreamID=\? AND rowid>\?\)/);

      // A data dir written between 0308 and 0311 holds 0308's index; the next start drops it.
      enginePlans(file, 'CREATE INDEX postdate_us_by_stream ON us (StreamID, SequenceNumber)');
      const again = await startDynamoDbLocal({ port: await freePort(), dataDir });
      await again.stop();
      const after = enginePlans(file);
      expect(after.indexes).toEqual(['postdate_us_by_stream_id']);
      expect(after.recordsFromIterator).toMatch(/USING INDEX \S+ \(StreamID=\? AND rowid>\?\)/);
    } finally {
      rmSync(dataDir, { recursive: true, force: true });
    }
  }, 60_000);

  // Decision 0308: the launcher reaches the engine's insides by name, so that a release whose insides
  // differ still starts, on loopback, only without the index, and says so. Such a release is played
  // here by an engine of two classes with the names and the one field the launcher compiles against
  // (a Jetty server under `server`), and none of the insides it indexes through.
  it('starts an engine whose insides differ without the index, still on loopback only, and says so', async () => {
    const { libDir } = dynamoDbLocalJar();
    const work = mkdtempSync(join(tmpdir(), 'postdate-ddb-other-release-'));
    const sources = join(work, 'src');
    const engine = join(work, 'engine');
    mkdirSync(sources);
    writeFileSync(join(sources, 'DynamoDBProxyServer.java'), OTHER_RELEASE_SERVER);
    writeFileSync(join(sources, 'ServerRunner.java'), OTHER_RELEASE_RUNNER);
    execFileSync('java', [
      '-m',
      'jdk.compiler/com.sun.tools.javac.Main',
      '-cp',
      libraryJars(libDir).join(delimiter),
      '-d',
      engine,
      join(sources, 'DynamoDBProxyServer.java'),
      join(sources, 'ServerRunner.java'),
    ]);
    const launcher = loopbackLauncherDir(engine, libDir);
    expect(launcher, 'the launcher compiles against the other release').toBeDefined();
    const port = await freePort();
    const java = spawn(
      'java',
      [
        '-Dpostdate.exitWithParent=true',
        '-cp',
        [launcher as string, engine, join(libDir, '*')].join(delimiter),
        LAUNCHER_CLASS,
        '-sharedDb',
        '-inMemory',
        '-port',
        String(port),
      ],
      { stdio: ['pipe', 'pipe', 'pipe'] },
    );
    let stdout = '';
    let stderr = '';
    java.stdout.on('data', (chunk: Buffer) => {
      stdout += chunk.toString();
    });
    java.stderr.on('data', (chunk: Buffer) => {
      stderr += chunk.toString();
    });
    try {
      const deadline = Date.now() + 30_000;
      while (!stdout.includes(LISTENING_LINE) && java.exitCode === null) {
        if (Date.now() > deadline) throw new Error(`the other release did not listen: ${stdout}${stderr}`);
        await sleep(50);
      }
      expect(java.exitCode, stderr).toBeNull();
      expect(stderr).toContain('DynamoDB Local: stream records not indexed by stream');
      expect(await reachable('127.0.0.1', port)).toBe(true);
      for (const address of outwardAddresses) expect(await reachable(address, port)).toBe(false);
    } finally {
      java.kill('SIGKILL');
      rmSync(work, { recursive: true, force: true });
      if (launcher) rmSync(launcher, { recursive: true, force: true });
    }
  }, 120_000);
});

/** Another release's proxy server: its Jetty server under `server`, nothing else the launcher names. */
const OTHER_RELEASE_SERVER = `package software.amazon.dynamodb.services.local.server;

import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;

public class DynamoDBProxyServer {
  private final Server server = new Server();

  public DynamoDBProxyServer(int port) {
    ServerConnector connector = new ServerConnector(server);
    connector.setPort(port);
    server.addConnector(connector);
  }

  public void start() throws Exception {
    server.start();
  }
}
`;

/** Another release's entry: the same command line, its own server. */
const OTHER_RELEASE_RUNNER = `package software.amazon.dynamodb.services.local.main;

import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

public class ServerRunner {
  public static DynamoDBProxyServer createServerFromCommandLineArgs(String[] args) {
    int port = 8000;
    for (int i = 0; i + 1 < args.length; i += 1) {
      if (args[i].equals("-port")) port = Integer.parseInt(args[i + 1]);
    }
    return new DynamoDBProxyServer(port);
  }
}
`;

/**
 * How the engine's own SQLite (the sqlite4java of its lib directory, SQLite 3.8.7) plans the engine's
 * two reads of a stream's records, on a database file the engine has written and let go, and the
 * indexes made on `us` (SQLite's own for the primary key aside); `firstRun` is executed first. The SQL is
 * the engine's (SQLiteDBAccess's format strings with the `us` table's columns, DynamoDB Local
 * 2026-01-16), bound as the engine binds it.
 */
function enginePlans(
  databaseFile: string,
  firstRun?: string,
): { firstRecordOfStream: string; recordsFromIterator: string; indexes: string[] } {
  const { libDir } = dynamoDbLocalJar();
  const work = mkdtempSync(join(tmpdir(), 'postdate-ddb-plans-'));
  try {
    const source = join(work, 'EnginePlans.java');
    writeFileSync(source, ENGINE_PLANS);
    const output = execFileSync(
      'java',
      [
        `-Djava.library.path=${libDir}`,
        '-cp',
        join(libDir, 'sqlite4java.jar'),
        source,
        databaseFile,
        ...(firstRun ? [firstRun] : []),
      ],
      { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] },
    );
    return JSON.parse(output.trim().split('\n').pop() as string);
  } finally {
    rmSync(work, { recursive: true, force: true });
  }
}

const ENGINE_PLANS = `import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteStatement;
import java.io.File;
import java.util.logging.Level;
import java.util.logging.Logger;

public class EnginePlans {
  public static void main(String[] args) throws Exception {
    Logger.getLogger("com.almworks.sqlite4java").setLevel(Level.OFF);
    SQLiteConnection connection = new SQLiteConnection(new File(args[0]));
    connection.open(false);
    if (args.length > 1) connection.exec(args[1]);
    StringBuilder indexes = new StringBuilder();
    SQLiteStatement names = connection.prepare("SELECT name FROM sqlite_master WHERE type = 'index' AND tbl_name = 'us' AND sql IS NOT NULL ORDER BY name", false);
    while (names.step()) indexes.append(indexes.length() > 0 ? ", " : "").append("\\"" + names.columnString(0) + "\\"");
    SQLiteStatement last = connection.prepare("SELECT StreamID, ShardID, MAX(SequenceNumber) FROM us", false);
    last.step();
    String stream = last.columnString(0);
    String shard = last.columnString(1);
    long end = last.columnLong(2) + 1;
    String first = plan(connection, "SELECT MIN(SequenceNumber) FROM us WHERE StreamID = ?", stream);
    String records = plan(connection,
        "SELECT SequenceNumber, CreationDateTime, StreamRecord, OperationType FROM us WHERE StreamID = ? AND ShardID = ? AND SequenceNumber >= ? AND CreationDateTime > ? ORDER BY SequenceNumber ASC LIMIT ?",
        stream, shard, end, System.currentTimeMillis() - 86_400_000L, 1000);
    System.out.println("{\\"firstRecordOfStream\\": \\"" + first + "\\", \\"recordsFromIterator\\": \\"" + records + "\\", \\"indexes\\": [" + indexes + "]}");
  }

  private static String plan(SQLiteConnection connection, String sql, Object... values) throws Exception {
    SQLiteStatement statement = connection.prepare("EXPLAIN QUERY PLAN " + sql, false);
    for (int i = 0; i < values.length; i += 1) {
      if (values[i] instanceof String) statement.bind(i + 1, (String) values[i]);
      else if (values[i] instanceof Long) statement.bind(i + 1, (Long) values[i]);
      else statement.bind(i + 1, (Integer) values[i]);
    }
    StringBuilder plan = new StringBuilder();
    while (statement.step()) plan.append(plan.length() > 0 ? "; " : "").append(statement.columnString(3));
    return plan.toString();
  }
}
`;
