import Foundation
import SpliceCore
import SpliceJSON
import SpliceMedia
import SpliceStore
import SpliceWire

/// What makes two SUBMITs the same request: the SHA-256 of its canonical form — the input, the
/// output, the priority (absent is 0) and the export settings as the coordinator decoded them
/// (defaults applied, so a field left out and the same field sent with its default are one
/// request), written with sorted keys. Kept with the submission key (migration 0005): a resend
/// of the key with the same request gets the job the key made, a reuse of the key for another
/// request is refused with `ERROR conflict` (docs/protocol.md, The client API).
enum SubmissionFingerprint {
    private struct Canonical: Encodable {
        let input: String
        let output: String
        let priority: Int
        let export: TranscodeRequest
    }

    /// The fingerprint of `submit`, whose export decoded as `request`.
    static func of(_ submit: SubmitJob, request: TranscodeRequest) throws -> SHA256Digest {
        let canonical = Canonical(input: submit.input, output: submit.output, priority: submit.priority ?? 0,
                                  export: request)
        var hasher = SHA256()
        hasher.update(try JSON.encode(canonical))
        return hasher.finalDigest()
    }

    /// Throws `conflict` when `job` was made by `key` from another request than `fingerprint`'s;
    /// a job stored without a fingerprint (before the store kept one) is matched by its key alone.
    static func check(_ job: Job, key: String, against fingerprint: SHA256Digest) throws {
        guard let stored = job.submissionFingerprint, stored != fingerprint else { return }
        throw APIError(.conflict, "`submissionKey` \(key.prefix(200)) already made job \(job.id) from a different "
            + "request; send a new key for a new job, or that job's request unchanged to get it again")
    }
}
