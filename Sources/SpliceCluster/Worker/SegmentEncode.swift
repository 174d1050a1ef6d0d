internal import Foundation
internal import Glibc
internal import SpliceConcurrency
internal import SpliceMedia
internal import SpliceWire

/// One ASSIGN carried out: decode its spec (a ``SegmentWorkOrder``), check that its output path is
/// inside the spool, create the job's spool subdirectory, run the ``SegmentExporter`` (on its own
/// thread) and turn what happened into an ``EncodeOutcome``. Cancelling the calling task stops the
/// encode; the exporter then leaves no partial file.
struct SegmentEncode: Sendable {
    let assign: Assign
    let spool: Spool
    let codecThreads: Int

    func run(progress: @escaping @Sendable (Double) -> Void) async -> EncodeOutcome {
        let order: SegmentWorkOrder
        do {
            order = try assign.spec.decode(SegmentWorkOrder.self)
            try order.plan.validate()
        } catch {
            return .failed(code: .invalidSpec, reason: "the ASSIGN for \(assign.attempt) carries no valid segment "
                           + "work order: \(error)", retryable: false)
        }
        guard spool.contains(assign.outputPath) else {
            return .failed(code: .outputOutsideSpool, reason: "output path \(assign.outputPath) is not inside this "
                           + "worker's spool \(spool.root.path); mount the shared spool at the same path on every machine",
                           retryable: true)
        }
        let output = URL(fileURLWithPath: assign.outputPath)
        do {
            try await spool.prepareDirectory(for: output)
        } catch {
            return .failed(code: .spoolUnwritable, reason: "cannot create the spool directory for "
                           + "\(assign.outputPath): \(error)", retryable: true)
        }
        let clock = ContinuousClock()
        let started = clock.now
        do {
            let result = try await SegmentExporter(plan: order.plan)
                .export(segment: order.segment, to: output, codecThreads: codecThreads, progress: progress)
            return .completed(checksum: result.checksum, sizeBytes: result.bytes,
                              encodeMilliseconds: (clock.now - started).wholeMilliseconds, videoFrames: result.videoFrames)
        } catch let error as MediaError {
            if error.code == .cancelled { return .cancelled }
            return .failed(code: Self.failCode(error), reason: error.message, retryable: error.isRetryable)
        } catch let error as SettingsError {
            return .failed(code: .invalidSettings, reason: error.description, retryable: false)
        } catch is CancellationError {
            return .cancelled
        } catch {
            return .failed(code: .internalError, reason: String(describing: error), retryable: true)
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
        case .internalError: .internalError
        }
    }
}
