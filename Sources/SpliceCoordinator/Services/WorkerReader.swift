import SpliceConcurrency
import SpliceWire
import SpliceDaemon

/// Reads the worker endpoint and hands every message to the shell, in order. Stopping it (the
/// first step of a graceful shutdown for the worker side) leaves the endpoint open so that
/// answers to what was already read still go out; anything unread is resent by the workers to
/// the next coordinator.
final class WorkerReader: Service {
    let name = "worker-reader"
    private let endpoint: CoordinatorWorkerEndpoint
    private let shell: CoordinatorShell
    private let reading = StoppableTask()

    init(endpoint: CoordinatorWorkerEndpoint, shell: CoordinatorShell) {
        self.endpoint = endpoint
        self.shell = shell
    }

    func run() async throws {
        let endpoint = self.endpoint
        let shell = self.shell
        let metrics = shell.metrics
        await reading.run {
            while case let batch = await endpoint.receive(upTo: 64), !batch.isEmpty {
                metrics.received(batch)
                await shell.received(batch)
            }
        }
    }

    func shutdown() async {
        await reading.stop()
    }
}
