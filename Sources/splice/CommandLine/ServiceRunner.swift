import SpliceLog
import SpliceDaemon

/// How a daemon command (`splice coordinator`, `splice worker`) runs its ``Service`` and turns
/// the signals into a graceful shutdown — one place for both.
///
/// - The first SIGINT/SIGTERM asks the service to shut down gracefully, and ``run(_:until:logger:)``
///   waits for it to drain; a second signal exits at once (``CommandRunner``, which gives these
///   commands `ShutdownBehavior.notify`).
/// - A graceful stop exits 0.
/// - A service that fails — throws (a start that fails, a revoked key), returns without having
///   been asked to stop, or one of its own services does either — ends the command with exactly
///   one error log line naming that service and the reason, and exit status 1.
enum ServiceRunner {
    /// Runs `service` until it has stopped; see ``ServiceRunner``.
    static func run(_ service: any Service, until shutdown: ShutdownSignal, logger: Logger) async -> ExitCode {
        // A group of one is what notices a service returning before it was asked to stop.
        let group = ServiceGroup(services: [service])
        let outcome = await withTaskGroup(of: Result<Void, ServiceGroupError>?.self) { tasks in
            tasks.addTask {
                do throws(ServiceGroupError) {
                    try await group.run()
                    return .success(())
                } catch {
                    return .failure(error)
                }
            }
            tasks.addTask {
                if await shutdown.wait() != nil { await group.shutdown() }
                return nil
            }
            // Wait for run() itself: after a signal it returns once the drain is done.
            var outcome = Result<Void, ServiceGroupError>.success(())
            while let finished = await tasks.next() {
                guard let finished else { continue }
                outcome = finished
                break
            }
            tasks.cancelAll()
            return outcome
        }
        switch outcome {
        case .success:
            return .success
        case .failure(let failure):
            logger.error("service failed; stopped", ["service": failure.service, "reason": failure.reason.description])
            return .failure
        }
    }
}
