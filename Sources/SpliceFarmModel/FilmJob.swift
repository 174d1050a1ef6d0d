/// A whole film to be cut into segments of equal length (the last one takes what is left), as a
/// planner does on a source with a keyframe at every candidate cut.
public struct FilmJob: Sendable, Hashable {
    public var frames: Int
    public var framesPerSecond: Int
    /// Source bytes per frame: what an excerpt carries to a worker in transfer mode.
    public var sourceBytesPerFrame: Int64

    public init(seconds: Int, framesPerSecond: Int, sourceBytesPerFrame: Int64 = 0) throws(FarmModelError) {
        guard seconds >= 1, framesPerSecond >= 1 else {
            throw FarmModelError(
                "a film needs a length and a frame rate of at least 1; got \(seconds) s at \(framesPerSecond) fps")
        }
        frames = seconds * framesPerSecond
        self.framesPerSecond = framesPerSecond
        self.sourceBytesPerFrame = sourceBytesPerFrame
    }

    /// The frames of each segment when cut every `segmentSeconds` seconds.
    public func segmentFrames(segmentSeconds: Int) throws(FarmModelError) -> [Int] {
        guard segmentSeconds >= 1 else { throw FarmModelError("a segment is at least 1 s long; got \(segmentSeconds)") }
        let length = segmentSeconds * framesPerSecond
        return stride(from: 0, to: frames, by: length).map { min(length, frames - $0) }
    }

    /// The segments' costs on a slot of `threads` threads, from `model` and `scaling`.
    public func segments(
        segmentSeconds: Int, model: SegmentCostModel, scaling: EncoderScaling,
        threads: Int
    ) throws(FarmModelError) -> [SegmentCost] {
        try segmentFrames(segmentSeconds: segmentSeconds).map { frames in
            SegmentCost(
                encodeMicroseconds: scaling.wallMicroseconds(
                    cpuMicroseconds: model.cpuMicroseconds(frames: frames),
                    threads: threads),
                inputBytes: sourceBytesPerFrame * Int64(frames),
                outputBytes: model.outputBytesPerFrame * Int64(frames))
        }
    }

    /// One encoder over the whole film on `threads` threads (no segments, no plan, no stitch), µs.
    public func singleEncoderMicroseconds(model: SegmentCostModel, scaling: EncoderScaling, threads: Int) -> Int64 {
        scaling.wallMicroseconds(cpuMicroseconds: model.cpuMicroseconds(frames: frames), threads: threads)
    }

    /// Simulates the film at every candidate segment length and returns the one with the shortest
    /// wall (ties: the longer segments, which cost less), with its prediction.
    public func bestSegmentLength(
        candidates: [Int], shape: FarmShape, model: SegmentCostModel, scaling: EncoderScaling,
        coordinator: CoordinatorCosts
    ) throws(FarmModelError) -> (segmentSeconds: Int, prediction: FarmPrediction) {
        var best: (segmentSeconds: Int, prediction: FarmPrediction)?
        for seconds in candidates.sorted(by: >) {
            let segments = try segments(
                segmentSeconds: seconds, model: model, scaling: scaling,
                threads: shape.threadsPerSlot)
            let prediction = try FarmSimulation.run(segments, on: shape, coordinator: coordinator)
            if best.map({ prediction.wallMicroseconds < $0.prediction.wallMicroseconds }) ?? true {
                best = (seconds, prediction)
            }
        }
        guard let best else { throw FarmModelError("no candidate segment lengths") }
        return best
    }
}
