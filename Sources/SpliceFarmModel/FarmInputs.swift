/// The shape of a farm: `workers` machines, each running `slotsPerWorker` segment encodes at once
/// on `coresPerWorker` cores (each slot's encoder gets `coresPerWorker / slotsPerWorker` threads).
public struct FarmShape: Sendable, Hashable, CustomStringConvertible {
    public var workers: Int
    public var slotsPerWorker: Int
    public var coresPerWorker: Int

    /// Refuses a shape with no workers, no slots or no cores, or more slots than cores.
    public init(workers: Int, slotsPerWorker: Int, coresPerWorker: Int) throws(FarmModelError) {
        guard workers >= 1 else { throw FarmModelError("a farm needs at least one worker; got \(workers)") }
        guard slotsPerWorker >= 1 else {
            throw FarmModelError("a worker needs at least one slot; got \(slotsPerWorker)")
        }
        guard coresPerWorker >= slotsPerWorker else {
            throw FarmModelError("\(slotsPerWorker) slots need at least as many cores; got \(coresPerWorker)")
        }
        self.workers = workers
        self.slotsPerWorker = slotsPerWorker
        self.coresPerWorker = coresPerWorker
    }

    /// Segment encodes the whole farm runs at once.
    public var slots: Int { workers * slotsPerWorker }
    /// Encoder threads per slot: the worker's cores shared evenly (any remainder left idle).
    public var threadsPerSlot: Int { coresPerWorker / slotsPerWorker }

    public var description: String { "\(workers) workers × \(slotsPerWorker) slots × \(coresPerWorker) cores" }
}

/// What one segment costs where it runs: its encode on one slot (in that slot's threads, lead-in
/// decoding, encoder start-up and flush included) and the bytes moved to and from the worker.
public struct SegmentCost: Sendable, Hashable {
    /// Wall time of the encode on its slot, µs.
    public var encodeMicroseconds: Int64
    /// The source excerpt sent to the worker (0 when workers read shared storage).
    public var inputBytes: Int64
    /// The encoded segment: sent back to the coordinator in transfer mode, and read by the stitch.
    public var outputBytes: Int64

    public init(encodeMicroseconds: Int64, inputBytes: Int64 = 0, outputBytes: Int64 = 0) {
        self.encodeMicroseconds = encodeMicroseconds
        self.inputBytes = inputBytes
        self.outputBytes = outputBytes
    }
}

/// What the coordinator (and what it depends on) costs a job: planning before any segment runs,
/// a serial share of its time and of PostgreSQL's for every segment dispatched (the ceilings on
/// the dispatch rate), the latency each segment waits between its slot asking and its encode
/// starting, its data link's bandwidth and the stitch after the last segment.
public struct CoordinatorCosts: Sendable, Hashable {
    /// Planning the job, µs.
    public var planMicroseconds: Int64
    /// The coordinator's own serial time per segment (claim share, ASSIGN, commit share, ACK), µs:
    /// 1 s ÷ this is its dispatch rate.
    public var dispatchMicroseconds: Int64
    /// PostgreSQL's serial time per segment (its statements' shares: the claim, the completion), µs.
    public var databaseMicroseconds: Int64
    /// From the coordinator starting a segment's dispatch to the worker's encode starting (the
    /// ASSIGN's trip, opening the source), plus the COMPLETE's trip back, µs.
    public var latencyMicroseconds: Int64
    /// The coordinator's data link, each way, bytes per second; nil when workers share storage
    /// with it (no copies: the figures' input and output bytes are then ignored).
    public var transferBytesPerSecond: Int64?
    /// The stitch's fixed cost (opening, writing the index), µs.
    public var stitchMicroseconds: Int64
    /// The stitch's rate over the segments' bytes, bytes per second.
    public var stitchBytesPerSecond: Int64

    public init(
        planMicroseconds: Int64 = 0, dispatchMicroseconds: Int64 = 0, databaseMicroseconds: Int64 = 0,
        latencyMicroseconds: Int64 = 0, transferBytesPerSecond: Int64? = nil, stitchMicroseconds: Int64 = 0,
        stitchBytesPerSecond: Int64 = .max
    ) {
        self.planMicroseconds = planMicroseconds
        self.dispatchMicroseconds = dispatchMicroseconds
        self.databaseMicroseconds = databaseMicroseconds
        self.latencyMicroseconds = latencyMicroseconds
        self.transferBytesPerSecond = transferBytesPerSecond
        self.stitchMicroseconds = stitchMicroseconds
        self.stitchBytesPerSecond = stitchBytesPerSecond
    }

    /// The serial time each dispatch holds the coordinator's pipeline: the slower of its own share
    /// and PostgreSQL's (the two run in different processes, so they overlap).
    public var serialMicrosecondsPerSegment: Int64 { max(dispatchMicroseconds, databaseMicroseconds) }

    /// The stitch of segments totalling `bytes`, µs.
    public func stitchMicroseconds(bytes: Int64) -> Int64 {
        stitchMicroseconds + FarmTime.microseconds(bytes: bytes, perSecond: stitchBytesPerSecond)
    }

    /// Moving `bytes` over the data link, µs (0 with shared storage).
    public func transferMicroseconds(bytes: Int64) -> Int64 {
        guard let rate = transferBytesPerSecond else { return 0 }
        return FarmTime.microseconds(bytes: bytes, perSecond: rate)
    }
}

/// Bad input to the model, for people.
public struct FarmModelError: Error, Sendable, Hashable, CustomStringConvertible {
    public var description: String
    public init(_ description: String) { self.description = description }
}

/// Integer time arithmetic, in one place.
public enum FarmTime {
    /// `bytes` at `perSecond` bytes a second, in µs, rounded up (0 bytes take no time).
    public static func microseconds(bytes: Int64, perSecond: Int64) -> Int64 {
        guard bytes > 0 else { return 0 }
        precondition(perSecond > 0, "a rate must be positive")
        let (high, low) = bytes.multipliedFullWidth(by: 1_000_000)
        let (quotient, remainder) = perSecond.dividingFullWidth((high, low))
        return quotient + (remainder > 0 ? 1 : 0)
    }

    /// µs as seconds with one decimal, for people (`123.4 s`), or minutes beyond ten minutes (`12.3 min`).
    public static func text(_ microseconds: Int64) -> String {
        func tenths(_ value: Int64, _ unit: Int64) -> String {
            let rounded = (value * 10 + unit / 2) / unit
            return "\(rounded / 10).\(rounded % 10)"
        }
        if microseconds >= 600_000_000 { return tenths(microseconds, 60_000_000) + " min" }
        return tenths(microseconds, 1_000_000) + " s"
    }
}
