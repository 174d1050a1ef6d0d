import Foundation
import SpliceCore
import SpliceJSON
import SpliceTestSupport
import SpliceWire
import Testing
@testable import SpliceCoordinator


// The session table's indexes (who holds a token, which attempts run a segment or a job) are what
// keep the coordinator's cost per segment flat with the number of workers; here they are checked
// against the sessions themselves after every event of long random runs.

/// A small deterministic generator (SplitMix64), so a failing run can be replayed from its seed.
private struct SplitMix64: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite("Coordinator session table")
struct SessionTableTests {
    private static func peer(_ number: Int) -> WirePeer {
        WirePeer(routingID: RoutingID("w\(number)"), publicKey: try! CurvePublicKey(bytes: Data(repeating: UInt8(number + 1), count: 32)))
    }

    private static func attempt(job: Int, segment: Int, number: Int) -> SegmentAttempt {
        SegmentAttempt(job: .numbered(job), segment: segment, attempt: number,
                       leaseToken: .numbered(job * 1_000_000 + segment * 100 + number))
    }

    @Test("the indexes say what the sessions hold after every event of a random run", arguments: [1, 2, 3, 4, 5] as [UInt64])
    func indexesFollowTheSessions(seed: UInt64) {
        var random = SplitMix64(state: seed)
        let policy = CoordinatorPolicy(heartbeatInterval: .seconds(1), heartbeatLiveness: 3, leaseDuration: .seconds(30),
                                       backupMinimumRuntime: .milliseconds(100))
        var machine = CoordinatorStateMachine(policy: policy, sessionName: "random")
        var now = ContinuousClock.now
        var nextSegment = 0
        var running: [(peer: WirePeer, attempt: SegmentAttempt)] = []
        var reported: [(peer: WirePeer, attempt: SegmentAttempt)] = []
        var checked = 0

        func check(_ step: String) {
            checked += 1
            #expect(machine.sessions.indexesAreConsistent, "seed \(seed), step \(checked): \(step)")
        }

        for _ in 0..<3_000 {
            now += .milliseconds(Int.random(in: 1...400, using: &random))
            let worker = Self.peer(Int.random(in: 0..<6, using: &random))
            let identity = WorkerIdentity(peer: worker)!
            switch Int.random(in: 0..<10, using: &random) {
            case 0:
                // (Re)register, sometimes claiming to run what it was assigned.
                let mine = running.filter { $0.peer == worker }.map(\.attempt)
                let runs = Bool.random(using: &random) ? mine : []
                _ = machine.handle(.received(.hello(Hello(workerName: "w", slots: Int.random(in: 1...3, using: &random),
                                                          encoders: [], running: runs)), from: worker), at: now)
                _ = machine.handle(.workerRegistered(identity, workerID: UUID()), at: now)
                running.removeAll { $0.peer == worker && !runs.contains($0.attempt) }
                check("hello")
            case 1, 2:
                // A claim that grants some of what was asked.
                _ = machine.handle(.workAvailable, at: now)
                guard let claim = machine.dispatch(at: now).compactMap(\.claim).first else { continue }
                var granted: [WorkerIdentity: [Assignment]] = [:]
                for demand in claim.demands {
                    let count = Int.random(in: 0...demand.limit, using: &random)
                    granted[demand.worker] = (0..<count).map { _ in
                        nextSegment += 1
                        let attempt = Self.attempt(job: 1 + nextSegment % 3, segment: nextSegment, number: 1)
                        return Assignment(attempt: attempt, outputPath: "/s", spec: JSONPayload(.object([:])), cost: 10)
                    }
                }
                let directives = machine.handle(.claimed(granted, demands: claim.demands, generation: claim.generation), at: now)
                for case .send(.assign(let assign), let to, _) in directives { running.append((to, assign.attempt)) }
                check("claim")
            case 3, 4:
                guard let index = running.indices.randomElement(using: &random) else { continue }
                let (peer, attempt) = running.remove(at: index)
                let result = Complete(attempt: attempt, outputPath: "/s", checksum: .filled(1), sizeBytes: 1, encodeMilliseconds: 1)
                _ = machine.handle(.received(.complete(result), from: peer), at: now)
                reported.append((peer, attempt))
                check("complete")
            case 5:
                guard let index = reported.indices.randomElement(using: &random) else { continue }
                let (_, attempt) = reported.remove(at: index)
                let result = WorkerResult.complete(Complete(attempt: attempt, outputPath: "/s", checksum: .filled(1),
                                                            sizeBytes: 1, encodeMilliseconds: 1))
                let outcome: ResultOutcome = Bool.random(using: &random) ? .completed(jobReadyToStitch: false) : .staleLease
                _ = machine.handle(.resultCommitted(result, outcome), at: now)
                check("committed")
            case 6:
                guard let index = running.indices.randomElement(using: &random) else { continue }
                let (_, attempt) = running.remove(at: index)
                _ = machine.handle(.leasesTakenBack([TakenBackLease(job: attempt.job, leaseToken: attempt.leaseToken,
                                                                   jobFailed: Bool.random(using: &random))]), at: now)
                check("taken back")
            case 7:
                let job = JobID.numbered(Int.random(in: 1...3, using: &random))
                _ = machine.handle(.jobEnded(job, .jobCancelled), at: now)
                running.removeAll { $0.attempt.job == job }
                check("job ended")
            case 8:
                _ = machine.handle(.received(.disconnect(Disconnect(reason: .shutdown, detail: "")), from: worker), at: now)
                running.removeAll { $0.peer == worker }
                check("disconnect")
            default:
                _ = machine.handle(.tick, at: now)
                _ = machine.dispatch(at: now)
                check("tick")
            }
        }
        #expect(checked > 1_000, "the run exercised too little")
    }
}
