public import Foundation

/// A mount namespace of its own for a child process (`unshare -m`, root only) in which every folder
/// the tests made — ``Fixtures/scratch`` (sources, spools, outputs, logs) and the test PostgreSQL
/// servers' folders — lies under an empty tmpfs. Nothing else is hidden: the `splice` binary, the
/// toolchain and the shared clips stay where they are, wherever the checkout lives (under /tmp, in a
/// path with a space, with `.build` elsewhere).
///
/// The proof is checked, not assumed: before the child's program starts, the wrapper looks for each
/// path in `mustNotSee` and refuses to start it (exit 97, a line on standard error) when one is
/// still visible, so a test that relies on the isolation cannot pass when it leaks.
public struct MountIsolation: Sendable {
    /// Folders covered by an empty tmpfs inside the namespace.
    public var hidden: [String]
    /// Paths that must not exist inside the namespace once ``hidden`` is covered.
    public var mustNotSee: [String]

    /// Hides every folder the tests made; `mustNotSee` names what the child must prove it cannot read.
    public static func testFiles(mustNotSee: [String]) -> MountIsolation {
        MountIsolation(hidden: [Fixtures.scratch.path] + TestPostgres.serverDirectories, mustNotSee: mustNotSee)
    }

    /// The exit status of a child whose isolation leaked.
    public static let leakStatus: Int32 = 97

    /// The command that runs a program inside the namespace: append the program and its arguments.
    public var wrapper: [String] {
        let mounts = hidden.map { "mount -t tmpfs -o size=16m splice-hidden \(Self.quoted($0))" }
        let checks = mustNotSee.map {
            "if [ -e \(Self.quoted($0)) ]; then echo \"isolation leaked: \"\(Self.quoted($0))\" is visible\" >&2; "
                + "exit \(Self.leakStatus); fi"
        }
        let script = (["set -e"] + mounts + checks + ["exec \"$0\" \"$@\""]).joined(separator: "\n")
        return ["/usr/bin/unshare", "-m", "/bin/sh", "-c", script]
    }

    /// `path` quoted for `sh` (single quotes; a quote inside becomes `'\''`).
    static func quoted(_ path: String) -> String {
        "'" + path.replacingOccurrences(of: "'", with: "'\\''") + "'"
    }
}
