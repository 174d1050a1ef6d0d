/// A discrete-event simulation of one job on a farm: the coordinator plans it, then every slot
/// asks for a segment as soon as it is free; the coordinator serves those requests one at a time
/// (its and PostgreSQL's serial time per segment: the dispatch ceiling), each segment waits the
/// dispatch latency, its excerpt crosses the coordinator's data link (one transfer at a time each
/// way), it encodes on its slot, and its result crosses back while the slot takes the next one.
/// After the last result the coordinator stitches. Time is integer µs from the job's submission.
///
/// Requests reach the coordinator in time order (the slots are taken from a heap by the time they
/// fall free), so serving them first come, first served is exact, and so is the inbound link,
/// which its dispatches feed in order; results are put through the outbound link in the order
/// their encodes end.
public enum FarmSimulation {
    /// Which segment the coordinator hands out next.
    public enum Order: Sendable, Hashable {
        /// The plan's order.
        case plan
        /// The most expensive first, as the store's claim does (`segments.cost DESC`), ties in plan order.
        case longestFirst
    }

    /// Simulates `segments` (in plan order) on `shape` with `coordinator`'s costs.
    public static func run(
        _ segments: [SegmentCost], on shape: FarmShape, coordinator: CoordinatorCosts,
        order: Order = .longestFirst
    ) throws(FarmModelError) -> FarmPrediction {
        guard !segments.isEmpty else { throw FarmModelError("a job needs at least one segment") }
        if let bad = segments.first(where: { $0.encodeMicroseconds < 0 || $0.inputBytes < 0 || $0.outputBytes < 0 }) {
            throw FarmModelError("a segment's cost cannot be negative: \(bad)")
        }
        let indices: [Int]
        switch order {
        case .plan: indices = Array(segments.indices)
        case .longestFirst:
            indices = segments.indices.sorted {
                (segments[$0].encodeMicroseconds, $1) > (segments[$1].encodeMicroseconds, $0)
            }
        }

        let serial = coordinator.serialMicrosecondsPerSegment
        let start = coordinator.planMicroseconds
        var free = SlotHeap(slots: shape.slots, at: start)
        var coordinatorFree = start
        var inboundFree = start
        var schedule = [ScheduledSegment](
            repeating: ScheduledSegment(
                index: 0, slot: 0, requested: 0, encodeStart: 0,
                encodeEnd: 0, done: 0), count: segments.count)
        for index in indices {
            let cost = segments[index]
            let (slot, requested) = free.popEarliest()
            let dispatched = max(requested, coordinatorFree)
            coordinatorFree = dispatched + serial
            let arrives = coordinatorFree + coordinator.latencyMicroseconds
            let inbound = coordinator.transferMicroseconds(bytes: cost.inputBytes)
            let encodeStart: Int64
            if inbound > 0 {
                inboundFree = max(arrives, inboundFree) + inbound
                encodeStart = inboundFree
            } else {
                encodeStart = arrives
            }
            let encodeEnd = encodeStart + cost.encodeMicroseconds
            free.push(slot: slot, at: encodeEnd)
            schedule[index] = ScheduledSegment(
                index: index, slot: slot, requested: requested, encodeStart: encodeStart,
                encodeEnd: encodeEnd, done: encodeEnd)
        }
        // Results back over the outbound link, in the order their encodes ended.
        var outboundFree = start
        for index in schedule.indices.sorted(by: { (schedule[$0].encodeEnd, $0) < (schedule[$1].encodeEnd, $1) }) {
            let outbound = coordinator.transferMicroseconds(bytes: segments[index].outputBytes)
            guard outbound > 0 else { continue }
            outboundFree = max(schedule[index].encodeEnd, outboundFree) + outbound
            schedule[index].done = outboundFree
        }

        let lastDone = schedule.map(\.done).max() ?? start
        let outputBytes = segments.reduce(Int64(0)) { $0 + $1.outputBytes }
        let stitch = coordinator.stitchMicroseconds(bytes: outputBytes)
        let longest =
            segments.map { segment in
                serial + coordinator.latencyMicroseconds + coordinator.transferMicroseconds(bytes: segment.inputBytes)
                    + segment.encodeMicroseconds + coordinator.transferMicroseconds(bytes: segment.outputBytes)
            }.max() ?? 0
        let encoding = segments.reduce(Int64(0)) { $0 + $1.encodeMicroseconds }
        let transferred = segments.reduce(Int64(0)) {
            $0 + coordinator.transferMicroseconds(bytes: $1.inputBytes)
                + coordinator.transferMicroseconds(bytes: $1.outputBytes)
        }
        return FarmPrediction(
            shape: shape, wallMicroseconds: lastDone + stitch, planMicroseconds: start, stitchMicroseconds: stitch,
            lastSegmentDoneMicroseconds: lastDone, criticalPathMicroseconds: start + longest + stitch,
            busySlotMicroseconds: encoding, coordinatorBusyMicroseconds: serial * Int64(segments.count),
            transferMicroseconds: transferred, schedule: schedule)
    }
}

/// One segment's place in a simulated schedule (µs from submission).
public struct ScheduledSegment: Sendable, Hashable {
    /// Its index in the plan.
    public var index: Int
    /// The slot that ran it, 0 ..< shape.slots (worker = slot ÷ slots per worker).
    public var slot: Int
    /// When its slot fell free and asked for it.
    public var requested: Int64
    public var encodeStart: Int64
    public var encodeEnd: Int64
    /// When its result was at the coordinator (its encode's end with shared storage).
    public var done: Int64
}

/// What the simulation predicts for one job on one farm.
public struct FarmPrediction: Sendable, Hashable {
    public var shape: FarmShape
    /// From submission to the stitched output, µs.
    public var wallMicroseconds: Int64
    public var planMicroseconds: Int64
    public var stitchMicroseconds: Int64
    /// When the last result reached the coordinator, µs.
    public var lastSegmentDoneMicroseconds: Int64
    /// Plan → the longest segment (its dispatch, transfers and encode) → stitch: the wall no farm,
    /// however large, can beat.
    public var criticalPathMicroseconds: Int64
    /// Slot time spent encoding, µs.
    public var busySlotMicroseconds: Int64
    /// The coordinator's (or PostgreSQL's) serial dispatch time over the job, µs.
    public var coordinatorBusyMicroseconds: Int64
    /// The data link's busy time, both ways added, µs.
    public var transferMicroseconds: Int64
    /// Every segment, by plan index.
    public var schedule: [ScheduledSegment]

    /// Busy slot time ÷ (slots × wall): the share of the farm's slot time spent encoding.
    public var utilisation: Double {
        Double(busySlotMicroseconds) / (Double(shape.slots) * Double(max(1, wallMicroseconds)))
    }

    /// The dispatch pipeline's busy share of the time segments were being handed out and run
    /// (plan's end to the last result): near 1, the coordinator is what limits the farm.
    public var coordinatorLoad: Double {
        Double(coordinatorBusyMicroseconds) / Double(max(1, lastSegmentDoneMicroseconds - planMicroseconds))
    }
}

/// The slots' next free times, earliest first (ties: the lowest slot), as a binary heap.
struct SlotHeap {
    private var heap: [(time: Int64, slot: Int)]

    init(slots: Int, at time: Int64) {
        heap = (0..<slots).map { (time, $0) }
    }

    private static func before(_ a: (time: Int64, slot: Int), _ b: (time: Int64, slot: Int)) -> Bool {
        (a.time, a.slot) < (b.time, b.slot)
    }

    mutating func popEarliest() -> (slot: Int, time: Int64) {
        let top = heap[0]
        let last = heap.removeLast()
        if !heap.isEmpty {
            heap[0] = last
            var parent = 0
            while true {
                let left = 2 * parent + 1
                let right = left + 1
                var first = parent
                if left < heap.count, Self.before(heap[left], heap[first]) { first = left }
                if right < heap.count, Self.before(heap[right], heap[first]) { first = right }
                if first == parent { break }
                heap.swapAt(parent, first)
                parent = first
            }
        }
        return (top.slot, top.time)
    }

    mutating func push(slot: Int, at time: Int64) {
        heap.append((time, slot))
        var child = heap.count - 1
        while child > 0 {
            let parent = (child - 1) / 2
            guard Self.before(heap[child], heap[parent]) else { break }
            heap.swapAt(parent, child)
            child = parent
        }
    }
}
