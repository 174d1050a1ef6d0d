/// How far a job's running attempts are (`CoordinatorStateMachine.runningProgress(ofJob:)`).
package struct RunningProgress: Sendable, Hashable {
    /// Summed PROGRESS fractions: segments' worth of work done.
    package var segments: Double
    /// Summed fractions × segment costs: cost's worth of work done.
    package var cost: Double

    package init(segments: Double = 0, cost: Double = 0) {
        self.segments = segments
        self.cost = cost
    }

    /// The progress of one job's attempts (segment, PROGRESS fraction, cost), counting each
    /// segment once: a segment with a backup running counts the further of its two attempts.
    init(_ attempts: [(segment: Int, fraction: Double, cost: Int64)]) {
        var furthest: [Int: (fraction: Double, cost: Int64)] = [:]
        for attempt in attempts where furthest[attempt.segment].map({ attempt.fraction > $0.fraction }) ?? true {
            furthest[attempt.segment] = (attempt.fraction, attempt.cost)
        }
        self.init(segments: furthest.values.reduce(0) { $0 + $1.fraction },
                  cost: furthest.values.reduce(0) { $0 + $1.fraction * Double($1.cost) })
    }
}
