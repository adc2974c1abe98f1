import { execFileSync } from 'node:child_process';
import { createHash } from 'node:crypto';
import { existsSync, readdirSync, readFileSync, renameSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { delimiter, join } from 'node:path';
import { fileURLToPath } from 'node:url';

const SOURCE = fileURLToPath(new URL('./LoopbackDynamoDbLocal.java', import.meta.url));
export const LAUNCHER_CLASS = 'LoopbackDynamoDbLocal';

/**
 * The directory holding the compiled launcher that binds DynamoDB Local to 127.0.0.1
 * (LoopbackDynamoDbLocal.java), compiled once per source and jar into the temp dir with the JDK
 * compiler module that the Java runtime carries (no `javac` needed); undefined when it cannot be
 * compiled, so the caller can fall back to the plain jar and say so.
 */
export function loopbackLauncherDir(jar: string, libDir: string): string | undefined {
  const source = readFileSync(SOURCE);
  const key = createHash('sha256').update(source).update(jar).digest('hex').slice(0, 16);
  const dir = join(tmpdir(), `postdate-dynamodb-loopback-${key}`);
  if (existsSync(join(dir, `${LAUNCHER_CLASS}.class`))) return dir;
  const building = `${dir}.${process.pid}.${Date.now()}`;
  const classpath = [jar, ...libraryJars(libDir)].join(delimiter);
  try {
    execFileSync(
      'java',
      ['-m', 'jdk.compiler/com.sun.tools.javac.Main', '-cp', classpath, '-d', building, SOURCE],
      {
        stdio: 'ignore',
        timeout: 60_000,
      },
    );
    try {
      renameSync(building, dir);
    } catch {
      // Another process compiled it first: theirs is as good.
      rmSync(building, { recursive: true, force: true });
    }
    return existsSync(join(dir, `${LAUNCHER_CLASS}.class`)) ? dir : undefined;
  } catch {
    rmSync(building, { recursive: true, force: true });
    return undefined;
  }
}

/**
 * The engine's libraries, each by name: the compiler, run as a module of `java`, expands no `*` in a
 * class path (only the `java` and `javac` commands do, for their own), and the jar's manifest is not
 * to be relied on (decision 0310).
 */
export function libraryJars(libDir: string): string[] {
  return readdirSync(libDir)
    .filter((name) => name.endsWith('.jar'))
    .map((name) => join(libDir, name));
}
