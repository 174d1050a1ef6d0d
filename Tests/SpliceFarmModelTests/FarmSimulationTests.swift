import Testing

@testable import SpliceFarmModel

/// The simulator against schedules whose answer can be written down by hand.
@Suite("FarmSimulation")
struct FarmSimulationTests {
    let costs = CoordinatorCosts(
        planMicroseconds: 5_000, dispatchMicroseconds: 300, latencyMicroseconds: 2_000,
        transferBytesPerSecond: 1_000_000, stitchMicroseconds: 7_000,
        stitchBytesPerSecond: 10_000_000)

    @Test("one slot runs everything in turn: plan + Σ(dispatch + transfer + encode) + the last result + stitch")
    func oneSlotIsTheSum() throws {
        let segments = [
            SegmentCost(encodeMicroseconds: 40_000, inputBytes: 1_000, outputBytes: 500),
            SegmentCost(encodeMicroseconds: 90_000, inputBytes: 3_000, outputBytes: 2_000),
            SegmentCost(encodeMicroseconds: 10_000, inputBytes: 2_000, outputBytes: 1_000),
        ]
        let shape = try FarmShape(workers: 1, slotsPerWorker: 1, coresPerWorker: 1)
        let prediction = try FarmSimulation.run(segments, on: shape, coordinator: costs)
        // 1 MB/s: a byte is a µs. Longest first: 90 ms, 40 ms, 10 ms; the results cross back while
        // the next segment runs, so only the last one's (1,000 bytes) adds to the wall.
        let perSegment = [(90_000, 3_000), (40_000, 1_000), (10_000, 2_000)].map { 300 + 2_000 + $0.1 + $0.0 }
        let stitch = 7_000 + (500 + 2_000 + 1_000) / 10
        #expect(prediction.wallMicroseconds == Int64(5_000 + perSegment.reduce(0, +) + 1_000 + stitch))
        #expect(prediction.schedule.map(\.slot) == [0, 0, 0])
        #expect(prediction.schedule[2].done == prediction.lastSegmentDoneMicroseconds)
    }

    @Test("N equal segments on N slots take one segment's time")
    func equalSegmentsOnEqualSlots() throws {
        let segments = Array(repeating: SegmentCost(encodeMicroseconds: 250_000), count: 12)
        let shape = try FarmShape(workers: 3, slotsPerWorker: 4, coresPerWorker: 8)
        let coordinator = CoordinatorCosts(planMicroseconds: 1_000, stitchMicroseconds: 2_000)
        let prediction = try FarmSimulation.run(segments, on: shape, coordinator: coordinator)
        #expect(prediction.wallMicroseconds == 1_000 + 250_000 + 2_000)
        #expect(Set(prediction.schedule.map(\.slot)).count == 12)
        // Every slot encodes for the whole wall but the plan and the stitch.
        #expect(abs(prediction.utilisation - 250_000.0 / 253_000.0) < 1e-12)
    }

    @Test("with a slot for every segment, the wall is the critical path: plan + the longest segment's chain + stitch")
    func criticalPath() throws {
        let segments = [10_000, 70_000, 30_000, 69_000].map {
            SegmentCost(encodeMicroseconds: Int64($0), inputBytes: 100)
        }
        let shape = try FarmShape(workers: 4, slotsPerWorker: 1, coresPerWorker: 1)
        let coordinator = CoordinatorCosts(
            planMicroseconds: 3_000, latencyMicroseconds: 500,
            transferBytesPerSecond: 1_000_000, stitchMicroseconds: 4_000)
        let prediction = try FarmSimulation.run(segments, on: shape, coordinator: coordinator)
        #expect(prediction.criticalPathMicroseconds == 3_000 + 500 + 100 + 70_000 + 4_000)
        // The longest is dispatched first, so nothing queues ahead of it.
        #expect(prediction.wallMicroseconds == prediction.criticalPathMicroseconds)
        // Fewer slots than segments: the wall is longer than the critical path, never shorter.
        let two = try FarmSimulation.run(
            segments, on: try FarmShape(workers: 2, slotsPerWorker: 1, coresPerWorker: 1),
            coordinator: coordinator)
        #expect(two.criticalPathMicroseconds == prediction.criticalPathMicroseconds)
        #expect(two.wallMicroseconds > two.criticalPathMicroseconds)
    }

    @Test("a dispatch rate below what the slots could take binds: segments leave the coordinator one per serial time")
    func dispatchCeiling() throws {
        // 100 slots, 100 segments of 1 ms, 100 µs of coordinator per segment: the last one is
        // handed out at 100 × 100 µs and ends 1 ms later; PostgreSQL at 60 µs does not bind.
        let segments = Array(repeating: SegmentCost(encodeMicroseconds: 1_000), count: 100)
        let shape = try FarmShape(workers: 100, slotsPerWorker: 1, coresPerWorker: 1)
        let coordinator = CoordinatorCosts(dispatchMicroseconds: 100, databaseMicroseconds: 60)
        let prediction = try FarmSimulation.run(segments, on: shape, coordinator: coordinator)
        #expect(prediction.wallMicroseconds == 100 * 100 + 1_000)
        #expect(prediction.coordinatorLoad > 0.9)
        // PostgreSQL slower than the coordinator: its time is the ceiling.
        let database = CoordinatorCosts(dispatchMicroseconds: 100, databaseMicroseconds: 250)
        #expect(
            try FarmSimulation.run(segments, on: shape, coordinator: database).wallMicroseconds == 100 * 250 + 1_000)
        // The same work with no ceiling: one segment's time.
        #expect(try FarmSimulation.run(segments, on: shape, coordinator: CoordinatorCosts()).wallMicroseconds == 1_000)
    }

    @Test("utilisation is busy slot time over slots × wall")
    func utilisation() throws {
        // Three equal segments on two slots: two waves, the second half empty.
        let segments = Array(repeating: SegmentCost(encodeMicroseconds: 1_000), count: 3)
        let prediction = try FarmSimulation.run(
            segments, on: try FarmShape(workers: 1, slotsPerWorker: 2, coresPerWorker: 2),
            coordinator: CoordinatorCosts())
        #expect(prediction.wallMicroseconds == 2_000)
        #expect(prediction.busySlotMicroseconds == 3_000)
        #expect(prediction.utilisation == 0.75)
    }

    @Test("longest first keeps the long segment off the tail")
    func claimOrder() throws {
        let segments = [1_000, 1_000, 2_000].map { SegmentCost(encodeMicroseconds: Int64($0)) }
        let shape = try FarmShape(workers: 2, slotsPerWorker: 1, coresPerWorker: 1)
        #expect(try FarmSimulation.run(segments, on: shape, coordinator: CoordinatorCosts()).wallMicroseconds == 2_000)
        #expect(
            try FarmSimulation.run(segments, on: shape, coordinator: CoordinatorCosts(), order: .plan)
                .wallMicroseconds == 3_000)
    }

    @Test("the inbound link carries one excerpt at a time")
    func sharedLink() throws {
        // Two slots, two segments of 1,000 bytes at 1 MB/s: the second excerpt waits for the first.
        let segments = Array(repeating: SegmentCost(encodeMicroseconds: 5_000, inputBytes: 1_000), count: 2)
        let prediction = try FarmSimulation.run(
            segments, on: try FarmShape(workers: 2, slotsPerWorker: 1, coresPerWorker: 1),
            coordinator: CoordinatorCosts(transferBytesPerSecond: 1_000_000))
        #expect(prediction.schedule.map(\.encodeStart).sorted() == [1_000, 2_000])
        #expect(prediction.wallMicroseconds == 7_000)
    }

    @Test("bad shapes and jobs are refused with a reason")
    func refusals() {
        #expect(throws: FarmModelError.self) { try FarmShape(workers: 0, slotsPerWorker: 1, coresPerWorker: 1) }
        #expect(throws: FarmModelError.self) { try FarmShape(workers: 1, slotsPerWorker: 4, coresPerWorker: 2) }
        #expect(throws: FarmModelError.self) {
            try FarmSimulation.run(
                [], on: try FarmShape(workers: 1, slotsPerWorker: 1, coresPerWorker: 1),
                coordinator: CoordinatorCosts())
        }
    }

    @Test("transfer and stitch times round up to whole µs")
    func integerTime() {
        #expect(FarmTime.microseconds(bytes: 1, perSecond: 3) == 333_334)
        #expect(FarmTime.microseconds(bytes: 0, perSecond: 3) == 0)
        // Far past Int64 if multiplied naively: 9 EB at 1 GB/s.
        #expect(
            FarmTime.microseconds(bytes: 9_000_000_000_000_000_000, perSecond: 1_000_000_000) == 9_000_000_000_000_000)
        #expect(FarmTime.text(61_250_000) == "61.3 s")
        #expect(FarmTime.text(900_000_000) == "15.0 min")
    }
}

@Suite("SegmentCostModel")
struct SegmentCostModelTests {
    @Test("a fit through points on a line recovers its fixed and per-frame cost")
    func fitLine() throws {
        // 200 ms per segment, 55.5 ms per frame.
        let samples = [24, 48, 48, 192].map {
            SegmentCostModel.Sample(
                frames: $0, cpuMicroseconds: 200_000 + Int64($0) * 55_500, bytes: Int64($0) * 10_000)
        }
        let model = try SegmentCostModel.fit(samples)
        #expect(model.fixedMicroseconds == 200_000)
        #expect(model.perFrameNanoseconds == 55_500_000)
        #expect(model.outputBytesPerFrame == 10_000)
        #expect(model.cpuMicroseconds(frames: 100) == 200_000 + 5_550_000)
        let quadrupled = model.scaled(pixelsFrom: 960 * 540, to: 1920 * 1080)
        #expect(quadrupled.perFrameNanoseconds == 222_000_000)
        #expect(quadrupled.fixedMicroseconds == 200_000)
    }

    @Test("one segment length cannot separate the fixed cost from the per-frame cost")
    func fitNeedsTwoLengths() {
        #expect(throws: FarmModelError.self) {
            try SegmentCostModel.fit([
                SegmentCostModel.Sample(frames: 48, cpuMicroseconds: 1_000),
                SegmentCostModel.Sample(frames: 48, cpuMicroseconds: 1_100),
            ])
        }
    }

    @Test("Amdahl's law at its ends and from a measured speed-up")
    func scaling() throws {
        #expect(try EncoderScaling(parallelFraction: 1).speedUp(threads: 16) == 16)
        #expect(try EncoderScaling(parallelFraction: 0).speedUp(threads: 16) == 1)
        // 1.9× on 2 threads is p = 2 × (1 − 1/1.9).
        let measured = try EncoderScaling(speedUp: 1.9, threads: 2)
        #expect(abs(measured.parallelFraction - 2 * (1 - 1 / 1.9)) < 1e-12)
        #expect(abs(measured.speedUp(threads: 2) - 1.9) < 1e-12)
        #expect(throws: FarmModelError.self) { try EncoderScaling(speedUp: 3, threads: 2) }
    }

    @Test("a film is cut into equal segments and the rest")
    func filmSegments() throws {
        let film = try FilmJob(seconds: 100, framesPerSecond: 24)
        #expect(try film.segmentFrames(segmentSeconds: 30) == [720, 720, 720, 240])
        #expect(try film.segmentFrames(segmentSeconds: 100) == [2_400])
    }

    @Test("the best segment length trades the fixed cost against the tail")
    func bestLength() throws {
        // 4 slots, 96 s of film at 1 fps, 1 s per frame and 10 s per segment: 24 s segments give
        // one wave of four (4 × (10 + 24) = 34 s); 12 s segments two waves (2 × 22 = 44 s); 48 s
        // segments leave two slots idle (58 s); 96 s one segment (106 s).
        let film = try FilmJob(seconds: 96, framesPerSecond: 1)
        let model = SegmentCostModel(fixedMicroseconds: 10_000_000, perFrameNanoseconds: 1_000_000_000)
        let shape = try FarmShape(workers: 4, slotsPerWorker: 1, coresPerWorker: 1)
        let best = try film.bestSegmentLength(
            candidates: [12, 24, 48, 96], shape: shape, model: model,
            scaling: try EncoderScaling(parallelFraction: 1), coordinator: CoordinatorCosts())
        #expect(best.segmentSeconds == 24)
        #expect(best.prediction.wallMicroseconds == 34_000_000)
    }
}
