import CSpliceSystem
import Foundation
#if canImport(Glibc)
import Glibc
#endif

/// Finds the PostgreSQL server programs (`initdb`, `pg_ctl`) on this machine.
///
/// Looks, in order, at an explicit directory, `pg_config --bindir`, every directory on `PATH`
/// (following symlinks such as /usr/local/bin/initdb → /usr/lib/postgresql/15/bin/initdb), and
/// Debian's /usr/lib/postgresql/<version>/bin, newest version first. The first directory holding
/// both programs wins.
enum PostgresBinaries {
    static let required = ["initdb", "pg_ctl"]

    static func locate(explicit: String?) throws(StoreError) -> String {
        var candidates: [String] = []
        if let explicit { candidates.append(explicit) }
        if let bindir = pgConfigBindir() { candidates.append(bindir) }
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/local/bin:/usr/bin:/bin"
        for directory in path.split(separator: ":").map(String.init) {
            let initdb = URL(fileURLWithPath: directory).appending(path: "initdb")
            if FileManager.default.isExecutableFile(atPath: initdb.path) {
                candidates.append(initdb.resolvingSymlinksInPath().deletingLastPathComponent().path)
                candidates.append(directory)
            }
        }
        candidates += debianDirectories()
        candidates.append("/usr/local/pgsql/bin")
        for directory in candidates where hasAllPrograms(directory) {
            return directory
        }
        throw StoreError(.embeddedServer, "cannot find PostgreSQL's initdb and pg_ctl (looked in pg_config --bindir, PATH and "
                             + "/usr/lib/postgresql/*/bin). Install the server (Debian: apt-get install postgresql).", isRetryable: false)
    }

    private static func hasAllPrograms(_ directory: String) -> Bool {
        required.allSatisfy { FileManager.default.isExecutableFile(atPath: directory + "/" + $0) }
    }

    /// /usr/lib/postgresql/*/bin, highest major version first.
    private static func debianDirectories() -> [String] {
        let root = "/usr/lib/postgresql"
        let versions = (try? FileManager.default.contentsOfDirectory(atPath: root)) ?? []
        return versions.compactMap { name in Int(name).map { ($0, "\(root)/\(name)/bin") } }
            .sorted { $0.0 > $1.0 }
            .map(\.1)
    }

    private static func pgConfigBindir() -> String? {
        let path = ProcessInfo.processInfo.environment["PATH"] ?? "/usr/bin:/bin"
        guard let pgConfig = path.split(separator: ":").map({ $0 + "/pg_config" })
            .first(where: { FileManager.default.isExecutableFile(atPath: $0) })
        else { return nil }
        guard let result = try? ToolRunner.run(pgConfig, ["--bindir"], asUser: nil, in: nil), result.status == 0 else {
            return nil
        }
        let bindir = result.output.trimmingCharacters(in: .whitespacesAndNewlines)
        return bindir.isEmpty ? nil : bindir
    }
}

/// Runs a command-line program to completion, optionally as another user (when we are root).
///
/// Spawns with `posix_spawn` and waits with `waitpid` rather than Foundation's `Process`: `pg_ctl
/// start` leaves a daemon behind, and `Process` learns of the child's exit through a descriptor the
/// daemon would inherit, so it would wait for the server to stop. Here the child gets only stdin
/// (/dev/null) and stdout/stderr (a temporary file); every other descriptor is closed.
enum ToolRunner {
    struct Result {
        var status: Int32
        var output: String
    }

    static func run(_ program: String, _ arguments: [String], asUser user: String?, in directory: String?) throws
        -> Result {
        var argv = [program] + arguments
        if let user {
            let (launcher, prefix) = try userSwitcher(for: user)
            argv = [launcher] + prefix + argv
        }
        let outputPath = FileManager.default.temporaryDirectory.appending(path: "splice-tool-\(UUID().uuidString).out").path
        defer { unlink(outputPath) }

        var actions = posix_spawn_file_actions_t()
        posix_spawn_file_actions_init(&actions)
        defer { posix_spawn_file_actions_destroy(&actions) }
        posix_spawn_file_actions_addopen(&actions, 0, "/dev/null", O_RDONLY, 0)
        posix_spawn_file_actions_addopen(&actions, 1, outputPath, O_WRONLY | O_CREAT | O_TRUNC, 0o600)
        posix_spawn_file_actions_adddup2(&actions, 1, 2)
        splice_spawn_actions_closefrom(&actions, 3)
        if let directory { splice_spawn_actions_chdir(&actions, directory) }

        let cArguments: [UnsafeMutablePointer<CChar>?] = argv.map { strdup($0) } + [nil]
        defer { cArguments.forEach { free($0) } }
        var pid: pid_t = 0
        let spawned = posix_spawn(&pid, argv[0], &actions, nil, cArguments, environ)
        guard spawned == 0 else {
            throw StoreError(.embeddedServer, "cannot run \(argv[0]): \(String(cString: strerror(spawned)))", isRetryable: false)
        }
        var status: Int32 = 0
        while waitpid(pid, &status, 0) == -1 && errno == EINTR {}
        // WIFEXITED / WEXITSTATUS are macros: exit code in bits 8–15 when the low 7 bits are zero.
        let exitCode: Int32 = status & 0x7f == 0 ? (status >> 8) & 0xff : 128 + (status & 0x7f)
        let text = (try? String(contentsOfFile: outputPath, encoding: .utf8)) ?? ""
        return Result(status: exitCode, output: text)
    }

    /// `runuser -u USER --` (util-linux), or `setpriv` when runuser is missing.
    private static func userSwitcher(for user: String) throws(StoreError) -> (String, [String]) {
        for runuser in ["/usr/sbin/runuser", "/sbin/runuser", "/usr/bin/runuser"]
        where FileManager.default.isExecutableFile(atPath: runuser) {
            return (runuser, ["-u", user, "--"])
        }
        for setpriv in ["/usr/bin/setpriv", "/bin/setpriv"] where FileManager.default.isExecutableFile(atPath: setpriv) {
            return (setpriv, ["--reuid=\(user)", "--regid=\(user)", "--init-groups", "--"])
        }
        throw StoreError(.embeddedServer, "running as root, but neither runuser nor setpriv is available to "
                             + "run PostgreSQL as user \(user). Install util-linux.", isRetryable: false)
    }
}
