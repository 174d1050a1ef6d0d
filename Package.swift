// swift-tools-version:6.0
// Splice: a segment-parallel video transcoding cluster.
//
// Layout (see README.md, "Modules"):
//   C system libraries (FFmpeg, libzmq, libpq, libcurl) are wrapped by thin system-library targets; one
//   C…Shims target per library turns the macros Swift cannot import into functions, and
//   CSpliceSystem holds the Linux calls tied to no library. Each Splice* module owns one concern
//   and links only its own C library: SpliceMedia FFmpeg, SpliceWire libzmq, SpliceStore libpq,
//   SpliceObjectStore libcurl.
//   SpliceConcurrency holds the primitives they share (wake signals, latches, deadlines…).
//   `splice` is the command-line tool and `splice-bench` prints benchmark figures.
import PackageDescription

let strict: [SwiftSetting] = [
    .enableUpcomingFeature("ExistentialAny"),
    .enableUpcomingFeature("InternalImportsByDefault"),
]

let package = Package(
    name: "Splice",
    products: [
        .executable(name: "splice", targets: ["splice"]),
        .executable(name: "splice-bench", targets: ["splice-bench"]),
        .library(name: "SpliceCore", targets: ["SpliceCore"]),
        .library(name: "SpliceJSON", targets: ["SpliceJSON"]),
        .library(name: "SpliceMedia", targets: ["SpliceMedia"]),
        .library(name: "SpliceWire", targets: ["SpliceWire"]),
        .library(name: "SpliceStore", targets: ["SpliceStore"]),
        .library(name: "SpliceDaemon", targets: ["SpliceDaemon"]),
        .library(name: "SpliceCoordinator", targets: ["SpliceCoordinator"]),
        .library(name: "SpliceWorker", targets: ["SpliceWorker"]),
        .library(name: "SpliceClient", targets: ["SpliceClient"]),
        .library(name: "SpliceMetrics", targets: ["SpliceMetrics"]),
        .library(name: "SpliceHTTP", targets: ["SpliceHTTP"]),
        .library(name: "SpliceObjectStore", targets: ["SpliceObjectStore"]),
        .library(name: "SpliceObjectMedia", targets: ["SpliceObjectMedia"]),
        .library(name: "SpliceFarmModel", targets: ["SpliceFarmModel"]),
    ],
    targets: [
        // MARK: - C libraries from Debian packages
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev",
                              "libswresample-dev", "libavfilter-dev"])]
        ),
        .systemLibrary(name: "CZeroMQ", providers: [.apt(["libzmq3-dev"])]),
        // libzmq's and libpq's pkg-config files add flags SwiftPM rejects (-isystem for Kerberos); their
        // headers sit at fixed Debian paths (/usr/include/zmq.h, /usr/include/postgresql/libpq-fe.h).
        .systemLibrary(name: "CLibPQ", providers: [.apt(["libpq-dev"])]),
        // libcurl with OpenSSL: HTTP(S) for object storage, requests signed by its CURLOPT_AWS_SIGV4.
        .systemLibrary(name: "CCurl", pkgConfig: "libcurl", providers: [.apt(["libcurl4-openssl-dev"])]),
        // OpenSSL's libcrypto: SHA-256 of segment files, transfers and migrations, and HMAC-SHA256
        // (webhook signatures, presigned URLs) — SHA-NI or AVX2 where the CPU has them.
        .systemLibrary(name: "CLibCrypto", pkgConfig: "libcrypto", providers: [.apt(["libssl-dev"])]),

        // MARK: - C shims: one per library, each depending on that library only
        .target(name: "CFFmpegShims", dependencies: ["CFFmpeg"]),
        .target(name: "CZeroMQShims", dependencies: ["CZeroMQ"]),
        .target(name: "CLibPQShims", dependencies: ["CLibPQ"]),
        .target(name: "CCurlShims", dependencies: ["CCurl"]),
        // Linux calls glibc hides behind _GNU_SOURCE (posix_spawn actions, renameat2, accept4, prctl,
        // sched_getaffinity); no library.
        .target(name: "CSpliceSystem"),

        // MARK: - Splice modules
        // Wake signals, latches, in-flight counts, teardown, deadlines and Duration → milliseconds:
        // one copy each, for every module below. Needs nothing but the standard library.
        .target(name: "SpliceConcurrency", swiftSettings: strict),
        // Key=value logging on stderr, shared by the `splice` tool and the cluster services.
        .target(name: "SpliceLog", dependencies: ["SpliceConcurrency"], swiftSettings: strict),
        // The vocabulary every module shares along a job's path: ids, the segment digest, the error shape.
        .target(name: "SpliceCore", dependencies: ["CLibCrypto"], swiftSettings: strict),
        // JSON typed in and out, fast enough for the protocol's envelopes (docs/protocol.md).
        .target(name: "SpliceJSON", dependencies: ["SpliceCore"], swiftSettings: strict),
        // A discrete-event model of a job on a farm (W workers × S slots × C cores) fed by measured
        // costs: wall, critical path, utilisation, where the coordinator binds. Standard library only.
        .target(name: "SpliceFarmModel", swiftSettings: strict),
        // Counters, gauges, histograms and the process's own figures in Prometheus's text format.
        .target(name: "SpliceMetrics", swiftSettings: strict),
        // A small strict read-only HTTP/1.1 server on a thread of its own (metrics, health, status page).
        .target(name: "SpliceHTTP", dependencies: ["SpliceConcurrency", "CSpliceSystem"], swiftSettings: strict),
        .target(
            name: "SpliceMedia", dependencies: ["SpliceCore", "CFFmpeg", "CFFmpegShims", "CSpliceSystem"],
            swiftSettings: strict
        ),
        .target(
            name: "SpliceWire", dependencies: ["SpliceCore", "SpliceJSON", "CZeroMQ", "CZeroMQShims", "SpliceConcurrency"],
            swiftSettings: strict
        ),
        .target(
            name: "SpliceStore",
            dependencies: ["SpliceCore", "CLibPQ", "CLibPQShims", "CSpliceSystem", "SpliceConcurrency"],
            swiftSettings: strict,
            plugins: ["EmbedMigrations"]
        ),
        // S3 and S3-compatible object storage over libcurl: credentials the AWS way, signed requests,
        // ranged reads, multipart writes that appear only when complete, presigned URLs.
        .target(
            name: "SpliceObjectStore",
            dependencies: ["SpliceCore", "SpliceConcurrency", "SpliceLog", "CCurl", "CCurlShims"],
            swiftSettings: strict
        ),
        // Media in object storage: SpliceMedia's storage seam (byte sources and sinks, uploads)
        // implemented over SpliceObjectStore, so that neither of the two depends on the other.
        .target(
            name: "SpliceObjectMedia",
            dependencies: ["SpliceCore", "SpliceMedia", "SpliceObjectStore", "SpliceLog"],
            swiftSettings: strict
        ),
        // What the two daemons share: the service group and its lifecycle, the operators' HTTP
        // endpoint, the data endpoint's transfers (both sides) and the work order an ASSIGN carries.
        .target(
            name: "SpliceDaemon",
            dependencies: [
                "SpliceCore", "SpliceJSON", "SpliceMedia", "SpliceWire", "SpliceLog", "SpliceConcurrency", "SpliceMetrics",
                "SpliceHTTP", "CSpliceSystem",
            ],
            swiftSettings: strict
        ),
        // `splice coordinator`: the protocol state machine and its shell, planning and stitching
        // tasks, the client API over ZeroMQ and over HTTP, webhooks (libcurl), the operators' view;
        // the only daemon that links libpq.
        .target(
            name: "SpliceCoordinator",
            dependencies: [
                "SpliceCore", "SpliceJSON", "SpliceMedia", "SpliceWire", "SpliceStore", "SpliceLog", "SpliceConcurrency",
                "SpliceMetrics", "SpliceHTTP", "SpliceDaemon", "CSpliceSystem", "CCurl", "CCurlShims",
            ],
            swiftSettings: strict
        ),
        // `splice worker`: its state machine and daemon, the segment encode, its side of transfers.
        .target(
            name: "SpliceWorker",
            dependencies: [
                "SpliceCore", "SpliceJSON", "SpliceMedia", "SpliceWire", "SpliceLog", "SpliceConcurrency", "SpliceMetrics",
                "SpliceHTTP", "SpliceDaemon", "CSpliceSystem",
            ],
            swiftSettings: strict
        ),
        // The client API over ZeroMQ that the CLI and the tests use: no FFmpeg, no libpq.
        .target(
            name: "SpliceClient",
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceWire", "SpliceConcurrency"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "splice",
            dependencies: [
                "SpliceCore", "SpliceJSON", "SpliceMedia", "SpliceWire", "SpliceStore", "SpliceCoordinator", "SpliceWorker",
                "SpliceClient", "SpliceDaemon", "SpliceLog", "SpliceConcurrency", "SpliceHTTP", "CSpliceSystem",
                "SpliceObjectStore", "SpliceObjectMedia",
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "splice-bench",
            dependencies: [
                "SpliceCore", "SpliceJSON", "SpliceMedia", "SpliceWire", "SpliceStore", "SpliceCoordinator", "SpliceClient",
                "SpliceDaemon", "SpliceLog", "SpliceConcurrency", "SpliceObjectStore", "SpliceHTTP", "SpliceFarmModel",
                "CZeroMQ", "CFFmpeg", "CFFmpegShims",
            ],
            swiftSettings: strict
        ),

        // MARK: - Build tools
        // Migrations/*.sql are the only copy of the schema; this plugin embeds them into SpliceStore at
        // build time so a deployed `splice` binary carries them (see docs/store.md).
        .executableTarget(name: "EmbedMigrationsTool", path: "Plugins/EmbedMigrationsTool"),
        .plugin(
            name: "EmbedMigrations",
            capability: .buildTool(),
            dependencies: ["EmbedMigrationsTool"],
            path: "Plugins/EmbedMigrations"
        ),

        // MARK: - Tests
        // Unit tests need nothing running; integration targets start Postgres, ZeroMQ endpoints and
        // run ffmpeg/ffprobe as the independent oracle.
        .target(
            name: "SpliceTestSupport",
            dependencies: ["SpliceCore", "SpliceMedia", "SpliceStore"],
            path: "Tests/SpliceTestSupport",
            swiftSettings: strict
        ),
        .testTarget(name: "SpliceCoreTests", dependencies: ["SpliceCore"], swiftSettings: strict),
        .testTarget(name: "SpliceJSONTests", dependencies: ["SpliceCore", "SpliceJSON"], swiftSettings: strict),
        .testTarget(name: "SpliceMediaTests", dependencies: ["SpliceMedia"], swiftSettings: strict),
        .testTarget(name: "SpliceWireTests", dependencies: ["SpliceCore", "SpliceJSON", "SpliceWire"], swiftSettings: strict),
        .testTarget(name: "SpliceStoreTests", dependencies: ["SpliceStore"], swiftSettings: strict),
        .testTarget(
            name: "SpliceCoordinatorTests",
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceCoordinator", "SpliceDaemon", "SpliceWire", "SpliceStore",
                           "SpliceConcurrency", "SpliceTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SpliceWorkerTests",
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceWorker", "SpliceDaemon", "SpliceWire", "SpliceConcurrency",
                           "SpliceTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SpliceDaemonTests",
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceDaemon", "SpliceWire", "SpliceMedia", "SpliceConcurrency",
                           "SpliceTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(name: "SpliceLogTests", dependencies: ["SpliceLog"], swiftSettings: strict),
        // Locations, AWS config files, endpoints and signing arithmetic: nothing running.
        .testTarget(name: "SpliceObjectStoreTests", dependencies: ["SpliceCore", "SpliceObjectStore"], swiftSettings: strict),
        .testTarget(name: "SpliceConcurrencyTests", dependencies: ["SpliceConcurrency"], swiftSettings: strict),
        // The farm model against schedules with closed-form answers: nothing running.
        .testTarget(name: "SpliceFarmModelTests", dependencies: ["SpliceFarmModel"], swiftSettings: strict),
        .testTarget(name: "SpliceMetricsTests", dependencies: ["SpliceMetrics"], swiftSettings: strict),
        // The parser alone, and the server on loopback sockets (nothing else needs to run).
        .testTarget(name: "SpliceHTTPTests", dependencies: ["SpliceHTTP", "SpliceConcurrency"], swiftSettings: strict),
        .testTarget(
            name: "spliceTests",
            dependencies: [
                "splice", "SpliceCore", "SpliceJSON", "SpliceLog", "SpliceMedia", "SpliceWire", "SpliceCoordinator",
                "SpliceWorker", "SpliceClient", "SpliceDaemon",
                "SpliceConcurrency", "SpliceTestSupport",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SpliceMediaIntegrationTests",
            dependencies: ["SpliceCore", "SpliceMedia", "SpliceTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SpliceWireIntegrationTests",
            dependencies: [
                "SpliceCore", "SpliceJSON", "SpliceWire", "SpliceConcurrency", "SpliceTestSupport", "CZeroMQ", "CZeroMQShims",
            ],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SpliceStoreIntegrationTests",
            dependencies: ["SpliceCore", "SpliceStore", "SpliceTestSupport"],
            swiftSettings: strict
        ),
        // Against moto's S3 in server mode on loopback (started by the tests, auth enforced), with
        // botocore's signer as the independent judge of every signature (Deploy/s3-emulator.py).
        .testTarget(
            name: "SpliceObjectStoreIntegrationTests",
            dependencies: ["SpliceCore", "SpliceObjectStore", "SpliceConcurrency", "SpliceTestSupport"],
            swiftSettings: strict
        ),
        // `s3://` inputs and outputs through the real `splice` binary (export, transcode, packages,
        // a cluster whose workers hold no credentials) against moto, with ffmpeg and the bucket as judges.
        .testTarget(
            name: "SpliceObjectMediaIntegrationTests",
            dependencies: ["SpliceCore", "SpliceStore", "SpliceObjectStore", "SpliceConcurrency", "SpliceTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SpliceClusterIntegrationTests",
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceCoordinator", "SpliceWorker", "SpliceClient", "SpliceDaemon",
                           "SpliceWire", "SpliceStore", "SpliceHTTP", "SpliceConcurrency", "SpliceTestSupport"],
            swiftSettings: strict
        ),
        // The operators' view of real `splice` processes: metrics against a real job (promtool as
        // judge), health checks, the status page in headless Chromium, a database outage; and the
        // deployment files (Kubernetes, KEDA, Prometheus, Grafana) checked without a cluster.
        .testTarget(
            name: "SpliceOperationsTests",
            dependencies: ["SpliceCore", "SpliceCoordinator", "SpliceWorker", "SpliceClient", "SpliceDaemon", "SpliceStore",
                           "SpliceHTTP", "SpliceConcurrency", "SpliceTestSupport"],
            // KEDA's CRD schemas, read by Deploy/validate-manifests.py.
            exclude: ["KEDA"],
            swiftSettings: strict
        ),
        // The HTTP API of real `splice` processes driven from Python (`requests`), Schemathesis against
        // its OpenAPI document, HTTPS through Deploy/nginx, webhooks under faults. docs/api.md.
        .testTarget(
            name: "SpliceAPITests",
            dependencies: ["SpliceCore", "SpliceCoordinator", "SpliceStore", "SpliceHTTP", "SpliceConcurrency",
                           "SpliceTestSupport"],
            exclude: ["Python"],
            swiftSettings: strict
        ),
        // The real `splice` processes under faults (kill -9, SIGSTOP, database restarts, a full spool,
        // garbage on the ports, bad jobs), counted Jepsen-style from the store; docs/reliability.md.
        .testTarget(
            name: "SpliceFaultTests",
            dependencies: ["SpliceCore", "SpliceCoordinator", "SpliceClient", "SpliceDaemon", "SpliceStore", "SpliceWire",
                           "SpliceConcurrency", "SpliceTestSupport"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
