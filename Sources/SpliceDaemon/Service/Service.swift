/// A long-running part of a daemon (the coordinator's dispatcher, its reaper, a worker's
/// session), in the shape of swift-service-lifecycle: `run()` does the work until it is told to
/// stop. Graceful shutdown is not cancellation: ``shutdown()`` asks the service to finish what
/// it is doing (drain) and return; task cancellation means stop now.
public protocol Service: Sendable {
    /// A name for logs.
    var name: String { get }
    /// Runs until ``shutdown()`` is called or the task is cancelled. Returning before either is a
    /// failure to a ``ServiceGroup``, like throwing.
    func run() async throws
    /// Asks the service to finish gracefully; `run()` returns when it has.
    func shutdown() async
}

/// Why a ``ServiceGroup`` stopped without being asked to: which service, and what it did.
public struct ServiceGroupError: Error, CustomStringConvertible {
    /// What the service did.
    public enum Reason: Sendable, CustomStringConvertible {
        /// `run()` returned while the group was running (neither shutting down nor cancelled).
        case returnedEarly
        /// `run()` threw this error.
        case threw(any Error)

        public var description: String {
            switch self {
            case .returnedEarly: "it stopped before it was asked to"
            case .threw(let error): String(describing: error)
            }
        }
    }

    /// The ``Service/name`` of the service that failed.
    public let service: String
    /// What it did.
    public let reason: Reason

    public var description: String { "service \(service) failed: \(reason)" }
}
