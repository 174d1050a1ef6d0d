import Testing
import SpliceConcurrency

/// A deterministic generator so jitter bounds can be checked exactly.
private struct SplitMix: RandomNumberGenerator {
    var state: UInt64
    mutating func next() -> UInt64 {
        state &+= 0x9E37_79B9_7F4A_7C15
        var z = state
        z = (z ^ (z >> 30)) &* 0xBF58_476D_1CE4_E5B9
        z = (z ^ (z >> 27)) &* 0x94D0_49BB_1331_11EB
        return z ^ (z >> 31)
    }
}

@Suite struct BackoffTests {
    @Test func delaysDoubleUpToTheCap() {
        let backoff = Backoff.segmentRetry
        #expect((1...9).map { backoff.nominalDelay(attempt: $0) }
            == [5, 10, 20, 40, 80, 160, 320, 600, 600].map { Duration.seconds($0) })
        #expect(backoff.nominalDelay(attempt: 0) == .seconds(5))
        #expect(backoff.nominalDelay(attempt: 1_000) == .seconds(600), "huge attempts must not overflow")
    }

    @Test func jitterStaysWithinTwentyPercentAndSpreads() {
        var generator = SplitMix(state: 42)
        let delays = (0..<2_000).map { _ in Backoff.segmentRetry.delay(attempt: 3, using: &generator) }
        #expect(delays.allSatisfy { $0 >= .seconds(16) && $0 <= .seconds(24) })
        #expect(delays.min()! < .seconds(17) && delays.max()! > .seconds(23), "jitter should cover the range")
        #expect(Set(delays).count > 1_900, "delays must not repeat in lockstep")
    }
}
