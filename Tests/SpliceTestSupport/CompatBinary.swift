public import Foundation

/// The `splice` of the previous worker-protocol release, which `Deploy/build-compat.sh` builds
/// once from the commit in `Deploy/compat-commit` into `~/.cache/splice-compat/<commit>/splice`
/// (`SPLICE_COMPAT_CACHE` moves the cache): the upgrade tests run it beside today's build.
public enum CompatBinary {
    /// The commit the compat build comes from; nil when `Deploy/compat-commit` is missing.
    public static var commit: String? {
        let file = Fixtures.packageRoot.appendingPathComponent("Deploy/compat-commit")
        guard let text = try? String(contentsOf: file, encoding: .utf8) else { return nil }
        let commit = text.trimmingCharacters(in: .whitespacesAndNewlines)
        return commit.isEmpty ? nil : commit
    }

    /// Where the compat build is (or would be).
    public static var path: String? {
        guard let commit else { return nil }
        let environment = ProcessInfo.processInfo.environment
        let cache = environment["SPLICE_COMPAT_CACHE"]
            ?? (environment["HOME"] ?? NSHomeDirectory()) + "/.cache/splice-compat"
        return cache + "/" + commit + "/splice"
    }

    /// The built binary; nil when it is not there (the tests that need it are skipped).
    public static var executable: URL? {
        guard let path, FileManager.default.isExecutableFile(atPath: path) else { return nil }
        return URL(fileURLWithPath: path)
    }

    /// Why the upgrade tests are skipped, when they are.
    public static var skipReason: String {
        "the previous release's splice is not built (\(path ?? "Deploy/compat-commit missing")): "
            + "run Deploy/build-compat.sh (Deploy/test.sh --slow does)"
    }
}
