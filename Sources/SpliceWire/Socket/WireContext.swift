internal import CZeroMQ
internal import Foundation
internal import Synchronization

/// A ZeroMQ context: the I/O threads and the in-process namespace (`inproc://`) shared by the
/// endpoints created in it. The ZAP handler must live in the same context as the CURVE server
/// sockets it authenticates.
///
/// Every `WireEndpoint` keeps its context alive, so the context is terminated only after its
/// last endpoint has closed. Call `terminate()` for an orderly shutdown off the cooperative pool.
public final class WireContext: @unchecked Sendable {
    // @unchecked: a libzmq context is thread safe (zmq_ctx_* may be called from any thread);
    // the only mutable Swift state is behind `state`.
    let handle: UnsafeMutableRawPointer
    private let state = Mutex(State())

    private struct State {
        var terminated = false
        /// Domains served by a running ZAP handler, with the authorizer deciding each.
        var zapDomains: [String: any Authorizer] = [:]
    }

    /// Creates a context with `ioThreads` background I/O threads.
    public init(ioThreads: Int = 1) throws(WireError) {
        guard let handle = zmq_ctx_new() else { throw WireError.zmq("zmq_ctx_new") }
        // On failure below, `handle` is still ours: terminate it before throwing.
        if zmq_ctx_set(handle, ZMQ_IO_THREADS, Int32(clamping: ioThreads)) != 0 {
            let error = WireError.zmq("set ZMQ_IO_THREADS")
            zmq_ctx_term(handle)
            throw error
        }
        self.handle = handle
    }

    deinit {
        // All endpoints hold a reference, so every socket is closed by now and zmq_ctx_term
        // returns once their linger periods (finite by default) have passed.
        if !state.withLock({ $0.terminated }) {
            zmq_ctx_term(handle)
        }
    }

    /// Shuts the context down: endpoints still open see their socket fail with
    /// `contextTerminated`, close themselves and finish their streams; this returns once libzmq
    /// has released everything (after the sockets' linger periods). Runs on its own thread.
    public func terminate() async {
        let first = state.withLock { state -> Bool in
            defer { state.terminated = true }
            return !state.terminated
        }
        guard first else { return }
        let handle = UncheckedHandle(pointer: handle)
        await withCheckedContinuation { (continuation: CheckedContinuation<Void, Never>) in
            let thread = Thread {
                // zmq_ctx_term blocks until every socket in the context is closed.
                while zmq_ctx_term(handle.pointer) != 0 && zmq_errno() == EINTR {}
                continuation.resume()
            }
            thread.name = "splice-wire-terminate"
            thread.start()
        }
    }

    // MARK: - ZAP registry

    /// Records that the ZAP handler of this context serves these domains (there is at most one
    /// handler per context: a second cannot bind `inproc://zeromq.zap.01`).
    func registerZAPDomains(_ authorizers: [String: any Authorizer]) {
        state.withLock { state in
            state.zapDomains.merge(authorizers) { _, new in new }
        }
    }

    func unregisterZAPDomains(_ domains: some Sequence<String>) {
        state.withLock { state in
            for domain in domains { state.zapDomains[domain] = nil }
        }
    }

    /// The authorizer of the ZAP handler serving `domain`, if one is running.
    func authorizer(forZAPDomain domain: String) -> (any Authorizer)? {
        state.withLock { $0.zapDomains[domain] }
    }
}

/// A raw pointer that may cross to another thread because the C object behind it is thread safe
/// (a libzmq context) or because exactly one thread uses it at a time (a handed-over socket).
struct UncheckedHandle: @unchecked Sendable {
    let pointer: UnsafeMutableRawPointer
}
