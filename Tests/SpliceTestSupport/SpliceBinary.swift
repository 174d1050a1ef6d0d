public import Foundation

/// The `splice` executable the process tests run: the one built beside this test bundle
/// (`swift build --build-tests` builds both), else `.build/debug/splice` in the package.
public enum SpliceBinary {
    /// The best candidate, whether or not it exists (``executable()`` checks).
    public static var url: URL {
        candidates.first { FileManager.default.isExecutableFile(atPath: $0.path) } ?? candidates[0]
    }

    /// The executable; throws saying how to build it when there is none.
    public static func executable() throws -> URL {
        guard let found = candidates.first(where: { FileManager.default.isExecutableFile(atPath: $0.path) }) else {
            throw TestFailure(
                "no splice executable in \(candidates.map(\.path)); build it with `swift build --build-tests`")
        }
        return found
    }

    private static var candidates: [URL] {
        let bundle = URL(fileURLWithPath: CommandLine.arguments[0])
        return [
            bundle.deletingLastPathComponent(),
            bundle.resolvingSymlinksInPath().deletingLastPathComponent(),
            Fixtures.packageRoot.appendingPathComponent(".build/debug"),
        ].map { $0.appendingPathComponent("splice") }
    }
}
