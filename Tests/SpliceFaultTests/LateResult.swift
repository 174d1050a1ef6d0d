import Foundation
import SpliceTestSupport
import SpliceWire
import SpliceConcurrency

/// Delivers an attempt's COMPLETE late, the way a worker that was paused past its lease would
/// after it resumed: it says HELLO listing the finished result (what a worker does when it finds
/// its session gone), waits for the coordinator's ACK of that result, and leaves with
/// DISCONNECT `shutdown`. The coordinator must answer `stale` and commit nothing.
enum LateResult {
    /// The ACK outcome the coordinator gave, or nil if it gave none within `timeout`.
    static func deliver(_ complete: Complete, to endpoint: String, timeout: Duration = .seconds(60)) async throws
        -> Ack.Outcome?
    {
        let context = try WireContext()
        let wire = try await WireEndpoint.connect(endpoint, type: .dealer, context: context,
                                                  options: .dealer(immediate: false))
        let worker = WorkerEndpoint(wire)
        // No slots to spare in spirit, but HELLO must offer one: ASSIGNs that arrive are refused.
        let hello = Hello(workerName: "late-result", slots: 1, encoders: ["libx264"], finished: [complete],
                          software: "fault-suite")
        let deadline = ContinuousClock.now + timeout
        var outcome: Ack.Outcome?
        var lastHello = ContinuousClock.now - .seconds(10)
        while outcome == nil, ContinuousClock.now < deadline {
            if ContinuousClock.now - lastHello >= .seconds(1) {
                try await worker.send(.hello(hello))
                lastHello = .now
            }
            let received = await withDeadline(.milliseconds(250)) { await worker.receiveMessage() }
            switch received?.0.message {
            case .ack(let ack) where ack.attempt == complete.attempt && ack.acknowledges == .complete:
                outcome = ack.outcome
            case .assign(let assign):
                try await worker.send(.fail(Fail(attempt: assign.attempt, code: .noFreeSlot,
                                                 reason: "a late result, not a worker", retryable: true)))
            default:
                break
            }
        }
        try? await worker.send(.disconnect(Disconnect(reason: .shutdown, detail: "late result delivered")))
        try? await Task.sleep(for: .milliseconds(200))
        await worker.close(linger: .milliseconds(500))
        await context.terminate()
        return outcome
    }
}
