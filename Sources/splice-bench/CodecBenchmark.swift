import Foundation
import SpliceCore
import SpliceJSON
import SpliceMedia
import SpliceWire
import SpliceDaemon

/// `splice-bench codec [iterations] [only]`: what encoding and decoding the worker protocol's messages
/// costs, message by message, on the cluster's hot path (per segment: one ASSIGN and two ACKs
/// written, one ACCEPT and one COMPLETE read by the coordinator; the reverse by a worker). No
/// sockets, no database: one thread, the codec alone.
enum CodecBenchmark {
    static func run(_ arguments: [String]) throws {
        let iterations = arguments.first.flatMap { Int($0) } ?? 20_000
        // With `only`, the cases whose label contains it (for counting one case's instructions).
        only = arguments.dropFirst().first
        let codec = WireCodec()
        let plan = try samplePlan(segments: 1250)
        let attempt = SegmentAttempt(job: JobID(UUID()), segment: 617, attempt: 1, leaseToken: LeaseToken(UUID()))
        let checksum = SHA256Digest(bytes: [UInt8](repeating: 0xAB, count: 32))!
        let assign = Assign(
            attempt: attempt, outputPath: "/spool/jobs/\(attempt.job)/segment-00617.a1-\(attempt.leaseToken).splseg",
            leaseMilliseconds: 60_000, progressIntervalMilliseconds: 5_000,
            spec: try JSONPayload(encoding: SegmentWorkOrder(plan: plan, segment: 617)))
        let accept = try codec.encode(WorkerMessage.accept(Accept(attempt: attempt)))
        let complete = try codec.encode(WorkerMessage.complete(Complete(
            attempt: attempt, outputPath: assign.outputPath, checksum: checksum, sizeBytes: 1234, encodeMilliseconds: 5)))
        let ack = CoordinatorMessage.ack(Ack(attempt: attempt, acknowledges: .complete, outcome: .accepted))
        let assignFrames = try codec.encode(CoordinatorMessage.assign(assign))
        print("splice-bench codec: \(iterations) iterations each; ASSIGN is \(assignFrames[0].count) bytes "
              + "(a plan of \(plan.segments.count) segments cut to one)")

        var skeleton = plan
        skeleton.segments = [plan.segments[617]]
        let order = SegmentWorkOrder(plan: skeleton, segment: 617)
        measure("coordinator: work order encoded (JSONPayload)", iterations) { _ = try JSONPayload(encoding: order) }
        measure("coordinator: ASSIGN written", iterations) { _ = try codec.encode(CoordinatorMessage.assign(assign)) }
        measure("coordinator: ACK written", iterations) { _ = try codec.encode(ack) }
        measure("coordinator: ACCEPT read", iterations) { _ = try codec.decode(accept, as: WorkerMessage.self).get() }
        measure("coordinator: COMPLETE read", iterations) { _ = try codec.decode(complete, as: WorkerMessage.self).get() }
        measure("worker: ASSIGN read", iterations) { _ = try codec.decode(assignFrames, as: CoordinatorMessage.self).get() }
        measure("worker: ASSIGN read, spec decoded", iterations) {
            guard case .assign(let read) = try codec.decode(assignFrames, as: CoordinatorMessage.self).get().message
            else { return }
            _ = try read.spec.decode(SegmentWorkOrder.self)
        }
        measure("worker: ACCEPT written", iterations) { _ = try codec.encode(WorkerMessage.accept(Accept(attempt: attempt))) }
        // For scale: Foundation's coders on the same work.
        let encoder = JSONEncoder()
        encoder.outputFormatting = [.sortedKeys, .withoutEscapingSlashes]
        measure("Foundation: work order encoded", iterations) { _ = try encoder.encode(order) }
        measure("Foundation: ACK body written", iterations) {
            _ = try encoder.encode(Ack(attempt: attempt, acknowledges: .complete, outcome: .accepted))
        }
        let specText = try encoder.encode(order)
        measure("Foundation: work order decoded", iterations) {
            _ = try JSONDecoder().decode(SegmentWorkOrder.self, from: specText)
        }
        measure("SpliceJSON: work order decoded", iterations) { _ = try JSON.decode(SegmentWorkOrder.self, from: specText) }
        let tree = try JSONValue(encoding: order)
        measure("SpliceJSON: work order tree written", iterations) { _ = try JSON.encode(tree) }
    }

    nonisolated(unsafe) private static var only: String?

    private static func measure(_ label: String, _ iterations: Int, _ body: () throws -> Void) {
        if let only, !label.contains(only) { return }
        let clock = ContinuousClock()
        var best = Duration.seconds(1_000)
        for _ in 0..<3 {
            let start = clock.now
            for _ in 0..<iterations { try? body() }
            best = min(best, (clock.now - start) / iterations)
        }
        let microseconds = Double(best.components.attoseconds) / 1e12 + Double(best.components.seconds) * 1e6
        print("  " + label.padding(toLength: 48, withPad: " ", startingAt: 0) + String(format: "%7.2f µs", microseconds))
    }

    /// A plan like the cluster benchmark's: H.264, one-second segments.
    private static func samplePlan(segments: Int) throws -> SegmentPlan {
        var specs: [String] = []
        for index in 0..<segments {
            var fields = [#""index": \#(index)"#]
            if index > 0 { fields.append(#""videoStart": {"value": \#(index * 90_000), "timescale": 90000}"#) }
            if index < segments - 1 { fields.append(#""videoEnd": {"value": \#((index + 1) * 90_000), "timescale": 90000}"#) }
            specs.append("{" + fields.joined(separator: ", ") + "}")
        }
        let text = """
            {"id": "\(UUID().uuidString)", "source": "/tmp/splice-bench-cluster/clip-1250s.mp4", "outputFileType": "mp4",
             "optimizesForNetworkUse": false, "metadata": {"major_brand": "isom", "title": "bench"},
             "outputZero": {"value": 0, "timescale": 1}, "assetDuration": {"value": \(segments), "timescale": 1},
             "targetDuration": {"value": 1, "timescale": 1},
             "videoSettings": {"codec": "h264", "preset": "ultrafast"},
             "segments": [\(specs.joined(separator: ", "))]}
            """
        return try JSONDecoder().decode(SegmentPlan.self, from: Data(text.utf8))
    }
}
