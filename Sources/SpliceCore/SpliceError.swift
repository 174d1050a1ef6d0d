/// The shape every Splice error has: a stable `code` to branch on (its text kebab-case, the same
/// on the wire, in logs and in tests), one line for people that says what went wrong and what to
/// do, and whether trying the same thing again later can help (`isRetryable`: the coordinator's
/// retry rules and the client read it). Errors may carry more (an errno, an SQLSTATE, an FFmpeg
/// code), never less.
public protocol SpliceError: Error, Sendable, CustomStringConvertible {
    associatedtype Code: RawRepresentable<String>, Hashable, Sendable
    var code: Code { get }
    var message: String { get }
    var isRetryable: Bool { get }
}

/// An error of exactly that shape and no more: its code, its message, whether a retry can help.
/// A module whose errors carry nothing else names one with codes of its own
/// (`public typealias WorkerError = CodedError<WorkerErrorCode>`) instead of writing the same
/// struct again.
public struct CodedError<Code: RawRepresentable<String> & Hashable & Sendable>: SpliceError, Hashable {
    public let code: Code
    public let message: String
    public let isRetryable: Bool

    public init(_ code: Code, _ message: String, isRetryable: Bool = false) {
        self.code = code
        self.message = message
        self.isRetryable = isRetryable
    }

    public var description: String { message }
}
