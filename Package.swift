// swift-tools-version:6.0
// Splice: a segment-parallel video transcoding cluster.
//
// Layout (see README.md / ../shared/STYLE.md):
//   C system libraries (FFmpeg, libzmq, libpq) are wrapped by thin system-library targets;
//   CSpliceShims turns the macros Swift cannot import into functions; each Splice* module owns
//   one concern; `splice` is the command-line tool and `splice-bench` prints benchmark figures.
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
        .library(name: "SpliceCluster", targets: ["SpliceCluster"]),
    ],
    targets: [
        // MARK: - C libraries from Debian packages
        .systemLibrary(
            name: "CFFmpeg",
            pkgConfig: "libavformat",
            providers: [.apt(["libavformat-dev", "libavcodec-dev", "libavutil-dev", "libswscale-dev",
                              "libswresample-dev"])]
        ),
        .systemLibrary(name: "CZeroMQ", providers: [.apt(["libzmq3-dev"])]),
        // libzmq's and libpq's pkg-config files add flags SwiftPM rejects (-isystem for Kerberos); their
        // headers sit at fixed Debian paths (/usr/include/zmq.h, /usr/include/postgresql/libpq-fe.h).
        .systemLibrary(name: "CLibPQ", providers: [.apt(["libpq-dev"])]),
        .target(name: "CSpliceShims", dependencies: ["CFFmpeg", "CZeroMQ", "CLibPQ"]),

        // MARK: - Splice modules
        // Key=value logging on stderr, shared by the `splice` tool and the cluster services.
        .target(name: "SpliceLog", swiftSettings: strict),
        // The vocabulary every module shares along a job's path: ids, the segment digest, the error shape.
        .target(name: "SpliceCore", swiftSettings: strict),
        // JSON typed in and out, fast enough for the protocol's envelopes (docs/protocol.md).
        .target(name: "SpliceJSON", dependencies: ["SpliceCore"], swiftSettings: strict),
        .target(name: "SpliceMedia", dependencies: ["SpliceCore", "CFFmpeg", "CSpliceShims"], swiftSettings: strict),
        .target(
            name: "SpliceWire", dependencies: ["SpliceCore", "SpliceJSON", "CZeroMQ", "CSpliceShims"], swiftSettings: strict
        ),
        .target(
            name: "SpliceStore",
            dependencies: ["SpliceCore", "CLibPQ", "CSpliceShims"],
            swiftSettings: strict,
            plugins: ["EmbedMigrations"]
        ),
        .target(
            name: "SpliceCluster",
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceMedia", "SpliceWire", "SpliceStore", "SpliceLog"],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "splice",
            dependencies: [
                "SpliceCore", "SpliceJSON", "SpliceMedia", "SpliceWire", "SpliceStore", "SpliceCluster", "SpliceLog",
                "CSpliceShims",
            ],
            swiftSettings: strict
        ),
        .executableTarget(
            name: "splice-bench",
            dependencies: [
                "SpliceCore", "SpliceJSON", "SpliceMedia", "SpliceWire", "SpliceStore", "SpliceCluster", "SpliceLog",
                "CZeroMQ",
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
            name: "SpliceClusterTests",
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceCluster", "SpliceStore", "SpliceTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(name: "SpliceLogTests", dependencies: ["SpliceLog"], swiftSettings: strict),
        .testTarget(
            name: "spliceTests",
            dependencies: [
                "splice", "SpliceCore", "SpliceJSON", "SpliceLog", "SpliceMedia", "SpliceWire", "SpliceCluster",
                "SpliceTestSupport",
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
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceWire", "SpliceTestSupport", "CZeroMQ", "CSpliceShims"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SpliceStoreIntegrationTests",
            dependencies: ["SpliceCore", "SpliceStore", "SpliceTestSupport"],
            swiftSettings: strict
        ),
        .testTarget(
            name: "SpliceClusterIntegrationTests",
            dependencies: ["SpliceCore", "SpliceJSON", "SpliceCluster", "SpliceWire", "SpliceTestSupport"],
            swiftSettings: strict
        ),
    ],
    swiftLanguageModes: [.v6]
)
