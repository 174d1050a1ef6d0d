import Foundation
import Glibc
import SpliceConcurrency
import SpliceCore
import SpliceJSON
import SpliceLog
import SpliceMedia
import SpliceStore
import SpliceWire

/// A job as either door asks for it — the ZeroMQ API's SUBMIT or the HTTP API's `POST /v1/jobs` —
/// before it is checked: the one place a submission is validated, keyed and recorded.
struct JobSubmissionRequest: Sendable {
    var input: String
    var output: String
    /// The export settings as sent: a `TranscodeRequest` once decoded, defaults applied.
    var settings: JSONPayload
    /// The settings' field name on this door (`export` on ZeroMQ, `settings` over HTTP), so a
    /// refusal names the field the client sent.
    var settingsField: String
    var priority: Int
    /// Makes the submission safe to repeat (the store's idempotency key); nil: a fresh one.
    var key: String?
    /// The key as the client spelled it, for messages (the HTTP API stores it namespaced).
    var keyForMessages: String?
    /// How the key is called on this door (`submissionKey`, `Idempotency-Key`).
    var keyField: String
    var reference: String?
    var webhook: JobWebhook?
    /// The HTTP token that submits it, and the folders it is confined to beyond the coordinator's.
    var token: UUID?
    var tokenInputRoots = PathRoots.none
    var tokenOutputRoots = PathRoots.none
}

/// Where a job's events go, and its own signing secret (nil: the coordinator's).
struct JobWebhook: Sendable, Hashable {
    var url: String
    var secret: String?
}

/// Why a submission is refused: the code its ERROR or problem carries, the request field at
/// fault (`input`, `settings.video.quality`), and one line for people.
struct SubmissionRefusal: Error, Sendable {
    var code: APIError.Code
    var field: String?
    var message: String

    init(_ code: APIError.Code, field: String?, _ message: String) {
        self.code = code
        self.field = field
        self.message = message
    }

    var apiError: APIError { APIError(code, message, isRetryable: code == .unavailable) }
}

/// Checks, keys and records submitted jobs for both doors, so a job means the same whichever way
/// it came: the same defaults, the same refusals, the same idempotency.
final class JobSubmissions: Sendable {
    private let repository: JobRepository
    private let maxAttempts: Int
    private let plannerWake: WakeSignal
    private let logger: Logger
    private let sourceProtocols: SourceProtocols
    private let inputRoots: PathRoots
    private let outputRoots: PathRoots
    /// The coordinator's `--webhook-url` (every job without one of its own gets it) and whether it
    /// has a `--webhook-secret` to sign with.
    private let defaultWebhookURL: String?
    private let hasDefaultSecret: Bool

    init(repository: JobRepository, maxAttempts: Int, plannerWake: WakeSignal, sourceProtocols: SourceProtocols,
         inputRoots: PathRoots, outputRoots: PathRoots, defaultWebhookURL: String?, hasDefaultSecret: Bool,
         logger: Logger) {
        self.repository = repository
        self.maxAttempts = maxAttempts
        self.plannerWake = plannerWake
        self.sourceProtocols = sourceProtocols
        self.inputRoots = inputRoots
        self.outputRoots = outputRoots
        self.defaultWebhookURL = defaultWebhookURL
        self.hasDefaultSecret = hasDefaultSecret
        self.logger = logger
    }

    /// The job `submission` names: created now (`created`), or the one its key made before from
    /// the same request. Throws ``SubmissionRefusal``; a store that does not answer is `unavailable`.
    func submit(_ submission: JobSubmissionRequest) async throws(SubmissionRefusal) -> (job: Job, created: Bool) {
        do {
            return try await record(submission)
        } catch let refusal as SubmissionRefusal {
            throw refusal
        } catch let error as StoreError where error.isRetryable {
            throw SubmissionRefusal(.unavailable, field: nil, "the job store is unreachable; try again")
        } catch {
            logger.error("submission failed", ["error": "\(error)"])
            throw SubmissionRefusal(.internal, field: nil, "the coordinator could not record the job: \(error)")
        }
    }

    private func record(_ submission: JobSubmissionRequest) async throws -> (job: Job, created: Bool) {
        if let refusal = sourceProtocols.refusal(of: submission.input) {
            throw SubmissionRefusal(.invalidRequest, field: "input", refusal)
        }
        guard submission.output.hasPrefix("/") || StorageRegistry.isStored(submission.output) else {
            throw SubmissionRefusal(.invalidRequest, field: "output", "`output` must be an absolute path or an object "
                + "location (s3://BUCKET/KEY), not '\(submission.output.prefix(200))'")
        }
        let root = submission.settingsField
        let request: TranscodeRequest
        do {
            request = try submission.settings.decode(TranscodeRequest.self)
            try request.validate()
        } catch let error as SettingsError {
            throw SubmissionRefusal(.invalidRequest, field: root + "." + error.requestKey, error.message(under: root))
        } catch {
            throw SubmissionRefusal(.invalidRequest, field: DecodingFailure.field(error, under: root),
                                    "`\(root)` is not a valid TranscodeRequest (docs/protocol.md, The export settings): "
                                        + DecodingFailure.describe(error, under: root))
        }
        guard (WireLimits.priority).contains(submission.priority) else {
            throw SubmissionRefusal(.invalidRequest, field: "priority", "`priority` is \(submission.priority), outside "
                + "\(WireLimits.priority.lowerBound)…\(WireLimits.priority.upperBound)")
        }
        if let reference = submission.reference, !(1...256).contains(reference.utf8.count) {
            throw SubmissionRefusal(.invalidRequest, field: "reference", "`reference` must be 1 to 256 bytes long")
        }
        let webhook = try resolveWebhook(submission.webhook)
        let key = submission.key ?? UUID().uuidString
        guard !key.isEmpty else {
            throw SubmissionRefusal(.invalidRequest, field: submission.keyField,
                                    "`\(submission.keyField)` is empty; omit it or send a UUID")
        }
        let fingerprint = try SubmissionFingerprint.of(
            input: submission.input, output: submission.output, priority: submission.priority, request: request,
            reference: submission.reference, webhook: submission.webhook)
        let shownKey = submission.keyForMessages ?? key
        // A resend of a submission that created its job gets that job, whatever the files look like
        // now (its output may exist by now: the job wrote it) — if it is the same request.
        if let existing = try await repository.job(idempotencyKey: key) {
            try SubmissionFingerprint.check(existing, key: shownKey, field: submission.keyField, against: fingerprint)
            return (existing, false)
        }
        try await checkPaths(submission, overwrite: request.overwrite, quality: request.quality)
        let creation = try await repository.createJob(JobSubmission(
            idempotencyKey: key, fingerprint: fingerprint, input: submission.input, output: submission.output,
            settings: try PostgresJSON(encoding: request), priority: submission.priority, maxAttempts: maxAttempts,
            reference: submission.reference, webhookURL: webhook?.url, webhookSecret: webhook?.secret,
            submittedBy: submission.token))
        // Another submission with this key won the race to create the job.
        if !creation.created {
            try SubmissionFingerprint.check(creation.job, key: shownKey, field: submission.keyField, against: fingerprint)
        } else {
            logger.info("job submitted", ["job": creation.job.id.description, "input": submission.input,
                                          "output": submission.output])
            plannerWake.signal()
        }
        return (creation.job, creation.created)
    }

    /// The job's webhook: its own (checked), or the coordinator's default, or none.
    private func resolveWebhook(_ webhook: JobWebhook?) throws -> JobWebhook? {
        guard let webhook else { return defaultWebhookURL.map { JobWebhook(url: $0, secret: nil) } }
        if let problem = WebhookURL.problem(webhook.url) {
            throw SubmissionRefusal(.invalidRequest, field: "webhook.url", "`webhook.url` \(problem)")
        }
        if let secret = webhook.secret {
            guard (16...256).contains(secret.utf8.count) else {
                throw SubmissionRefusal(.invalidRequest, field: "webhook.secret",
                                        "`webhook.secret` must be 16 to 256 bytes long")
            }
        } else if !hasDefaultSecret {
            throw SubmissionRefusal(.invalidRequest, field: "webhook.secret",
                "`webhook.secret` is needed: this coordinator has no --webhook-secret to sign the job's events with")
        }
        return webhook
    }

    /// What the coordinator checks before it accepts a job, so a job that cannot succeed is refused
    /// in well under a second instead of failing after every segment is encoded: first that both
    /// lie inside the token's folders (a token's roots are folders, so an object location is
    /// outside them), then `JobLocations`' checks, the same for every door that creates jobs: the
    /// coordinator's roots, a path input readable here and an object input there to read, and the
    /// output writable (its folder or bucket, not the input, not existing unless `overwrite`). A
    /// verified job's report (`quality.reportPath`), which the coordinator writes after the stitch,
    /// is held to the same roots and may replace an earlier report, never the input or the output.
    private func checkPaths(_ submission: JobSubmissionRequest, overwrite: Bool, quality: QualityRequest?) async throws {
        let (input, output, settingsField) = (submission.input, submission.output, submission.settingsField)
        let (tokenInputs, tokenOutputs) = (submission.tokenInputRoots, submission.tokenOutputRoots)
        let tokenRefusal: SubmissionRefusal? = try await FileSystemQueue.run {
            if !tokenInputs.isEmpty && !SourceProtocols.isURL(input) {
                guard !StorageRegistry.isStored(input), let resolved = PathRoots.realPath(input),
                      tokenInputs.contains(resolved: resolved) else {
                    return SubmissionRefusal(.forbidden, field: "input", "`input` \(input) is not inside an input root of "
                        + "this token (" + tokenInputs.roots.joined(separator: ", ") + ")")
                }
            }
            if !tokenOutputs.isEmpty {
                guard !StorageRegistry.isStored(output), let resolved = PathRoots.resolvedOutput(output),
                      tokenOutputs.contains(resolved: resolved) else {
                    return SubmissionRefusal(.forbidden, field: "output", "`output` \(output) is not inside an output "
                        + "root of this token (" + tokenOutputs.roots.joined(separator: ", ") + ")")
                }
            }
            return nil
        }
        if let tokenRefusal { throw tokenRefusal }
        let refusal: Refusal?
        do {
            refusal = try await JobLocations(inputRoots: inputRoots, outputRoots: outputRoots)
                .refusal(input: input, output: output, overwrite: overwrite)
        } catch {
            throw SubmissionRefusal(.invalidRequest, field: "output", "\(error)")
        }
        if let refusal {
            if refusal.code == .outputExists {
                throw SubmissionRefusal(.outputExists, field: "output", "`output` \(output) already exists and "
                    + "`\(settingsField).overwrite` is false; set it to true to replace it, or choose another output")
            }
            throw SubmissionRefusal(refusal.code, field: refusal.message.hasPrefix("`input`") ? "input" : "output",
                                    refusal.message)
        }
        try await checkVerification(quality, input: input, output: output, under: settingsField)
    }

    /// A verified job reads its stitched output back, so the output must be a file; its report
    /// must be an absolute path inside the output roots, neither the input nor the output.
    private func checkVerification(_ quality: QualityRequest?, input: String, output: String,
                                   under settingsField: String) async throws {
        guard let quality, quality.verify != nil || quality.reportPath != nil else { return }
        let field = settingsField + ".quality"
        if StorageRegistry.isStored(output) {
            throw SubmissionRefusal(.invalidRequest, field: field, "`\(field)` asks for verification, which reads the "
                + "stitched output back as a file; an object output (\(output)) cannot be verified yet: write to a "
                + "path, or leave verification out")
        }
        guard let report = quality.reportPath else { return }
        let outputRoots = self.outputRoots
        let isURL = SourceProtocols.isURL(input) || StorageRegistry.isStored(input)
        let reportField = field + ".reportPath"
        let problem: String? = try await FileSystemQueue.run {
            guard report.hasPrefix("/") else { return "must be an absolute path" }
            if !outputRoots.isEmpty {
                guard let resolved = PathRoots.resolvedOutput(report), outputRoots.contains(resolved: resolved) else {
                    return "is not inside an output root of this coordinator (" + outputRoots.described + ")"
                }
            }
            guard PathRoots.resolvedOutput(report) != PathRoots.resolvedOutput(output) else {
                return "is the output; choose another file for the report"
            }
            do {
                try OutputDestination.check(output: report, inputs: isURL ? [] : [input], overwrite: true)
            } catch let error as MediaError {
                return error.message
            } catch {
                return "\(error)"
            }
            return nil
        }
        if let problem {
            throw SubmissionRefusal(.invalidRequest, field: reportField, "`\(reportField)` \(report) \(problem)")
        }
    }
}

/// What a webhook URL must be: http or https, a host, no user name or password, at most 2,048
/// bytes.
enum WebhookURL {
    /// Why `text` is not a usable webhook URL (`"must be …"`), or nil.
    static func problem(_ text: String) -> String? {
        guard text.utf8.count <= 2048 else { return "is longer than 2048 bytes" }
        guard let url = URL(string: text), let scheme = url.scheme?.lowercased(), ["http", "https"].contains(scheme),
              let host = url.host, !host.isEmpty
        else { return "must be an http or https URL with a host" }
        guard url.user == nil && url.password == nil else { return "must not carry a user name or password" }
        return nil
    }
}
