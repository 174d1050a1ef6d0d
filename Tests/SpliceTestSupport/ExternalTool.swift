public import Foundation

/// Runs command-line tools (ffmpeg, ffprobe) that tests use as independent oracles.
public enum ExternalTool {
    /// What a finished process left behind.
    public struct Output: Sendable {
        public var status: Int32
        public var stdout: Data
        public var stderr: String
        public var text: String { String(decoding: stdout, as: UTF8.self) }
    }

    /// Runs `executable` (looked up on PATH) with `arguments`, waits, and returns its output.
    @discardableResult
    public static func run(_ executable: String, _ arguments: [String]) throws -> Output {
        let process = Process()
        process.executableURL = URL(fileURLWithPath: "/usr/bin/env")
        process.arguments = [executable] + arguments
        let out = Pipe(), err = Pipe()
        process.standardOutput = out
        process.standardError = err
        process.standardInput = FileHandle.nullDevice
        try process.run()
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
        process.waitUntilExit()
        return Output(status: process.terminationStatus, stdout: outData,
                      stderr: String(decoding: errData.value, as: UTF8.self))
    }

    /// Runs and throws when the tool exits non-zero.
    @discardableResult
    public static func check(_ executable: String, _ arguments: [String]) throws -> Output {
        let output = try run(executable, arguments)
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
