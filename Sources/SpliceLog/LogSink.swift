#if canImport(Glibc)
import Glibc
#endif
import Synchronization

/// Where finished log lines go.
public protocol LogSink: Sendable {
    /// Writes one line; `line` has no trailing newline. Called from any thread.
    func write(line: String)
}

/// Writes text to a file descriptor with `write(2)`, one call at a time, so that lines written by
/// concurrent tasks (log lines, a progress bar, error messages) never interleave mid-line.
///
/// Unbuffered on purpose: a line is on the terminal before the call returns, and nothing is lost
/// when the process exits.
public final class FileDescriptorWriter: LogSink {
    /// Standard output, shared by everything in the process.
    public static let standardOutput = FileDescriptorWriter(fileDescriptor: STDOUT_FILENO)
    /// Standard error, shared by everything in the process (the logger's default sink).
    public static let standardError = FileDescriptorWriter(fileDescriptor: STDERR_FILENO)

    /// The descriptor written to; not owned (never closed).
    public let fileDescriptor: Int32
    private let lock = Mutex(())

    private init(fileDescriptor: Int32) {
        self.fileDescriptor = fileDescriptor
    }

    /// Whether the descriptor is a terminal (`isatty`).
    public var isTerminal: Bool {
        isatty(fileDescriptor) == 1
    }

    /// Writes `text` as is.
    public func write(_ text: String) {
        let bytes = Array(text.utf8)
        lock.withLock { _ in
            bytes.withUnsafeBytes { buffer in
                var offset = 0
                while offset < buffer.count {
                    let written = Glibc.write(fileDescriptor, buffer.baseAddress! + offset, buffer.count - offset)
                    if written > 0 {
                        offset += written
                    } else if written < 0, errno == EINTR {
                        continue
                    } else {
                        return  // the stream is gone; output must never take the process down
                    }
                }
            }
        }
    }

    /// Writes `line` followed by a newline.
    public func write(line: String) {
        write(line + "\n")
    }
}
