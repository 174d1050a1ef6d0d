public import Foundation

/// Runs command-line tools (ffmpeg, ffprobe) that tests use as independent oracles.
public enum ExternalTool {
    /// What a finished process left behind.
    public struct Output: Sendable {
        /// The exit status, or the signal's number when ``exitedNormally`` is false.
        public var status: Int32
        public var stdout: Data
        public var stderr: String
        /// Whether the process exited by itself (false: a signal such as SIGSEGV ended it).
        public var exitedNormally: Bool = true
        public var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `body` on a thread of its own and awaits it. Tools block while they run; doing that on
    /// Swift's cooperative pool (two threads here) would stall every other test in the process.
    public static func offPool<T: Sendable>(_ body: @escaping @Sendable () throws -> T) async throws -> T {
        try await withCheckedThrowingContinuation { (continuation: CheckedContinuation<T, any Error>) in
            Thread { continuation.resume(with: Result { try body() }) }.start()
        }
    }

    /// Runs a CPU-heavy computation (an oracle's arithmetic on decoded samples) on a thread of its
    /// own, for the same reason as ``offPool(_:)``.
    public static func computeOffPool<T: Sendable>(_ body: @escaping @Sendable () -> T) async -> T {
        await withCheckedContinuation { (continuation: CheckedContinuation<T, Never>) in
            Thread { continuation.resume(returning: body()) }.start()
        }
    }

    /// Runs `executable` (looked up on PATH) with `arguments` off the cooperative pool and returns its output.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String]) async throws -> Output {
        try await offPool { try runBlocking(executable, arguments) }
    }

    /// Runs and throws when the tool exits non-zero.
    @discardableResult
    public static func check(_ executable: String, _ arguments: [String]) async throws -> Output {
        try await offPool { try checkBlocking(executable, arguments) }
    }

    /// Runs the program at `executable` (a path, not looked up on PATH) off the cooperative pool,
    /// in `directory` when given, and returns its output and how it ended.
    public static func run(executable: URL, _ arguments: [String], in directory: URL? = nil) async throws -> Output {
        try await offPool { try runBlocking(executable: executable, arguments, in: directory) }
    }

    /// ``run(_:_:)`` on the calling thread (for code already off the pool).
    @discardableResult
    public static func runBlocking(_ executable: String, _ arguments: [String]) throws -> Output {
        try runBlocking(executable: URL(fileURLWithPath: "/usr/bin/env"), [executable] + arguments)
    }

    /// ``run(executable:_:in:)`` on the calling thread.
    public static func runBlocking(executable: URL, _ arguments: [String], in directory: URL? = nil) throws -> Output {
        let process = Process()
        process.executableURL = executable
        process.arguments = arguments
        if let directory { process.currentDirectoryURL = directory }
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
        let exit = ChildExit(process)
        // Read both pipes concurrently so a chatty process cannot block on a full pipe.
        let errData = LockedBox(Data())
        let group = DispatchGroup()
        group.enter()
        DispatchQueue.global().async {
            errData.value = err.fileHandleForReading.readDataToEndOfFile()
            group.leave()
        }
        let outData = out.fileHandleForReading.readDataToEndOfFile()
        group.wait()
        let ended = exit.waitBlocking()
        return Output(status: ended.code, stdout: outData, stderr: String(decoding: errData.value, as: UTF8.self),
                      exitedNormally: !ended.signalled)
    }

    /// ``check(_:_:)`` on the calling thread (for code already off the pool).
    @discardableResult
    public static func checkBlocking(_ executable: String, _ arguments: [String]) throws -> Output {
        let output = try runBlocking(executable, arguments)
        guard output.status == 0 else {
            throw ToolFailure(command: ([executable] + arguments).joined(separator: " "), status: output.status,
                              stderr: String(output.stderr.suffix(2000)))
        }
        return output
    }
}

/// A tool exited non-zero.
public struct ToolFailure: Error, CustomStringConvertible {
    public var command: String
    public var status: Int32
    public var stderr: String
    public var description: String { "`\(command)` exited \(status): \(stderr)" }
}

/// A mutable value shared between threads under a lock.
public final class LockedBox<T>: @unchecked Sendable {
    private let lock = NSLock()
    private var _value: T
    public init(_ value: T) { _value = value }
    public var value: T {
        get { lock.withLock { _value } }
        set { lock.withLock { _value = newValue } }
    }
}
