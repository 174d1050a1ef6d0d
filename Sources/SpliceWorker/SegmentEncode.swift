internal import Foundation
internal import Glibc
internal import SpliceConcurrency
internal import SpliceMedia
internal import SpliceWire
import SpliceDaemon

/// One ASSIGN carried out: decode its spec (a ``SegmentWorkOrder``), check that its output path is
/// inside the spool, create the job's spool subdirectory, run the ``SegmentExporter`` (on its own
/// thread) and turn what happened into an ``EncodeOutcome``. Cancelling the calling task stops the
/// encode; the exporter then leaves no partial file.
///
/// A shared-spool worker reads the source itself, or the source excerpt the ASSIGN names in the
/// spool (`excerptPath`: a source in object storage, which only the coordinator reads).
/// In transfer mode the input is the ASSIGN's source excerpt, fetched from the coordinator into
/// scratch first, and the output goes to scratch as `r-<lease token>`, offered to the coordinator,
/// which fetches it into the ASSIGN's `outputPath` before it commits the COMPLETE.
struct SegmentEncode: Sendable {
    enum Storage: Sendable {
        case spool(Spool)
        case transfer(WorkerTransfer)
    }

    let assign: Assign
    let storage: Storage
    /// The encoders this worker offers (``WorkerConfiguration/encoders``).
    let encoders: [String]
    /// The coordinator (its index in the worker's list) that sent the ASSIGN: in transfer mode its
    /// data endpoint has the excerpt.
    var coordinator = 0
    /// The threads for the decoder and encoders, asked as they open (``EncoderThreads``).
    let codecThreads: @Sendable () -> Int

    func run(progress: @escaping @Sendable (Double) -> Void) async -> EncodeOutcome {
        let order: SegmentWorkOrder
        do {
            order = try assign.spec.decode(SegmentWorkOrder.self)
            try order.plan.validate()
        } catch {
            return .failed(code: .invalidSpec, reason: "the ASSIGN for \(assign.attempt) carries no valid segment "
                           + "work order: \(error)", retryable: false)
        }
        // A job that names its encoder goes only to workers that listed it; one that reaches
        // this worker anyway (a coordinator that predates the routing) is this worker's to refuse.
        if let encoder = order.plan.videoSettings?.encoder, !encoders.contains(encoder) {
            return .failed(code: .encoderMissing, reason: "this worker does not offer the \(encoder) encoder, which the "
                           + "job names (its FFmpeg lacks it, or --encoders leaves it out); the job is left to workers "
                           + "that offer it", retryable: true)
        }
        let output: URL, excerpt: URL?
        switch storage {
        case .spool(let spool):
            guard spool.contains(assign.outputPath) else {
                return .failed(code: .outputOutsideSpool, reason: "output path \(assign.outputPath) is not inside this "
                               + "worker's spool \(spool.root.path); mount the shared spool at the same path on every machine",
                               retryable: true)
            }
            output = URL(fileURLWithPath: assign.outputPath)
            // A source only the coordinator may open (an object in storage) comes as an excerpt it
            // cut into the spool.
            if let path = assign.excerptPath {
                guard spool.contains(path) else {
                    return .failed(code: .outputOutsideSpool, reason: "source excerpt \(path) is not inside this worker's "
                                   + "spool \(spool.root.path); mount the shared spool at the same path on every machine",
                                   retryable: true)
                }
                excerpt = URL(fileURLWithPath: path)
            } else {
                excerpt = nil
            }
            do {
                try await spool.prepareDirectory(for: output)
            } catch {
                return .failed(code: .spoolUnwritable, reason: "cannot create the spool directory for "
                               + "\(assign.outputPath): \(error)", retryable: true)
            }
        case .transfer(let transfer):
            switch await fetchExcerpt(transfer) {
            case .success(let fetched): excerpt = fetched
            case .failure(let failure): return failure.outcome
            }
            output = transfer.path(of: WorkerTransfer.fileID("r", assign.attempt.leaseToken))
        }
        let clock = ContinuousClock()
        let started = clock.now
        do {
            let result = try await SegmentExporter(plan: order.plan)
                .export(segment: order.segment, to: output, from: excerpt, codecThreads: codecThreads(),
                        progress: progress)
            if case .transfer(let transfer) = storage, let excerpt {
                unlink(excerpt.path)
                await transfer.offer(WorkerTransfer.fileID("r", assign.attempt.leaseToken), path: output.path)
            }
            return .completed(checksum: result.checksum, sizeBytes: result.bytes,
                              encodeMilliseconds: (clock.now - started).wholeMilliseconds, videoFrames: result.videoFrames,
                              figures: result.figures)
        } catch let error as MediaError {
            if error.code == .cancelled { return .cancelled }
            if case .transfer = storage, error.code == .writeFailed, let raw = error.ffmpegCode,
               raw == -ENOSPC || raw == -EDQUOT {
                return .failed(code: .transferFailed, reason: "the scratch directory is full: \(error.message)",
                               retryable: true)
            }
            return .failed(code: Self.failCode(error), reason: error.message, retryable: error.isRetryable)
        } catch let error as SettingsError {
            return .failed(code: .invalidSettings, reason: error.description, retryable: false)
        } catch is CancellationError {
            return .cancelled
        } catch {
            return .failed(code: .internalError, reason: String(describing: error), retryable: true)
        }
    }

    /// Fetches the ASSIGN's excerpt into scratch; the FAIL (or cancellation) when it cannot.
    private func fetchExcerpt(_ transfer: WorkerTransfer) async -> Result<URL, EncodeOutcomeFailure> {
        guard let offer = assign.excerpt else {
            return .failure(EncodeOutcomeFailure(.failed(
                code: .transferFailed, reason: "the ASSIGN for \(assign.attempt) names no source excerpt, and this "
                    + "transfer-mode worker (started without --spool) cannot read the source itself", retryable: true)))
        }
        if let refusal = transfer.reserve(offer.size, for: assign.attempt.leaseToken) {
            return .failure(EncodeOutcomeFailure(.failed(code: .scratchFull, reason: refusal, retryable: true)))
        }
        let destination = transfer.path(of: WorkerTransfer.fileID("x", assign.attempt.leaseToken))
        do {
            _ = try await transfer.port(coordinator).fetch(offer.file, size: offer.size, checksum: offer.checksum,
                                                           from: .upstream, to: destination)
            return .success(destination)
        } catch {
            if error.code == .cancelled { return .failure(EncodeOutcomeFailure(.cancelled)) }
            return .failure(EncodeOutcomeFailure(.failed(
                code: .transferFailed, reason: "cannot fetch the source excerpt \(offer.file): \(error.message)",
                retryable: true)))
        }
    }

    /// FAIL's code for a media error. A full spool is told apart from other write failures: it
    /// is this worker's (or the spool's) trouble, not the segment's (`Fail.Blame`).
    static func failCode(_ error: MediaError) -> Fail.Code {
        if error.code == .writeFailed, let raw = error.ffmpegCode, raw == -ENOSPC || raw == -EDQUOT {
            return .spoolFull
        }
        return failCode(error.code)
    }

    static func failCode(_ code: MediaError.Code) -> Fail.Code {
        switch code {
        case .fileNotFound: .sourceNotFound
        case .invalidMedia: .invalidMedia
        case .noUsableTrack: .noUsableTrack
        case .unsupportedCodec: .encoderMissing
        case .invalidSettings: .invalidSettings
        case .decodeFailed: .undecodableInput
        case .encodeFailed: .encodeFailed
        case .writeFailed: .writeFailed
        case .outputExists: .outputExists
        case .incompatibleSegments: .incompatibleSegments
        case .cancelled: .cancelled
        // Segments are measured, never judged: only a stitch's checks fail this way.
        case .internalError, .qualityBelowThreshold: .internalError
        }
    }
}

/// An ``EncodeOutcome`` that ends an encode before the export, as an error for `Result`.
struct EncodeOutcomeFailure: Error {
    let outcome: EncodeOutcome
    init(_ outcome: EncodeOutcome) { self.outcome = outcome }
}
