import com.almworks.sqlite4java.SQLiteConnection;
import com.almworks.sqlite4java.SQLiteJob;
import com.almworks.sqlite4java.SQLiteQueue;
import java.lang.reflect.Field;
import java.util.Map;
import org.eclipse.jetty.server.Connector;
import org.eclipse.jetty.server.Server;
import org.eclipse.jetty.server.ServerConnector;
import software.amazon.dynamodb.services.local.main.ServerRunner;
import software.amazon.dynamodb.services.local.server.DynamoDBProxyServer;

/**
 * DynamoDB Local bound to 127.0.0.1 only. The engine has no option for the address it listens on
 * (its Jetty connector takes every interface), and it accepts any credentials, so the local stack
 * starts it through this launcher (run in Java's single-file source mode, no build step): the same
 * command-line options as `-jar DynamoDBLocal.jar`, and the connector's host set before it starts.
 *
 * With `-Dpostdate.exitWithParent=true` it also exits when its standard input ends: the stack that
 * started it holds the other end of that pipe, so however that process ends (a signal it could not
 * handle, a crash, SIGKILL) the engine goes with it and its port is freed.
 *
 * It also indexes the engine's stream records by stream (docs/decisions/0308). DynamoDB Local keeps
 * every table's stream records in one SQLite table, `us`, keyed by sequence number alone, for 24
 * hours, deleted tables' too, and on every write to a table with a stream, and every DescribeStream,
 * it asks for the smallest sequence number of one stream: without an index by stream, a walk past
 * the records of every other stream. An engine that many tables have written to (the test run's,
 * a day of `npm start`) then spends most of its CPU there.
 */
public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    if (Boolean.getBoolean("postdate.exitWithParent")) exitWhenStdinEnds();
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    indexStreamRecordsByStream(proxy);
    Server server = (Server) field(proxy, "server");
    for (Connector connector : server.getConnectors()) {
      if (connector instanceof ServerConnector) ((ServerConnector) connector).setHost("127.0.0.1");
    }
    try {
      proxy.start();
    } catch (Exception e) {
      // The database opened above keeps a thread that would hold the JVM up: a port it cannot bind
      // must end it, with Jetty's message for the stack to read.
      e.printStackTrace();
      System.exit(1);
    }
    System.out.println("DynamoDB Local listening on 127.0.0.1 only");
  }

  /**
   * Adds `postdate_us_by_stream_id` (StreamID) to the shared database's `us` table, before the
   * engine takes requests; the same SQL, answered from the index (docs/decisions/0311). The engine's
   * own classes are reached by name, not compiled against: an engine whose insides are not as this
   * expects (another release) starts without the index and says so, only slower, still on loopback.
   */
  private static void indexStreamRecordsByStream(DynamoDBProxyServer proxy) {
    try {
      Object requests = field(field(proxy, "serverHandler"), "primaryHandler");
      // The shared database is opened at its first request: ListTables, as the handler takes it.
      Class<?> listTables = Class.forName("software.amazon.awssdk.services.dynamodb.model.ListTablesRequest");
      Object builder = listTables.getMethod("builder").invoke(null);
      Object request = Class.forName("software.amazon.awssdk.utils.builder.SdkBuilder").getMethod("build").invoke(builder);
      requests.getClass()
          .getMethod("listTables", String.class, String.class, listTables)
          .invoke(requests, "postdate", "us-east-1", request);
      for (Object client : ((Map<?, ?>) field(requests, "dbRequestHandlers")).values()) {
        SQLiteQueue queue = (SQLiteQueue) field(field(client, "dbAccess"), "queue");
        queue.execute(new SQLiteJob<Object>() {
          @Override
          protected Object job(SQLiteConnection connection) throws Throwable {
            // By stream alone: every index ends with the rowid (here SequenceNumber) anyway, and the
            // engine's SQLite (3.8.7) seeks `StreamID = ? AND rowid > ?` only when the index does not
            // name it. 0308's index named it, and GetRecords at a stream's end walked the stream.
            connection.exec("DROP INDEX IF EXISTS postdate_us_by_stream");
            connection.exec("CREATE INDEX IF NOT EXISTS postdate_us_by_stream_id ON us (StreamID)");
            return null;
          }
        }).complete();
      }
    } catch (Throwable e) {
      System.err.println("DynamoDB Local: stream records not indexed by stream (" + e + "); it only runs slower");
    }
  }

  /** A field of `target` or of its superclasses, private or not. */
  private static Object field(Object target, String name) throws ReflectiveOperationException {
    for (Class<?> type = target.getClass(); type != null; type = type.getSuperclass()) {
      try {
        Field field = type.getDeclaredField(name);
        field.setAccessible(true);
        return field.get(target);
      } catch (NoSuchFieldException e) {
        // Look in the superclass.
      }
    }
    throw new NoSuchFieldException(target.getClass().getName() + "." + name);
  }

  private static void exitWhenStdinEnds() {
    Thread watcher = new Thread(() -> {
      try {
        while (System.in.read() != -1) {
          // Nothing is ever written; the read returns only when the parent's end closes.
        }
      } catch (java.io.IOException e) {
        // A broken pipe means the same: the parent is gone.
      }
      Runtime.getRuntime().halt(0);
    }, "postdate-parent-watch");
    watcher.setDaemon(true);
    watcher.start();
  }
}
