import SpliceConcurrency
import SpliceWire
import SpliceDaemon

/// Reads the worker endpoint and hands every burst of messages, in order, to the active term's
/// shell — or, while this coordinator stands by, to its standby desk (``CoordinatorRole``).
/// Stopping it (the first step of a graceful shutdown for the worker side) leaves the endpoint open
/// so that answers to what was already read still go out; anything unread is resent by the
/// workers to the next coordinator.
final class WorkerReader: Service {
    let name = "worker-reader"
    private let endpoint: CoordinatorWorkerEndpoint
    private let role: CoordinatorRole
    private let metrics: CoordinatorMetrics
    /// Answers JOIN, which never reaches the term's state machine.
    private let joins: JoinDesk
    private let reading = StoppableTask()

    init(endpoint: CoordinatorWorkerEndpoint, role: CoordinatorRole, metrics: CoordinatorMetrics, joins: JoinDesk) {
        self.endpoint = endpoint
        self.role = role
        self.metrics = metrics
        self.joins = joins
    }

    func run() async throws {
        let endpoint = self.endpoint
        let role = self.role
        let metrics = self.metrics
        let joins = self.joins
        await reading.run {
            while case let batch = await endpoint.receive(upTo: 64), !batch.isEmpty {
                metrics.received(batch)
                let rest = joins.screen(batch)
                if !rest.isEmpty { await role.received(rest) }
            }
        }
    }

    func shutdown() async {
        await reading.stop()
    }
}
