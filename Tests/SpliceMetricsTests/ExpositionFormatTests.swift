import Foundation
import Testing

@testable import SpliceMetrics

@Suite("Prometheus text format 0.0.4")
struct ExpositionFormatTests {
    @Test("a counter: HELP, TYPE, then its samples by label set")
    func counter() {
        let counter = Counter("splice_things_total", help: "Things done.", labelNames: ["kind"], initial: [["b"]])
        counter.increment(["a"])
        counter.increment(["a"], by: 2)
        #expect(ExpositionFormat.render(counter.collect()) == """
            # HELP splice_things_total Things done.
            # TYPE splice_things_total counter
            splice_things_total{kind="a"} 3
            splice_things_total{kind="b"} 0

            """)
    }

    @Test("a counter never goes down: negative and non-finite increments are ignored")
    func counterMonotonic() {
        let counter = Counter("c_total", help: "h")
        counter.increment(by: 2.5)
        counter.increment(by: -1)
        counter.increment(by: .nan)
        counter.increment(by: .infinity)
        #expect(counter.value() == 2.5)
    }

    @Test("label values escape backslash, double quote and newline; HELP escapes backslash and newline")
    func escaping() {
        let family = MetricFamily.gauge(
            "g", help: #"a \ help"# + "\nsecond line", labelNames: ["file"],
            [(labels: [#"C:\dir\"quoted" <script>"# + "\nnext"], value: 1)])
        #expect(ExpositionFormat.render([family]) == #"""
            # HELP g a \\ help\nsecond line
            # TYPE g gauge
            g{file="C:\\dir\\\"quoted\" <script>\nnext"} 1

            """#)
    }

    @Test("values: integers plain, fractions shortest, +Inf, -Inf, NaN")
    func values() {
        #expect(ExpositionFormat.format(0) == "0")
        #expect(ExpositionFormat.format(-0.0) == "0")
        #expect(ExpositionFormat.format(42) == "42")
        #expect(ExpositionFormat.format(-7) == "-7")
        #expect(ExpositionFormat.format(0.25) == "0.25")
        #expect(ExpositionFormat.format(0.0005) == "0.0005")
        #expect(ExpositionFormat.format(1e-05) == "1e-05")
        #expect(ExpositionFormat.format(1e20) == "1e+20")
        #expect(ExpositionFormat.format(.infinity) == "+Inf")
        #expect(ExpositionFormat.format(-.infinity) == "-Inf")
        #expect(ExpositionFormat.format(.nan) == "NaN")
        // Every rendering reads back as the same number.
        for value in [0.1, 2.5, 1e-9, 123_456_789.125, 9_007_199_254_740_993.0] {
            #expect(Double(ExpositionFormat.format(value)) == value)
        }
    }

    @Test("a histogram: cumulative buckets, +Inf equal to _count, _sum")
    func histogram() {
        let histogram = Histogram("splice_wait_seconds", help: "Waits.", buckets: [0.25, 1, 10])
        for value in [0.125, 0.25, 0.5, 3, 30, .nan] { histogram.observe(value) }
        #expect(ExpositionFormat.render(histogram.collect()) == """
            # HELP splice_wait_seconds Waits.
            # TYPE splice_wait_seconds histogram
            splice_wait_seconds_bucket{le="0.25"} 2
            splice_wait_seconds_bucket{le="1"} 3
            splice_wait_seconds_bucket{le="10"} 4
            splice_wait_seconds_bucket{le="+Inf"} 5
            splice_wait_seconds_sum 33.875
            splice_wait_seconds_count 5

            """)
    }

    @Test("a labelled histogram puts le after its own labels; an unobserved label set is absent")
    func labelledHistogram() {
        let histogram = Histogram("h_seconds", help: "h", buckets: [1], labelNames: ["stage"])
        histogram.observe(2, ["stitch"])
        #expect(ExpositionFormat.render(histogram.collect()) == """
            # HELP h_seconds h
            # TYPE h_seconds histogram
            h_seconds_bucket{stage="stitch",le="1"} 0
            h_seconds_bucket{stage="stitch",le="+Inf"} 1
            h_seconds_sum{stage="stitch"} 2
            h_seconds_count{stage="stitch"} 1

            """)
    }

    @Test("families render in order; a repeated name and a family without samples are left out")
    func families() {
        let text = ExpositionFormat.render([
            .gauge("b", help: "first b", value: 1),
            .gauge("a", help: "a", value: 2),
            .gauge("b", help: "second b", value: 3),
            .gauge("empty", help: "nothing", []),
        ])
        #expect(text == "# HELP b first b\n# TYPE b gauge\nb 1\n# HELP a a\n# TYPE a gauge\na 2\n")
    }

    @Test("metric and label names follow the data model")
    func names() {
        #expect(MetricName.isValid("splice_jobs"))
        #expect(MetricName.isValid("a:b_c9"))
        #expect(!MetricName.isValid("9lives"))
        #expect(!MetricName.isValid("has-dash"))
        #expect(!MetricName.isValid(""))
        #expect(MetricName.isValidLabel("state"))
        #expect(!MetricName.isValidLabel("__name__"))
        #expect(!MetricName.isValidLabel("a:b"))
    }

    @Test("the registry renders sources and collectors in registration order")
    func registry() async {
        let registry = MetricsRegistry()
        let gauge = Gauge("first", help: "f")
        gauge.set(1.5)
        registry.register(gauge)
        registry.register { [MetricFamily.gauge("second", help: "s", value: 2)] }
        registry.register(Counter("third_total", help: "t"))
        #expect(await registry.exposition() == """
            # HELP first f
            # TYPE first gauge
            first 1.5
            # HELP second s
            # TYPE second gauge
            second 2
            # HELP third_total t
            # TYPE third_total counter
            third_total 0

            """)
    }
}

@Suite("process_* from /proc")
struct ProcessMetricsTests {
    @Test("/proc/self/stat is split after the last parenthesis (names may hold spaces and parentheses)")
    func stat() {
        let line = "4242 (splice (x) y) S 1 4242 4242 0 -1 4194560 2000 0 0 0 150 25 0 0 20 0 9 0 "
            + "123456 987654321 2500 18446744073709551615 1 1 0 0 0 0 0 4096 0 0 0 0 17 1 0 0 0 0 0\n"
        #expect(ProcessMetrics.parseStat(line) == ProcessMetrics.Stat(
            userTicks: 150, systemTicks: 25, startTicks: 123456, virtualBytes: 987654321, residentPages: 2500))
        #expect(ProcessMetrics.parseStat("garbage") == nil)
    }

    @Test("Max open files is the soft limit")
    func limits() {
        let text = """
            Limit                     Soft Limit           Hard Limit           Units
            Max open files            1024                 524288               files
            """
        #expect(ProcessMetrics.parseMaxOpenFiles(text) == 1024)
    }

    @Test("this process's figures are there and plausible")
    func figures() {
        let families = Dictionary(uniqueKeysWithValues: ProcessMetrics.collect().map { ($0.name, $0) })
        let value = { (name: String) in families[name]?.samples.first?.value ?? -1 }
        #expect(Set(families.keys) == [
            "process_cpu_seconds_total", "process_resident_memory_bytes", "process_virtual_memory_bytes",
            "process_start_time_seconds", "process_open_fds", "process_max_fds",
        ])
        #expect(families["process_cpu_seconds_total"]?.type == .counter)
        #expect(value("process_resident_memory_bytes") > 1_000_000)
        #expect(value("process_virtual_memory_bytes") >= value("process_resident_memory_bytes"))
        #expect(value("process_open_fds") >= 3)
        #expect(value("process_max_fds") >= value("process_open_fds"))
        let now = Date().timeIntervalSince1970
        #expect(value("process_start_time_seconds") <= now + 1)
        #expect(value("process_start_time_seconds") > now - 86_400)
    }
}
