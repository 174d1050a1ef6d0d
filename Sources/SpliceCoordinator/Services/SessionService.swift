import SpliceConcurrency
import SpliceWire
import SpliceDaemon

/// Sends what the shell queues on the worker endpoint, and on graceful shutdown drains the
/// session side in order: no more claims, every commit in flight answered (its ACK queued; for
/// at most `drainTimeout` when the store does not answer), DISCONNECT `shutdown` to every
/// worker, then the queue flushed.
final class SessionService: Service {
    let name = "sessions"
    private let endpoint: CoordinatorWorkerEndpoint
    private let shell: CoordinatorShell
    private let outbox: Outbox
    private let drainTimeout: Duration
    /// Opened once `run` has returned (the outbox finished and drained).
    let stopped = Latch()

    init(endpoint: CoordinatorWorkerEndpoint, shell: CoordinatorShell, outbox: Outbox, drainTimeout: Duration) {
        self.endpoint = endpoint
        self.shell = shell
        self.outbox = outbox
        self.drainTimeout = drainTimeout
    }

    func run() async throws {
        defer { stopped.open() }
        let shell = self.shell
        let metrics = shell.metrics
        await outbox.run(on: endpoint, sent: { metrics.sent($0) }) { outgoing, error in
            await shell.sendFailed(outgoing, error: error)
        }
    }

    func shutdown() async {
        await shell.stopDispatching()
        if !(await shell.drained(within: drainTimeout)) {
            // The store is not answering: the workers keep their results and resend them.
            shell.logger.warning("store writes still in flight at shutdown", ["waited": drainTimeout])
        }
        await shell.farewell()
        outbox.finish()
        await stopped.wait()
    }
}
