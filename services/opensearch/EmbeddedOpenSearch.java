import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Collection;
import java.util.Collections;
import java.util.List;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;

import org.opensearch.common.logging.LogConfigurator;
import org.opensearch.common.settings.Settings;
import org.opensearch.env.Environment;
import org.opensearch.node.InternalSettingsPreparer;
import org.opensearch.node.Node;
import org.opensearch.plugins.Plugin;

/**
 * A single OpenSearch 2.19 node for gpulog's tests, started from Maven jars with the
 * modules loaded as classpath plugins (no distribution, no Bootstrap, so it runs as root).
 * Usage: EmbeddedOpenSearch home-dir http-port transport-port. The home dir keeps data/
 * across restarts; config/log4j2.properties must exist there. SIGTERM closes the node.
 */
public final class EmbeddedOpenSearch {
    private static final String[] PLUGIN_CLASSES = {
        "org.opensearch.transport.Netty4Plugin",
        "org.opensearch.analysis.common.CommonAnalysisPlugin",
        "org.opensearch.painless.PainlessPlugin",
        "org.opensearch.index.mapper.MapperExtrasPlugin",
        "org.opensearch.index.reindex.ReindexPlugin",
        "org.opensearch.ingest.common.IngestCommonPlugin",
    };

    /** Node's plugin-taking constructor is protected; a subclass exposes it. */
    private static final class TestNode extends Node {
        TestNode(Environment env, Collection<Class<? extends Plugin>> plugins) {
            super(env, plugins, true);
        }
    }

    public static void main(String[] args) throws Exception {
        if (args.length != 3) {
            System.err.println("usage: EmbeddedOpenSearch <home-dir> <http-port> <transport-port>");
            System.exit(2);
        }
        Path home = Paths.get(args[0]).toAbsolutePath();
        for (String d : new String[] {"config", "data", "logs", "modules", "plugins"}) {
            Files.createDirectories(home.resolve(d));
        }
        Settings settings = Settings.builder()
            .put("path.home", home.toString())
            .put("path.data", home.resolve("data").toString())
            .put("path.logs", home.resolve("logs").toString())
            .put("cluster.name", "gpulog-test")
            .put("node.name", "node-1")
            .put("discovery.type", "single-node")
            .put("network.host", "127.0.0.1")
            .put("http.port", args[1])
            .put("transport.port", args[2])
            .put("cluster.routing.allocation.disk.threshold_enabled", false)
            .put("indices.breaker.total.use_real_memory", false)
            .put("action.auto_create_index", true)
            .build();
        Environment env = InternalSettingsPreparer.prepareEnvironment(
            settings, Collections.emptyMap(), home.resolve("config"), () -> "node-1");
        LogConfigurator.registerErrorListener();
        LogConfigurator.configure(env);

        List<Class<? extends Plugin>> plugins = new ArrayList<>();
        for (String name : PLUGIN_CLASSES) {
            try {
                plugins.add(Class.forName(name).asSubclass(Plugin.class));
            } catch (ClassNotFoundException e) {
                System.err.println("not on classpath, skipped: " + name);
            }
        }
        Node node = new TestNode(env, plugins);
        CountDownLatch stopped = new CountDownLatch(1);
        Runtime.getRuntime().addShutdownHook(new Thread(() -> {
            try {
                node.close();
                node.awaitClose(20, TimeUnit.SECONDS);
            } catch (Exception e) {
                e.printStackTrace();
            }
            stopped.countDown();
        }));
        node.start();
        System.out.println("EMBEDDED_OPENSEARCH_STARTED http://127.0.0.1:" + args[1]);
        stopped.await();   // OpenSearch's own threads are daemons: keep the JVM alive
    }
}
