public import Foundation
import Synchronization
import Testing
#if canImport(Glibc)
import Glibc
#endif

/// `splice` run as a child process, its output collected as it comes, never waited on forever.
/// `@unchecked`: `process` is only asked thread-safe questions (running? pid) after `run()`.
public final class SpliceProcess: @unchecked Sendable {
    /// How a run ended.
    public struct Result: Sendable {
        public var status: Int32
        public var stdout: String
        public var stderr: String
    }

    private let process: Process
    private let exit: ChildExit
    private let out = OutputBuffer()
    private let err = OutputBuffer()

    /// Starts `splice arguments…` with this process's environment minus any `SPLICE_*`
    /// variable, plus `environment`.
    public init(_ arguments: [String], environment: [String: String] = [:]) throws {
        let binary = SpliceBinary.url
        guard FileManager.default.isExecutableFile(atPath: binary.path) else { throw ToolMissing(path: binary.path) }
        process = Process()
        process.executableURL = binary
        process.arguments = arguments
        var inherited = ProcessInfo.processInfo.environment.filter { !$0.key.hasPrefix("SPLICE_") }
        inherited.merge(environment) { _, new in new }
        process.environment = inherited
        let stdout = Pipe(), stderr = Pipe()
        process.standardOutput = stdout
        process.standardError = stderr
        process.standardInput = FileHandle.nullDevice
        stdout.fileHandleForReading.readabilityHandler = { [out] handle in Self.collect(handle, into: out) }
        stderr.fileHandleForReading.readabilityHandler = { [err] handle in Self.collect(handle, into: err) }
        try process.run()
        exit = ChildExit(process)
    }

    /// Appends what `handle` has; at end of file (empty read) stops reading it.
    private static func collect(_ handle: FileHandle, into buffer: OutputBuffer) {
        let data = handle.availableData
        if data.isEmpty { handle.readabilityHandler = nil }
        buffer.append(data)
    }

    /// Runs `splice arguments…` to the end (killed after `timeout`, which the test reports).
    public static func run(_ arguments: [String], environment: [String: String] = [:],
                           timeout: Duration = .seconds(60)) async throws -> Result {
        try await SpliceProcess(arguments, environment: environment).finish(within: timeout)
    }

    /// Its standard error so far.
    public var stderrText: String { err.text }

    /// Whether it is still running.
    public var isRunning: Bool { !exit.hasExited }

    /// Waits until standard error contains `text`; false after `timeout`.
    public func waitForStderr(containing text: String, within timeout: Duration = .seconds(10)) async -> Bool {
        await eventually(within: timeout) { self.stderrText.contains(text) }
    }

    /// Sends it `signal`.
    public func send(_ signal: Int32) {
        kill(process.processIdentifier, signal)
    }

    /// Waits for the process to exit; after `timeout` it is killed and an issue is recorded.
    public func finish(within timeout: Duration) async -> Result {
        var ended = await exit.wait(within: timeout)
        if ended == nil {
            Issue.record("splice \(process.arguments ?? []) did not finish within \(timeout); killed")
            kill(process.processIdentifier, SIGKILL)
            ended = await exit.wait(within: .seconds(30))
        }
        // Let the readability handlers take what is left in the pipes.
        try? await Task.sleep(for: .milliseconds(50))
        for pipe in [process.standardOutput, process.standardError].compactMap({ $0 as? Pipe }) {
            pipe.fileHandleForReading.readabilityHandler = nil
        }
        return Result(status: ended?.code ?? -1, stdout: out.text, stderr: err.text)
    }

    /// The job id `splice submit` names on standard error (`job ID submitted; waiting…`).
    public static func submittedJob(in stderr: String) -> String? {
        let line = stderr.split(separator: "\n").first { $0.hasPrefix("job ") && $0.contains(" submitted") }
        return line?.split(separator: " ").dropFirst().first.map(String.init)
    }
}

/// Bytes a child process wrote, collected from a pipe's reader thread.
public final class OutputBuffer: Sendable {
    private let data = Mutex(Data())

    public init() {}

    /// Appends what the pipe delivered.
    public func append(_ more: Data) {
        data.withLock { $0.append(more) }
    }

    /// Everything so far, as UTF-8 text.
    public var text: String { data.withLock { String(decoding: $0, as: UTF8.self) } }
}

/// The `splice` binary is not where the tests expect it.
public struct ToolMissing: Error, CustomStringConvertible {
    public var path: String
    public var description: String { "no splice binary at \(path); build it with `swift build --build-tests`" }
}
