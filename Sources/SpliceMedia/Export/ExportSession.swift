public import Foundation
import Synchronization

/// Exports one asset (or a time range of it) to a file: decode → scale/rotate → encode → mux,
/// or packet pass-through for a track whose settings are `nil`.
///
/// Configure the properties, then `try await export()`. Progress is observable through
/// ``progressUpdates``; ``cancel()`` (or cancelling the awaiting task) stops the work and removes
/// the partial output. Encoding runs on a dedicated thread, never on Swift's cooperative pool.
/// A session exports once.
public final class ExportSession: Sendable {
    /// Where an export stands.
    public enum Status: String, Sendable, Codable {
        case unknown, exporting, completed, failed, cancelled
    }

    /// What the export wrote, for callers that check or report it.
    public struct Summary: Sendable, Hashable, Codable {
        /// Video frames written.
        public var videoFrames: Int
        /// Audio samples encoded (at the output rate, excluding encoder priming).
        public var audioSamples: Int64
        /// The output size in bytes.
        public var bytes: Int64
        /// Adjustments made to the requested settings ("width 1279 rounded to 1280 …").
        public var notices: [String]
    }

    private struct Configuration: Sendable {
        var outputFileType: OutputFileType?
        var videoSettings: VideoSettings?
        var audioSettings: AudioSettings?
        var includesVideo = true
        var includesAudio = true
        var timeRange: MediaTimeRange?
        var optimizesForNetworkUse = false
        var metadata: [String: String] = [:]
        var codecThreads = 0
        var overwritesExistingFile = false
        var audioTrackSelection = AudioTrackSelection.all
        var subtitles = TrackPolicy.copy
        var dataTracks = TrackPolicy.copy
        var annotations: [TimedAnnotation] = []
    }

    private struct State: Sendable {
        var status: Status = .unknown
        var error: MediaError?
        var progress: Double = 0
        var summary: Summary?
        var observers: [UUID: AsyncStream<Double>.Continuation] = [:]
    }

    /// The source.
    public let asset: Asset
    /// Where the output goes: a path, or a location in storage (`s3://BUCKET/KEY`,
    /// ``StorageRegistry``). A file is written beside its final name (an object streams into an
    /// upload) and appears only when the export succeeds. It may not be the source; an output
    /// already there is an error unless ``overwritesExistingFile`` is set (see ``OutputDestination``).
    public let output: String

    /// ``output`` as a URL: a file URL for a path, the location's own URL for storage.
    public var outputURL: URL {
        StorageRegistry.isStored(output) ? URL(string: output) ?? URL(fileURLWithPath: output) : URL(fileURLWithPath: output)
    }

    private let configuration: Mutex<Configuration>
    private let state = Mutex(State())
    private let cancelFlag = CancelFlag()

    /// A session that exports `asset` to the file at `outputURL`.
    public convenience init(asset: Asset, outputURL: URL) {
        self.init(asset: asset, output: outputURL.path)
    }

    /// A session that exports `asset` to `output`: a path, or a location in storage.
    public init(asset: Asset, output: String) {
        self.asset = asset
        self.output = output
        configuration = Mutex(Configuration())
    }

    // MARK: - Settings (read when export() starts)

    /// The container; `nil` picks it from the output file's extension.
    public var outputFileType: OutputFileType? {
        get { configuration.withLock { $0.outputFileType } }
        set { configuration.withLock { $0.outputFileType = newValue } }
    }
    /// How to encode video; `nil` copies the video packets unchanged (pass-through).
    public var videoSettings: VideoSettings? {
        get { configuration.withLock { $0.videoSettings } }
        set { configuration.withLock { $0.videoSettings = newValue } }
    }
    /// How to encode audio; `nil` copies the audio packets unchanged (pass-through).
    public var audioSettings: AudioSettings? {
        get { configuration.withLock { $0.audioSettings } }
        set { configuration.withLock { $0.audioSettings = newValue } }
    }
    /// Whether the output has the source's video track (default true).
    public var includesVideo: Bool {
        get { configuration.withLock { $0.includesVideo } }
        set { configuration.withLock { $0.includesVideo = newValue } }
    }
    /// Whether the output has the source's audio (default true): the tracks
    /// ``audioTrackSelection`` names.
    public var includesAudio: Bool {
        get { configuration.withLock { $0.includesAudio } }
        set { configuration.withLock { $0.includesAudio = newValue } }
    }
    /// Which audio tracks the output carries (default: all), each encoded with
    /// ``audioSettings`` (or copied), keeping its language, title and flags.
    public var audioTrackSelection: AudioTrackSelection {
        get { configuration.withLock { $0.audioTrackSelection } }
        set { configuration.withLock { $0.audioTrackSelection = newValue } }
    }
    /// Subtitle tracks: carried over, converted where the container needs it (default), or left out.
    public var subtitles: TrackPolicy {
        get { configuration.withLock { $0.subtitles } }
        set { configuration.withLock { $0.subtitles = newValue } }
    }
    /// Data tracks — timed metadata, timecode — carried over (default) or left out.
    public var dataTracks: TrackPolicy {
        get { configuration.withLock { $0.dataTracks } }
        set { configuration.withLock { $0.dataTracks = newValue } }
    }
    /// Timed annotations written as a metadata track beside the video, the way Apple's
    /// AAPLTimedAnnotationWriter does (MP4/MOV outputs only).
    public var annotations: [TimedAnnotation] {
        get { configuration.withLock { $0.annotations } }
        set { configuration.withLock { $0.annotations = newValue } }
    }
    /// The part of the asset (in asset time) to export; `nil` exports all of it. Re-encoded video
    /// is frame-accurate: decoding starts at the keyframe before the start and frames before it
    /// are dropped. Audio is cut to the sample.
    public var timeRange: MediaTimeRange? {
        get { configuration.withLock { $0.timeRange } }
        set { configuration.withLock { $0.timeRange = newValue } }
    }
    /// Put the MP4/MOV index (`moov`) before the media data so playback can start while downloading.
    public var optimizesForNetworkUse: Bool {
        get { configuration.withLock { $0.optimizesForNetworkUse } }
        set { configuration.withLock { $0.optimizesForNetworkUse = newValue } }
    }
    /// Global tags written to the output, on top of the source's tags.
    public var metadata: [String: String] {
        get { configuration.withLock { $0.metadata } }
        set { configuration.withLock { $0.metadata = newValue } }
    }
    /// Threads each decoder and encoder may use; 0 lets FFmpeg decide (all cores). Set 1 when
    /// running several exports side by side.
    public var codecThreads: Int {
        get { configuration.withLock { $0.codecThreads } }
        set { configuration.withLock { $0.codecThreads = max(0, newValue) } }
    }

    /// Whether the export may replace a file already at ``output`` (default false: the export
    /// fails with ``MediaError/Code/outputExists`` before any work, and also at the end if a file
    /// appeared there meanwhile). Even when true, the source itself is never replaced.
    public var overwritesExistingFile: Bool {
        get { configuration.withLock { $0.overwritesExistingFile } }
        set { configuration.withLock { $0.overwritesExistingFile = newValue } }
    }

    // MARK: - State

    /// Where the export stands.
    public var status: Status { state.withLock { $0.status } }
    /// Why the export failed, once it has.
    public var error: MediaError? { state.withLock { $0.error } }
    /// How far the export is, 0…1.
    public var progress: Double { state.withLock { $0.progress } }
    /// What was written, once the export completed.
    public var summary: Summary? { state.withLock { $0.summary } }

    /// A stream of progress values (0…1, rising) that finishes when the export ends.
    /// Each access returns a new subscription.
    public var progressUpdates: AsyncStream<Double> {
        let (stream, continuation) = AsyncStream<Double>.makeStream(bufferingPolicy: .bufferingNewest(1))
        let id = UUID()
        let finished = state.withLock { s -> Bool in
            switch s.status {
            case .completed, .failed, .cancelled:
                return true
            default:
                s.observers[id] = continuation
                continuation.yield(s.progress)
                return false
            }
        }
        if finished {
            continuation.yield(state.withLock { $0.progress })
            continuation.finish()
        }
        continuation.onTermination = { [weak self] _ in
            self?.state.withLock { _ = $0.observers.removeValue(forKey: id) }
        }
        return stream
    }

    /// Stops the export; ``export()`` then throws a ``MediaError`` with code `cancelled` and the
    /// partial output is removed. Safe to call from any thread, any number of times.
    public func cancel() {
        cancelFlag.set()
    }

    /// Runs the export. Throws ``MediaError`` (or ``SettingsError`` for invalid settings); an
    /// output that may not or cannot be written (``OutputDestination``) fails before any encoding.
    public func export() async throws {
        let started = state.withLock { s -> Bool in
            guard s.status == .unknown else { return false }
            s.status = .exporting
            return true
        }
        guard started else {
            throw MediaError(.internalError, "this export session has already run; create a new one")
        }
        let config = configuration.withLock { $0 }
        do {
            let flag = cancelFlag
            let asset = self.asset
            let destination = output
            let (plan, result) = try await withTaskCancellationHandler {
                try await BlockingThread.run("splice.export") { [weak self] in
                    let request = OutputTracks.Request(
                        video: config.includesVideo ? (config.videoSettings.map { .encode($0) } ?? .copy) : .drop,
                        audio: config.includesAudio ? (config.audioSettings.map { .encode($0) } ?? .copy) : .drop,
                        audioTracks: config.audioTrackSelection, subtitles: config.subtitles, dataTracks: config.dataTracks,
                        codecThreads: config.codecThreads)
                    let plan = try ExportPlan.make(
                        asset: asset, destination: destination, fileType: config.outputFileType, tracks: request,
                        timeRange: config.timeRange, fastStart: config.optimizesForNetworkUse, metadata: config.metadata,
                        annotations: config.annotations, codecThreads: config.codecThreads,
                        replacing: config.overwritesExistingFile)
                    try OutputDestination.check(output: plan.destination, inputs: [asset.location],
                                                overwrite: config.overwritesExistingFile)
                    let pipeline = ExportPipeline(plan: plan, isCancelled: { flag.isSet }) { fraction in
                        self?.report(progress: fraction)
                    }
                    return (plan, try pipeline.run())
                }
            } onCancel: {
                flag.set()
            }
            let bytes = result.outputBytes ?? 0
            finish(.completed, error: nil, summary: Summary(videoFrames: result.videoFrames, audioSamples: result.audioSamples,
                                                            bytes: bytes, notices: plan.notices))
        } catch let error as MediaError {
            finish(error.code == .cancelled ? .cancelled : .failed, error: error, summary: nil)
            throw error
        } catch let error as SettingsError {
            finish(.failed, error: MediaError(.invalidSettings, error.description), summary: nil)
            throw error
        } catch {
            let wrapped = MediaError(.internalError, "export of '\(asset.location)' failed: \(error)")
            finish(.failed, error: wrapped, summary: nil)
            throw wrapped
        }
    }

    private func report(progress: Double) {
        state.withLock { s in
            guard progress > s.progress else { return }
            s.progress = min(progress, 1)
            for c in s.observers.values { c.yield(s.progress) }
        }
    }

    private func finish(_ status: Status, error: MediaError?, summary: Summary?) {
        let observers = state.withLock { s -> [AsyncStream<Double>.Continuation] in
            s.status = status
            s.error = error
            s.summary = summary
            if status == .completed {
                s.progress = 1
            }
            defer { s.observers.removeAll() }
            return Array(s.observers.values)
        }
        for c in observers {
            if status == .completed { c.yield(1) }
            c.finish()
        }
    }
}
