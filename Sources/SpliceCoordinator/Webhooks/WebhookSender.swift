import Foundation
import SpliceConcurrency
import SpliceCore
import SpliceJSON
import SpliceLog
import SpliceStore
import Synchronization

/// Delivers the webhook outbox (docs/api.md, Webhooks): each round claims the due events — a job's
/// oldest undelivered one at most, so a job's events arrive in order — POSTs them at once,
/// signed, and records each attempt. A 2xx delivers the event; anything else (no answer, a
/// timeout, a 500) is tried again after an exponential backoff with jitter, until 24 hours after
/// the event, then given up. At least once: a coordinator killed while a POST is in flight sends
/// it again after its restart, with the same `Splice-Event-Id`.
///
/// It runs as a service of its own with its own timer and database calls, so a receiver that is
/// slow or down delays other deliveries at most by its timeout and never dispatch; and only while
/// `mayAct` says this coordinator is the active one (its term's lease is valid).
final class WebhookSender: Sendable {
    struct Settings: Sendable {
        /// The coordinator's `--webhook-secret`, for jobs without their own.
        var secret: String?
        var timeout: Duration = .seconds(10)
        var backoff = Backoff(base: .seconds(5), cap: .seconds(3600), jitter: 0.5)
        /// How long after an event it is still tried.
        var window: Duration = .seconds(86_400)
        /// Deliveries in flight at once.
        var concurrency = 16
        var userAgent = "splice"
    }

    private let repository: JobRepository
    private let settings: Settings
    private let mayAct: @Sendable () -> Bool
    private let metrics: CoordinatorMetrics
    private let logger: Logger
    private let releasedClaims = Atomic<Bool>(false)

    init(repository: JobRepository, settings: Settings, mayAct: @escaping @Sendable () -> Bool, metrics: CoordinatorMetrics,
         logger: Logger) {
        self.repository = repository
        self.settings = settings
        self.mayAct = mayAct
        self.metrics = metrics
        self.logger = logger
    }

    /// One round: what is due, delivered (or scheduled again).
    func round() async {
        guard mayAct() else { return }
        do {
            if !releasedClaims.load(ordering: .acquiring) {
                // A predecessor killed mid-delivery held claims: they are due again now.
                try await repository.releaseWebhookClaims()
                releasedClaims.store(true, ordering: .releasing)
            }
            while mayAct() && !Task.isCancelled {
                let events = try await repository.claimWebhookEvents(
                    limit: settings.concurrency, claim: settings.timeout + .seconds(30))
                guard !events.isEmpty else { return }
                await withTaskGroup(of: Void.self) { group in
                    for event in events { group.addTask { await self.deliver(event) } }
                }
            }
        } catch {
            logger.warning("webhook round failed; trying again", ["error": "\(error)"])
        }
    }

    private func deliver(_ event: WebhookEvent) async {
        guard let secret = event.secret ?? settings.secret else {
            // Refused at submit (a webhook needs a secret); a coordinator restarted without its
            // --webhook-secret cannot sign: keep the event for one that can.
            try? await repository.recordWebhookAttempt(event, status: nil, error: "no secret to sign with (--webhook-secret)",
                                                       duration: .zero, outcome: .failed, retryAfter: .seconds(300))
            metrics.webhookDeliveries.increment([WebhookOutcome.failed.rawValue])
            return
        }
        let body = Self.body(of: event)
        let timestamp = Int64(Date().timeIntervalSince1970)
        let headers = [
            ("Content-Type", "application/json"),
            ("User-Agent", settings.userAgent),
            ("Splice-Event-Id", event.id.uuidString.lowercased()),
            ("Splice-Event-Type", event.type),
            ("Splice-Signature", WebhookSignature.header(secret: secret, timestamp: timestamp, body: body)),
        ]
        let started = ContinuousClock.now
        let answer = await WebhookPoster.post(url: event.url, headers: headers, body: body, timeout: settings.timeout)
        let took = ContinuousClock.now - started
        var status: Int?
        var failure: String?
        switch answer {
        case .answered(let code):
            status = code
            if !(200..<300).contains(code) { failure = "the receiver answered \(code)" }
        case .failed(let reason):
            failure = reason
        }
        let attempt = event.attempts + 1
        var outcome = WebhookOutcome.delivered
        var retryAfter = Duration.zero
        if failure != nil {
            retryAfter = settings.backoff.delay(attempt: attempt)
            let age = Date().timeIntervalSince(event.createdAt)
            outcome = age + retryAfter.inSeconds > settings.window.inSeconds ? .expired : .failed
        }
        do {
            try await repository.recordWebhookAttempt(event, status: status, error: failure, duration: took,
                                                      outcome: outcome, retryAfter: retryAfter)
        } catch {
            // Its claim runs out and it is sent again: at least once.
            logger.warning("webhook attempt not recorded", ["event": event.id.uuidString.lowercased(),
                                                             "error": "\(error)"])
        }
        metrics.webhookDeliveries.increment([outcome.rawValue])
        let (job, id, statusText) = (event.jobID.description, event.id.uuidString.lowercased(), status.map(String.init) ?? "-")
        if outcome == .delivered {
            logger.info("webhook delivered", ["job": job, "event": id, "type": event.type, "attempt": attempt,
                                              "status": statusText])
        } else {
            logger.warning("webhook not delivered", ["job": job, "event": id, "type": event.type, "attempt": attempt,
                                                     "status": statusText, "outcome": outcome.rawValue,
                                                     "error": failure ?? "", "retry_in_ms": retryAfter.wholeMilliseconds])
        }
    }

    private struct Body: Encodable {
        struct JobData: Encodable {
            let id: String
            let state: JobState
            let input: String
            let output: String
            let reference: String?
            let error: String?
        }

        struct DataPart: Encodable {
            let job: JobData
        }

        let id: String
        let type: String
        let created: String
        let data: DataPart
    }

    /// The event's JSON, the same on every attempt: its id, type and time, and the job as the
    /// state change left it.
    static func body(of event: WebhookEvent) -> [UInt8] {
        let body = Body(
            id: event.id.uuidString.lowercased(), type: event.type, created: Timestamp.text(event.createdAt),
            data: Body.DataPart(job: Body.JobData(id: event.jobID.description, state: event.state, input: event.input,
                                                  output: event.output, reference: event.reference, error: event.error)))
        return (try? JSON.encode(body)) ?? []
    }
}
