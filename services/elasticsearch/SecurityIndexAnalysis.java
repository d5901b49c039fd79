/*
 * SecurityIndexAnalysis.java - a tiny Elasticsearch plugin (services/elasticsearch/,
 * built and installed by elasticsearch.sh fetch) for the test node with security on.
 *
 * The minimal distribution on Maven Central (integ-test-zip) has no analysis-common
 * module, and the module is not published on its own. The .security index (native
 * users, API keys) declares an "email" analyzer made of the tokenizer uax_url_email
 * and the filters pattern_capture, lowercase and unique; lowercase is in the server,
 * the other three come from analysis-common. Without them the security index cannot
 * be created, so no user and no API key can be made through the security API.
 * This plugin registers those three names on the Lucene classes analysis-common uses
 * (unique as Lucene's RemoveDuplicatesTokenFilter, which drops a repeated token at the
 * same position; the security index only needs the analyzer to exist).
 */
import java.util.List;
import java.util.Map;
import java.util.regex.Pattern;

import org.apache.lucene.analysis.TokenStream;
import org.apache.lucene.analysis.email.UAX29URLEmailTokenizer;
import org.apache.lucene.analysis.miscellaneous.RemoveDuplicatesTokenFilter;
import org.apache.lucene.analysis.pattern.PatternCaptureGroupTokenFilter;
import org.elasticsearch.index.analysis.TokenFilterFactory;
import org.elasticsearch.index.analysis.TokenizerFactory;
import org.elasticsearch.indices.analysis.AnalysisModule.AnalysisProvider;
import org.elasticsearch.plugins.AnalysisPlugin;
import org.elasticsearch.plugins.Plugin;

public class SecurityIndexAnalysis extends Plugin implements AnalysisPlugin {
    /* a filter factory of a name and a wrapping function */
    private static TokenFilterFactory filter(String name, java.util.function.UnaryOperator<TokenStream> f) {
        return new TokenFilterFactory() {
            public String name() { return name; }
            public TokenStream create(TokenStream in) { return f.apply(in); }
        };
    }

    @Override
    public Map<String, AnalysisProvider<TokenFilterFactory>> getTokenFilters() {
        AnalysisProvider<TokenFilterFactory> capture = (idx, env, name, settings) -> {
            List<String> regexes = settings.getAsList("patterns");
            Pattern[] patterns = new Pattern[regexes.size()];
            for (int i = 0; i < patterns.length; i++) patterns[i] = Pattern.compile(regexes.get(i));
            boolean keep = settings.getAsBoolean("preserve_original", true);
            return filter(name, in -> new PatternCaptureGroupTokenFilter(in, keep, patterns));
        };
        AnalysisProvider<TokenFilterFactory> unique = (idx, env, name, settings) ->
            filter(name, RemoveDuplicatesTokenFilter::new);
        return Map.of("pattern_capture", AnalysisPlugin.requiresAnalysisSettings(capture), "unique", unique);
    }

    @Override
    public Map<String, AnalysisProvider<TokenizerFactory>> getTokenizers() {
        return Map.of("uax_url_email", (idx, env, name, settings) ->
            TokenizerFactory.newFactory(name, UAX29URLEmailTokenizer::new));
    }
}
