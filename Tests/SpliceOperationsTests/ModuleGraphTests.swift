import Foundation
import SpliceJSON
import SpliceTestSupport
import Testing

/// The module map in README.md, checked against what SwiftPM itself says of the package
/// (`swift package describe --type json`): the client links neither FFmpeg nor libpq, the worker
/// no libpq, and nothing depends on what it should not.
@Suite("Module graph", .timeLimit(.minutes(2)))
struct ModuleGraphTests {
    private struct Description: Decodable {
        struct Target: Decodable {
            var name: String
            var targetDependencies: [String]?

            enum CodingKeys: String, CodingKey {
                case name
                case targetDependencies = "target_dependencies"
            }
        }

        var targets: [Target]
    }

    /// Each target's direct dependencies, as SwiftPM resolves the manifest.
    private static func graph() async throws -> [String: [String]] {
        let scratch = Fixtures.temporaryDirectory("describe")
        // A scratch path of its own: the test's own `swift test` holds the package's .build lock.
        let result = try await ExternalTool.run("swift", [
            "package", "--package-path", Fixtures.packageRoot.path, "--scratch-path", scratch.path,
            "describe", "--type", "json",
        ])
        guard result.status == 0 else { throw TestFailure("swift package describe failed: \(result.stderr)") }
        let description = try JSON.decode(Description.self, from: Array(result.stdout))
        return Dictionary(uniqueKeysWithValues: description.targets.map { ($0.name, $0.targetDependencies ?? []) })
    }

    /// Every target `name` depends on, directly or not.
    private static func closure(of name: String, in graph: [String: [String]]) -> Set<String> {
        var seen: Set<String> = []
        var pending = graph[name] ?? []
        while let next = pending.popLast() {
            if seen.insert(next).inserted { pending += graph[next] ?? [] }
        }
        return seen
    }

    @Test("the client links neither FFmpeg, libpq nor libcurl; media and object storage meet only in their glue; the worker no libpq")
    func closures() async throws {
        let graph = try await Self.graph()
        for program in ["SpliceClient", "SpliceWorker", "SpliceCoordinator", "SpliceDaemon"] {
            #expect(graph[program] != nil, "no target \(program) in the package")
        }
        let client = Self.closure(of: "SpliceClient", in: graph)
        #expect(client.isDisjoint(with: ["SpliceMedia", "SpliceStore", "CFFmpeg", "CFFmpegShims", "CLibPQ", "CLibPQShims",
                                         "SpliceObjectStore", "SpliceObjectMedia", "CCurl", "CCurlShims"]),
                "SpliceClient depends on \(client.sorted())")
        // FFmpeg and libcurl meet only in the glue module: the media engine knows storage by its
        // own protocol, the object store knows nothing of media.
        let media = Self.closure(of: "SpliceMedia", in: graph)
        #expect(media.isDisjoint(with: ["SpliceObjectStore", "SpliceObjectMedia", "CCurl", "CCurlShims"]),
                "SpliceMedia depends on \(media.sorted())")
        let objects = Self.closure(of: "SpliceObjectStore", in: graph)
        #expect(objects.isDisjoint(with: ["SpliceMedia", "CFFmpeg", "CFFmpegShims"]), "SpliceObjectStore depends on \(objects.sorted())")
        #expect(Self.closure(of: "SpliceObjectMedia", in: graph).isSuperset(of: ["SpliceMedia", "SpliceObjectStore"]))
        // Workers never open an object: they get excerpts, and no credentials.
        let worker = Self.closure(of: "SpliceWorker", in: graph)
        #expect(worker.isDisjoint(with: ["SpliceObjectStore", "SpliceObjectMedia", "CCurl"]),
                "SpliceWorker depends on \(worker.sorted())")
        #expect(worker.isDisjoint(with: ["SpliceStore", "CLibPQ", "CLibPQShims", "SpliceCoordinator", "SpliceClient"]),
                "SpliceWorker depends on \(worker.sorted())")
        let daemon = Self.closure(of: "SpliceDaemon", in: graph)
        #expect(daemon.isDisjoint(with: ["SpliceStore", "CLibPQ", "SpliceCoordinator", "SpliceWorker", "SpliceClient"]),
                "SpliceDaemon depends on \(daemon.sorted())")
        #expect(!Self.closure(of: "SpliceCoordinator", in: graph).contains("SpliceWorker"))
        // The libraries stay below the programs: no module but the tools depends on a program module.
        for (target, dependencies) in graph where target.hasPrefix("Splice") && !target.hasSuffix("Tests")
            && target != "SpliceTestSupport" {
            let programs: Set = ["SpliceCoordinator", "SpliceWorker", "SpliceClient"]
            #expect(programs.isDisjoint(with: dependencies), "\(target) depends on a program module: \(dependencies)")
        }
    }

    @Test("the coordinator's state machine imports no store module")
    func stateMachineWithoutStore() throws {
        let folder = Fixtures.packageRoot.appendingPathComponent("Sources/SpliceCoordinator/StateMachine")
        let files = try #require(FileManager.default.enumerator(atPath: folder.path)?.allObjects as? [String])
        let swift = files.filter { $0.hasSuffix(".swift") }
        #expect(swift.count >= 5)
        for file in swift {
            let text = try String(contentsOf: folder.appendingPathComponent(file), encoding: .utf8)
            #expect(!text.contains("import SpliceStore") && !text.contains("import CLibPQ"), "\(file) imports the store")
        }
    }
}
