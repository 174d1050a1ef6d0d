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
