public import SpliceMedia

extension SegmentPlanner {
    /// Plans `asset` for the given output: a ``TranscodeRequest`` made of these settings (jobs and
    /// commands plan through ``plan(asset:request:metadata:)``; tests build the request this way).
    public func plan(asset: Asset, video: VideoSettings?, audio: AudioSettings?, fileType: OutputFileType,
                     range: MediaTimeRange? = nil, fastStart: Bool = false,
                     metadata: [String: String] = [:]) async throws -> SegmentPlan {
        let request = TranscodeRequest(video: video, audio: audio, fileType: fileType, range: range,
                                       optimizesForNetworkUse: fastStart, segmentDuration: targetDuration)
        return try await plan(asset: asset, request: request, metadata: metadata)
    }
}
