internal import Foundation
internal import Glibc
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
            return .failed(code: "invalid-spec", reason: "the ASSIGN for \(assign.attempt) carries no valid segment "
                           + "work order: \(error)", retryable: false)
        }
        guard spool.contains(assign.outputPath) else {
            return .failed(code: "output-outside-spool", reason: "output path \(assign.outputPath) is not inside this "
                           + "worker's spool \(spool.root.path); mount the shared spool at the same path on every machine",
                           retryable: true)
        }
        let output = URL(fileURLWithPath: assign.outputPath)
        do {
            try await spool.prepareDirectory(for: output)
        } catch {
            return .failed(code: "spool-unwritable", reason: "cannot create the spool directory for "
                           + "\(assign.outputPath): \(error)", retryable: true)
        }
        let clock = ContinuousClock()
        let started = clock.now
        do {
            let result = try await SegmentExporter(plan: order.plan)
                .export(segment: order.segment, to: output, codecThreads: codecThreads, progress: progress)
            return .completed(checksum: result.checksum, sizeBytes: result.bytes,
                              encodeMilliseconds: Self.milliseconds(clock.now - started))
        } catch let error as MediaError {
            if error.code == .cancelled { return .cancelled }
            return .failed(code: Self.failCode(error), reason: error.message, retryable: error.isRetryable)
        } catch let error as SettingsError {
            return .failed(code: "invalid-settings", reason: error.description, retryable: false)
        } catch is CancellationError {
            return .cancelled
        } catch {
            return .failed(code: "internal-error", reason: String(describing: error), retryable: true)
        }
    }

    /// FAIL's stable `code` for a media error. A full spool is told apart from other write
    /// failures: it is this worker's (or the spool's) trouble, not the segment's (`Fail.Blame`).
    static func failCode(_ error: MediaError) -> String {
        if error.code == .writeFailed, let raw = error.ffmpegCode, raw == -ENOSPC || raw == -EDQUOT {
            return "spool-full"
        }
        return failCode(error.code)
    }

    static func failCode(_ code: MediaError.Code) -> String {
        switch code {
        case .fileNotFound: "source-not-found"
        case .invalidMedia: "invalid-media"
        case .noUsableTrack: "no-usable-track"
        case .unsupportedCodec: "encoder-missing"
        case .invalidSettings: "invalid-settings"
        case .decodeFailed: "undecodable-input"
        case .encodeFailed: "encode-failed"
        case .writeFailed: "write-failed"
        case .outputExists: "output-exists"
        case .incompatibleSegments: "incompatible-segments"
        case .cancelled: "cancelled"
        case .internalError: "internal-error"
        }
    }

    static func milliseconds(_ duration: Duration) -> Int {
        let (seconds, attoseconds) = duration.components
        return Int(clamping: seconds * 1000 + attoseconds / 1_000_000_000_000_000)
    }
}
