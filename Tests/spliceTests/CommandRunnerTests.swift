import Synchronization
import Testing

@testable import splice

#if canImport(Glibc)
import Glibc
#endif

@Suite("Command runner")
struct CommandRunnerTests {
    @Test("subcommands nest; a command with subcommands can also run itself")
    func dispatch() async {
        #expect(await runCLI(["export", "in.mp4", "--preset", "fast"]).stdout == "export in.mp4 preset=fast\n")
        #expect(await runCLI(["db", "migrate", "--database", "pg://h/db"]).stdout
            == "migrate pg://h/db dry-run=false\n")
        #expect(await runCLI(["workers"]).stdout == "workers at tcp://127.0.0.1:7451\n")
        #expect(await runCLI(["workers", "enroll", "K1", "K2"]).stdout == "enroll K1,K2\n")
    }

    @Test("--version prints the one version constant")
    func version() async {
        let result = await runCLI(["--version"])
        #expect(result.code == .success)
        #expect(result.stdout == "splice " + SpliceCommand.version + "\n")
        let real = await runCLI(["--version"], root: SpliceCommand.self)
        #expect(real.stdout == "splice " + SpliceCommand.version + "\n")
    }

    @Test("a usage error exits 64 with the cause and a pointer to --help on stderr")
    func usageErrors() async {
        let result = await runCLI(["export", "in.mp4", "--preset", "quick"])
        #expect(result.code == .usage)
        #expect(result.code.rawValue == 64)
        #expect(result.stdout.isEmpty)
        let lines = result.stderr.split(separator: "\n")
        #expect(lines.count == 2)
        #expect(lines.first?.hasPrefix("splice export: --preset: 'quick' is not one of ultrafast,") == true)
        #expect(lines.last == "see 'splice export --help'")
    }

    @Test("groups report a missing or mistyped subcommand", arguments: [
        ([], "splice: missing subcommand: one of help, export, db, workers"),
        (["db"], "splice db: missing subcommand: one of migrate"),
        (["exprot", "in.mp4"], "splice: unknown subcommand 'exprot'; did you mean 'export'?"),
        (["db", "migrat"], "splice db: unknown subcommand 'migrat'; did you mean 'migrate'?"),
    ])
    func subcommandErrors(words: [String], message: String) async {
        let result = await runCLI(words)
        #expect(result.code == .usage)
        #expect(result.stderr.split(separator: "\n").first.map(String.init) == message)
    }

    @Test("a runtime error exits 1 with one redacted line")
    func runtimeError() async {
        let result = await runCLI(["fail"])
        #expect(result.code == .failure)
        #expect(result.stderr == "splice fail: cannot connect to postgres://splice:***@db/splice; connection refused\n")
    }

    @Test("SIGINT cancels a running command and exits 130")
    func interrupt() async throws {
        let shutdown = ShutdownSignal()
        let stderr = Captured()
        async let result = runCLI(["wait"], shutdown: shutdown, stderr: stderr)
        try await stderr.waitFor("waiting")
        shutdown.trigger(SIGINT)
        let finished = await result
        #expect(finished.code == .interrupted)
        #expect(finished.stderr == "waiting\nsplice wait: interrupted\n")
    }

    @Test("a signal that arrives before the command starts still cancels it")
    func earlySignal() async {
        let shutdown = ShutdownSignal()
        shutdown.trigger(SIGTERM)
        let result = await runCLI(["wait"], shutdown: shutdown)
        #expect(result.code == .stopped(by: SIGTERM))
        #expect(result.code.rawValue == 143)
    }

    @Test("a service is only notified, drains, and chooses its status; a second signal forces the exit")
    func gracefulShutdown() async throws {
        let shutdown = ShutdownSignal()
        let stderr = Captured()
        let forced = Mutex<[Int32]>([])
        async let result = runCLI(["drain"], shutdown: shutdown, stderr: stderr,
                                  forceExit: { signal in forced.withLock { $0.append(signal) } })
        try await stderr.waitFor("waiting")
        shutdown.trigger(SIGTERM)
        #expect(forced.withLock { $0 }.isEmpty)
        shutdown.trigger(SIGINT)
        let finished = await result
        #expect(finished.code == .success)
        #expect(finished.stdout == "draining after signal \(SIGTERM) cancelled=false\n")
        #expect(forced.withLock { $0 } == [SIGINT])
    }

    @Test("errors print their LocalizedError description when they have one")
    func describesErrors() {
        struct Described: Error, CustomStringConvertible {
            var description: String { "  first line\n\n second line " }
        }
        #expect(CommandRunner.oneLine(Described()) == "first line; second line")
        #expect(CommandRunner.oneLine(UsageError("bad")) == "bad")
    }
}

@Suite("Shutdown signal")
struct ShutdownSignalTests {
    @Test("wait returns the first signal, also to waiters that come after it")
    func waitReturnsFirst() async {
        let shutdown = ShutdownSignal()
        async let first = shutdown.wait()
        try? await Task.sleep(for: .milliseconds(10))
        shutdown.trigger(SIGTERM)
        shutdown.trigger(SIGINT)
        #expect(await first == SIGTERM)
        #expect(await shutdown.wait() == SIGTERM)
        #expect(shutdown.signal == SIGTERM)
        #expect(shutdown.count == 2)
    }

    @Test("a cancelled waiter returns nil instead of blocking its task group")
    func cancelledWaiter() async {
        let shutdown = ShutdownSignal()
        let result = await withTaskGroup(of: Int32?.self) { group in
            group.addTask { await shutdown.wait() }
            group.cancelAll()
            return await group.next() ?? 0
        }
        #expect(result == nil)
        #expect(shutdown.signal == nil)
    }

    @Test("handlers see every signal with its count until removed")
    func handlers() {
        let shutdown = ShutdownSignal()
        let seen = Mutex<[String]>([])
        let token = shutdown.onSignal { signal, count in seen.withLock { $0.append("\(signal)#\(count)") } }
        shutdown.trigger(SIGINT)
        shutdown.trigger(SIGINT)
        shutdown.removeHandler(token)
        shutdown.trigger(SIGINT)
        #expect(seen.withLock { $0 } == ["\(SIGINT)#1", "\(SIGINT)#2"])
    }

    @Test("a real signal reaches the installed handler instead of killing the process")
    func realSignal() async throws {
        let shutdown = await ShutdownSignal.installed(for: [SIGUSR2])
        kill(getpid(), SIGUSR2)
        let received = await withTaskGroup(of: Int32?.self) { group in
            group.addTask { await shutdown.wait() }
            group.addTask {
                try? await Task.sleep(for: .seconds(5))
                return nil
            }
            let first = await group.next() ?? nil
            group.cancelAll()
            return first
        }
        #expect(received == SIGUSR2)
    }
}
