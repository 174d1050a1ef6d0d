public import SpliceCore
public import SpliceWire

extension JobStatus {
    /// Whether the job has ended (succeeded, failed or was cancelled).
    public var isFinished: Bool { state.isTerminal }
}

/// What `SpliceClient.waitForCompletion` reports while it waits.
public enum JobWaitEvent: Sendable, Hashable {
    /// A STATUS was answered (every poll, unchanged or not).
    case status(JobStatus)
    /// A poll got no answer (the coordinator is down or restarting) or a retryable error (its
    /// job store is). The wait goes on: it reconnects with backoff and polls again.
    case unreachable(SpliceClientError)
    /// The coordinator answered again after being unreachable.
    case reachable
}

extension SpliceClient {
    /// Polls STATUS every `pollInterval` until the job has finished and returns its last status.
    ///
    /// It outlives the coordinator: a poll that gets no answer is reported to `onEvent` as
    /// `.unreachable` (once per failed poll) instead of failing, the connection is reopened after
    /// the configured `reconnectBackoff`, and polling resumes; the first answer after that is
    /// reported as `.reachable`. It fails only for errors a retry cannot cure (an unknown job, a
    /// refused key) and with `.cancelled` when the calling task is cancelled — which leaves the
    /// job running on the cluster.
    public func waitForCompletion(
        of job: JobID, pollInterval: Duration = .seconds(1),
        onEvent: @escaping @Sendable (JobWaitEvent) -> Void = { _ in }
    ) async throws(SpliceClientError) -> JobStatus {
        var failedPolls = 0
        while true {
            let status: JobStatus
            do {
                status = try await self.status(of: job)
            } catch where error.isRetryable {
                failedPolls += 1
                onEvent(.unreachable(error))
                try await pause(configuration.reconnectBackoff.delay(attempt: failedPolls))
                try await reconnect()
                continue
            }
            if failedPolls > 0 {
                failedPolls = 0
                onEvent(.reachable)
            }
            onEvent(.status(status))
            if status.isFinished { return status }
            try await pause(pollInterval)
        }
    }

    private func pause(_ duration: Duration) async throws(SpliceClientError) {
        do {
            try await Task.sleep(for: duration)
        } catch {
            throw SpliceClientError.cancelledError
        }
    }
}
