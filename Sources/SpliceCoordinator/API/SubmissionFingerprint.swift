import Foundation
import SpliceCore
import SpliceJSON
import SpliceMedia
import SpliceStore
import SpliceWire

/// What makes two submissions the same request: the SHA-256 of its canonical form — the input, the
/// output, the priority (absent is 0), the export settings as the coordinator decoded them
/// (defaults applied, so a field left out and the same field sent with its default are one
/// request) and, from the HTTP API, the reference and the webhook (its secret as a digest) —
/// written with sorted keys. Kept with the submission key (migration 0005): a resend of the key
/// with the same request gets the job the key made, a reuse of the key for another request is
/// refused (`ERROR conflict`, HTTP 422 `idempotency-key-reused`; docs/protocol.md, docs/api.md).
/// A SUBMIT without reference or webhook fingerprints as it always did.
enum SubmissionFingerprint {
    private struct Canonical: Encodable {
        let input: String
        let output: String
        let priority: Int
        let export: TranscodeRequest
        let reference: String?
        let webhook: String?
        let webhookSecret: String?
    }

    /// The fingerprint of a submission whose settings decoded as `request`.
    static func of(input: String, output: String, priority: Int, request: TranscodeRequest, reference: String? = nil,
                   webhook: JobWebhook? = nil) throws -> SHA256Digest {
        let canonical = Canonical(
            input: input, output: output, priority: priority, export: request, reference: reference,
            webhook: webhook?.url, webhookSecret: webhook?.secret.map { SHA256.hexDigest(of: Array($0.utf8)) })
        var hasher = SHA256()
        hasher.update(try JSON.encode(canonical))
        return hasher.finalDigest()
    }

    /// Throws `conflict` when `job` was made by `key` from another request than `fingerprint`'s;
    /// a job stored without a fingerprint (before the store kept one) is matched by its key alone.
    static func check(_ job: Job, key: String, field: String, against fingerprint: SHA256Digest) throws {
        guard let stored = job.submissionFingerprint, stored != fingerprint else { return }
        throw SubmissionRefusal(.conflict, field: field, "`\(field)` \(key.prefix(200)) already made job \(job.id) "
            + "from a different request; send a new key for a new job, or that job's request unchanged to get it again")
    }
}
