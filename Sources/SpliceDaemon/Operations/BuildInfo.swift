package import SpliceMetrics

/// `splice_build_info{version="…"} 1`, the usual way to expose a version to Prometheus.
package struct BuildInfo: MetricSource {
    let version: String

    package init(version: String) {
        self.version = version
    }

    package func collect() -> [MetricFamily] {
        [.gauge("splice_build_info", help: "Always 1; the version of splice that serves these metrics.",
                labelNames: ["version"], [(labels: [version], value: 1)])]
    }
}

/// The standard `process_*` families.
package struct ProcessFigures: MetricSource {
    package init() {}

    package func collect() -> [MetricFamily] { ProcessMetrics.collect() }
}
