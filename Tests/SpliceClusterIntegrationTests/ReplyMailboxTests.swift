import Foundation
@testable import SpliceClient
import SpliceCore
import SpliceWire
import Testing

/// A call's mailbox: a reply that arrives as an attempt's deadline passes is either that
/// attempt's answer or the next one's — never lost (a client whose coordinator answers only one
/// of its sends would otherwise wait out its whole timeout).
@Suite("A call's reply mailbox")
struct ReplyMailboxTests {
    @Test("a reply that arrives as the deadline passes is kept for the next wait")
    func replyAtTheDeadline() async throws {
        let reply = APIReply.status(.scripted(.numbered(1), .running))
        var lost = 0, onTime = 0
        for round in 0..<400 {
            let mailbox = ReplyMailbox()
            // Post within a few hundred microseconds of the 1 ms deadline, on another thread.
            let delay = UInt32(700 + (round % 7) * 100)
            let poster = Thread {
                usleep(delay)
                mailbox.post(.success(reply))
            }
            poster.start()
            if await mailbox.next(within: .milliseconds(1)) != nil {
                onTime += 1
            } else if await mailbox.next(within: .seconds(5)) == nil {
                lost += 1
            }
        }
        #expect(lost == 0, "\(lost) of 400 replies lost (\(onTime) came within their deadline)")
    }

    @Test("a wait ends at its deadline, and a cancelled wait at once")
    func deadlinesAndCancellation() async throws {
        let mailbox = ReplyMailbox()
        let clock = ContinuousClock()
        let start = clock.now
        #expect(await mailbox.next(within: .milliseconds(50)) == nil)
        #expect(clock.now - start >= .milliseconds(50))
        let waiting = Task { await mailbox.next(within: .seconds(30)) }
        try await Task.sleep(for: .milliseconds(20))
        waiting.cancel()
        let cancelled = clock.now
        #expect(await waiting.value == nil)
        #expect(clock.now - cancelled < .seconds(5))
        // Queued replies come out in order, without waiting.
        mailbox.post(.success(.status(.scripted(.numbered(1), .running))))
        mailbox.post(.success(.status(.scripted(.numbered(2), .running))))
        guard case .success(.status(let first))? = await mailbox.next(within: .zero),
              case .success(.status(let second))? = await mailbox.next(within: .zero) else {
            Issue.record("the queued replies did not come out")
            return
        }
        #expect(first.job == .numbered(1) && second.job == .numbered(2))
    }
}
