public import Foundation

/// Debian's `chromium`, headless, as the real browser that looks at the status page.
public enum Browser {
    public struct Screenshot: Sendable {
        public var path: String
        public var bytes: Int
    }

    public struct DOM: Sendable {
        /// The document as serialised after its scripts ran.
        public var html: String
        /// What the browser logged (console messages, CSP violations).
        public var console: String
    }

    /// Where screenshots are kept after the test process ends: `test-artifacts` beside the test
    /// bundle (`.build/debug/test-artifacts`, or under `--scratch-path`), never in the checkout,
    /// which may be read-only.
    public static let artifacts = URL(fileURLWithPath: CommandLine.arguments[0]).deletingLastPathComponent()
        .appendingPathComponent("test-artifacts")

    /// A 1280×900 PNG of `url` after its scripts had 4 s (virtual time) to run.
    public static func screenshot(_ url: String, name: String) async throws -> Screenshot {
        try FileManager.default.createDirectory(at: artifacts, withIntermediateDirectories: true)
        let path = artifacts.appendingPathComponent(name).path
        try? FileManager.default.removeItem(atPath: path)
        let result = try await run(["--screenshot=\(path)", "--window-size=1280,900", url])
        let bytes = (try? FileManager.default.attributesOfItem(atPath: path)[.size] as? Int) ?? 0
        guard bytes > 0 else { throw TestFailure("chromium wrote no screenshot: \(result.stderr.suffix(2000))") }
        return Screenshot(path: path, bytes: bytes)
    }

    /// The DOM of `url` after its scripts had 4 s (virtual time) to run.
    public static func dom(_ url: String) async throws -> DOM {
        let result = try await run(["--dump-dom", url])
        return DOM(html: result.text, console: result.stderr)
    }

    private static func run(_ arguments: [String]) async throws -> ExternalTool.Output {
        let profile = Fixtures.temporaryDirectory("chromium")
        // As root Chromium needs --no-sandbox; the page is our own.
        let result = try await ExternalTool.run("chromium", [
            "--headless", "--no-sandbox", "--disable-gpu", "--disable-dev-shm-usage", "--hide-scrollbars",
            "--no-first-run", "--user-data-dir=\(profile.path)", "--virtual-time-budget=4000",
            "--enable-logging=stderr", "--v=0",
        ] + arguments)
        guard result.status == 0 else {
            throw TestFailure("chromium \(arguments.first ?? "") exited \(result.status): \(result.stderr.suffix(2000))")
        }
        return result
    }
}
