import Foundation
import SpliceStore
import SpliceTestSupport
import Testing

@Suite struct ListenerTests {
    @Test func createdJobsAndNewSegmentsWakeTheListener() async throws {
        let store = try await StoreFixture()
        let listener = PostgresListener(configuration: store.configuration,
                                        channels: [JobRepository.Channel.jobs, JobRepository.Channel.segments])
        defer { listener.stop() }
        var wakeUps = listener.wakeUps.makeAsyncIterator()
        #expect(await wakeUps.next() == PostgresListener.WakeUp(channel: nil), "first wake-up follows connecting")

        try await store.makeRunningJob(segments: 2)
        #expect(await wakeUps.next()?.channel == JobRepository.Channel.jobs)
        #expect(await wakeUps.next()?.channel == JobRepository.Channel.segments)
    }
}
