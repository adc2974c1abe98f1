import java.lang.reflect.Field;
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
 */
public class LoopbackDynamoDbLocal {
  public static void main(String[] args) throws Exception {
    if (Boolean.getBoolean("postdate.exitWithParent")) exitWhenStdinEnds();
    DynamoDBProxyServer proxy = ServerRunner.createServerFromCommandLineArgs(args);
    Field field = DynamoDBProxyServer.class.getDeclaredField("server");
    field.setAccessible(true);
    Server server = (Server) field.get(proxy);
    for (Connector connector : server.getConnectors()) {
      if (connector instanceof ServerConnector) ((ServerConnector) connector).setHost("127.0.0.1");
    }
    proxy.start();
    System.out.println("DynamoDB Local listening on 127.0.0.1 only");
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
